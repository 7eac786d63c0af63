"""The rules table reordered by keyboard and by drag, under `make run`'s settings (DEBUG on) and
production's: a moved rule takes a priority between its new neighbours', the others keep theirs,
and the page says what changed."""

from __future__ import annotations

import pytest

from firewall.models import Rule
from tests.browser.conftest import sign_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _order(page) -> list[str]:  # noqa: ANN001
    return page.locator("tr.rule-row").evaluate_all("rows => rows.map(r => r.dataset.rule)")


def test_a_rule_moved_by_keyboard_and_by_drag_keeps_the_others_priorities(
    page, debug, editor, organisation, actor_for
):
    from firewall import services

    actor = actor_for(editor, organisation)
    policy = services.policy_create(actor=actor, name="production")
    for name, priority in (("a", 10), ("b", 20), ("c", 30), ("d", 40)):
        services.rule_create(
            actor=actor,
            policy=policy,
            data={
                "name": name,
                "priority": priority,
                "tool_name_glob": f"{name}.*",
                "verdict": "deny",
            },
        )
    sign_in(page, "eve-editor", PASSWORD)
    page.goto(f"/firewall/{policy.pk}/")

    page.locator('tr.rule-row[data-rule="c"] .drag-handle').focus()
    page.keyboard.press("ArrowUp")
    page.wait_for_selector("#rule-moved")
    assert _order(page) == ["a", "c", "b", "d"]
    assert page.inner_text("#rule-moved") == (
        "Moved c: its priority went from 30 to 15; no other rule changed."
    )
    # focus stays on the moved rule's handle, so the arrow keys go on moving it
    assert page.evaluate("document.activeElement.closest('tr').dataset.rule") == "c"

    page.locator('tr.rule-row[data-rule="d"] .drag-handle').drag_to(
        page.locator('tr.rule-row[data-rule="a"]')
    )
    page.wait_for_function("document.querySelector('tr.rule-row').dataset.rule === 'd'")
    assert _order(page) == ["d", "a", "c", "b"]
    assert "Moved d: its priority went from 40 to 0; no other rule changed." in page.inner_text(
        "#rule-moved"
    )
    assert {r.name: r.priority for r in Rule.objects.filter(policy=policy)} == {
        "d": 0,
        "a": 10,
        "c": 15,
        "b": 20,
    }
