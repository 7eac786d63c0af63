"""What issue #19 found broken under a person's hands, held in Chromium under `make run`'s settings
(DEBUG on) and production's: Settings saved by an editor, egress lists, Try a call, presets applied
twice, a sequence rule's matches, and a refused proof submit that keeps the page."""

from __future__ import annotations

import json

import pytest

from firewall.models import Rule
from tests.browser.conftest import sign_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _errors(page) -> list[str]:  # noqa: ANN001
    return page.locator("main .error").all_inner_texts()


def test_an_editor_saves_settings_without_a_licence_error_or_a_stale_saved(page, debug, editor):
    sign_in(page, "eve-editor", PASSWORD)
    page.goto("/settings/")
    page.fill("#id_approval_timeout_minutes", "20")
    page.click("#settings-save")
    page.wait_for_selector("#settings-saved")
    assert not [e for e in _errors(page) if "licence" in e]  # the licence was not touched
    said = []
    for value in ("-5", "0"):
        page.fill("#id_approval_timeout_minutes", value)
        page.click("#settings-save")
        page.wait_for_selector('.field-error[data-field="approval_timeout_minutes"]')
        assert page.locator("#settings-saved").count() == 0  # no old "Saved." above the error
        said.append(page.inner_text('.field-error[data-field="approval_timeout_minutes"]'))
    assert said[0] == said[1] and "1" in said[0]  # one limit, the same for -5 and for 0
    assert page.locator("header.top nav").count() == 1


def test_the_policy_page_refuses_bad_addresses_and_fields_and_adds_a_preset_once(
    page, debug, editor, organisation, actor_for
):
    from firewall import services
    from tests.firewall.test_sequences import EXFIL, _chain, drain_all

    actor = actor_for(editor, organisation)
    policy = services.policy_create(actor=actor, name="production")
    services.rule_create(actor=actor, policy=policy, data=EXFIL)
    services.policy_publish(actor=actor, policy=policy)
    _chain(actor, "s1")
    _chain(actor, "s2")
    drain_all()
    sign_in(page, "eve-editor", PASSWORD)

    # a sequence rule's raised alerts are its matches
    page.goto(f"/firewall/{policy.pk}/")
    row = page.locator('tr.rule-row[data-rule="exfil chain"]').inner_text()
    assert "2 / 2" in row

    # an egress list refuses an address that is no address, as a host name too
    page.goto(f"/firewall/{policy.pk}/rules/new")
    page.fill("#r-name", "no lan")
    page.select_option("#r-stage", "egress")
    page.wait_for_selector("#r-deny")
    page.fill("#r-deny", "192.168.1.300\n999.1.1.1")
    page.click("#rule-save")
    page.wait_for_selector("#rule-errors")
    assert "is not a valid IP address" in page.inner_text("#rule-errors")
    assert not Rule.objects.filter(name="no lan").exists()

    # Try a call refuses a misspelled field rather than answering the default
    page.goto(f"/firewall/{policy.pk}/")
    page.fill("#try-call", json.dumps({"tool": "http.get", "stge": "egress"}))
    page.click("#try-submit")
    page.wait_for_selector("#try-result .error")
    assert "stge: not a field of a call" in page.inner_text("#try-result")
    assert page.locator("#try-verdict").count() == 0

    # a preset is previewed as its rules, added once, and a second time adds nothing
    page.select_option("#preset-choice", "block_ssrf_egress")
    page.click("#preset-preview-button")
    page.wait_for_selector("#preset-add")
    previewed = page.locator("li.preset-rule").count()
    page.click("#preset-add")
    page.wait_for_url(f"**/firewall/{policy.pk}/")
    added = Rule.objects.filter(policy=policy).count() - 1
    assert added == previewed
    page.select_option("#preset-choice", "block_ssrf_egress")
    page.click("#preset-preview-button")
    page.wait_for_selector("#preset-nothing")
    assert not [n for n in Rule.objects.values_list("name", flat=True) if n.endswith("(2)")]


def test_a_refused_proof_submit_keeps_the_page(page, debug, editor):
    sign_in(page, "eve-editor", PASSWORD)
    page.goto("/proofs/")
    page.fill("#pf-steps", "many")
    page.click("#proof-submit")
    page.wait_for_selector("#form-errors")
    assert page.locator("header.top nav").count() == 1
    assert page.locator('link[rel="stylesheet"]').count() == 1
    assert "session_steps" in page.inner_text("#form-errors")
