"""Pages that hold under a person's hands, under `make run`'s settings (DEBUG on) and production's.

A refused submit keeps the page; an export downloads the file import reads back; the Tools page
keeps what is being typed across its refreshes; an auditor's rule page offers nothing to change.
"""

from __future__ import annotations

import json

import pytest

from firewall.models import Policy, Rule
from tests.browser.conftest import sign_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def policy(editor, organisation, actor_for):  # noqa: ANN001, ANN201
    from firewall import services

    policy = services.policy_create(actor=actor_for(editor, organisation), name="production")
    services.rule_create(
        actor=actor_for(editor, organisation),
        policy=policy,
        data={
            "name": "no rm",
            "tool_name_glob": "shell.*",
            "args_match": [{"path": "$.command", "op": "regex", "value": "rm\\s+-rf"}],
            "verdict": "deny",
        },
    )
    services.policy_publish(actor=actor_for(editor, organisation), policy=policy)
    return policy


def test_a_refused_rule_save_keeps_the_page(page, debug, policy, editor):
    sign_in(page, "eve-editor", PASSWORD)
    rule = Rule.objects.get(name="no rm")
    page.goto(f"/firewall/rules/{rule.pk}/")
    page.fill('input[name="clause-0-path"]', "not a path")
    page.click("#rule-save")
    page.wait_for_selector("#rule-errors")
    assert page.locator("header.top nav").count() == 1
    assert page.locator('link[rel="stylesheet"]').count() == 1
    assert "args_match[0].path" in page.inner_text("#rule-errors")


def test_a_refused_settings_save_keeps_the_page(page, debug, editor):
    sign_in(page, "eve-editor", PASSWORD)
    page.goto("/settings/")
    page.fill("#id_approval_timeout_minutes", "0")
    page.click("#settings-save")
    page.wait_for_selector('.field-error[data-field="approval_timeout_minutes"]')
    assert page.locator("header.top nav").count() == 1
    assert page.locator("#settings-saved").count() == 0


def test_a_submit_refused_for_the_role_keeps_the_form_and_says_why(page, debug, editor):
    from console.models import Membership

    sign_in(page, "eve-editor", PASSWORD)
    page.goto("/settings/")
    Membership.objects.filter(user=editor).update(role="auditor")  # while the page is open
    page.fill("#id_approval_timeout_minutes", "21")
    page.click("#settings-save")
    reason = page.wait_for_selector("#refused-reason")
    assert "the auditor role cannot do" in reason.inner_text()
    assert page.locator("header.top nav").count() == 1
    assert page.input_value("#id_approval_timeout_minutes") == "21"  # the form stays as typed
    assert "403 Forbidden" not in page.inner_text("main")


def test_export_then_import_round_trips_in_the_browser(page, debug, policy, editor, tmp_path):
    sign_in(page, "eve-editor", PASSWORD)
    page.goto(f"/firewall/{policy.pk}/")
    with page.expect_download() as download:
        page.click("#export-json")
    path = tmp_path / download.value.suggested_filename
    download.value.save_as(path)
    data = json.loads(path.read_text())
    assert path.name == "production.json"
    assert [r["name"] for r in data["rules"]] == ["no rm"]
    page.goto("/firewall/")
    page.set_input_files("#import-file", str(path))
    page.fill("#import-name", "production copy")
    page.click("#import-form button[type=submit]")
    page.wait_for_url("**/firewall/*/")
    copy = Policy.objects.get(name="production copy")
    assert [r.spec["args_match"] for r in copy.rules.all()] == [
        [{"path": "$.command", "op": "regex", "value": "rm\\s+-rf"}]
    ]


def test_the_tools_page_keeps_typed_text_across_refreshes(page, debug, editor, organisation):
    from guard.counters import count

    count(organisation, "refund_card", "effects")
    sign_in(page, "eve-editor", PASSWORD)
    page.goto("/tools/")
    field = page.locator('#writes input[name="tool"][required]')
    field.fill("refund_ca")
    field.focus()
    with page.expect_response(lambda r: r.url.endswith("/tools/") and r.request.method == "GET"):
        pass  # the panel's next refresh (every 5 s)
    page.wait_for_timeout(200)
    assert field.input_value() == "refund_ca"
    assert page.evaluate("document.activeElement.name") == "tool"


def test_a_switched_off_tool_is_named_on_the_writes_card(page, editor, organisation):
    sign_in(page, "eve-editor", PASSWORD)
    page.goto("/tools/")
    page.fill('#writes input[name="tool"][required]', "refund_card")
    page.click("#writes form:has(input[required]) button")
    page.wait_for_selector("#writes-state")
    text = page.inner_text("#writes-state")
    assert "except those of refund_card" in text
    assert "Writes of every tool may run" not in text


def test_an_auditors_rule_page_has_no_form_controls(page, debug, policy, auditor):
    sign_in(page, "aud-auditor", PASSWORD)
    rule = Rule.objects.get(name="no rm")
    page.goto(f"/firewall/rules/{rule.pk}/")
    assert (
        page.locator("main form, main input, main select, main textarea, main button").count() == 0
    )
    assert "shell.* where $.command ~ rm\\s+-rf → deny" in page.inner_text("#rule-readonly")
