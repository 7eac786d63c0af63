"""An editor builds a firewall rule in Chromium, fixes an invalid CIDR, reorders it, tries a call."""

from __future__ import annotations

import json

import pytest

from console.access import Actor
from firewall import services
from firewall.models import Rule
from tests.browser.conftest import sign_in, sign_out
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_editor_builds_reorders_and_tries_a_rule(page, editor, auditor, organisation):
    actor = Actor(
        organisation=organisation, role="editor", label="user:eve-editor", user_id=editor.pk
    )
    policy = services.policy_create(actor=actor, name="production")
    services.rule_create(
        actor=actor,
        policy=policy,
        data={"name": "allow http", "priority": 10, "tool_name_glob": "http.*", "verdict": "allow"},
    )
    services.policy_publish(actor=actor, policy=policy)

    sign_in(page, "eve-editor", PASSWORD)
    page.goto(f"/firewall/{policy.pk}/")
    page.click("#add-rule")
    page.fill("#r-name", "no internal hosts")
    page.fill("#r-tool", "http.*")
    page.click("#add-clause")
    page.wait_for_selector("tr.clause-row")
    page.fill("input[name=clause-0-path]", "$.ip")
    page.select_option("select[name=clause-0-op]", "cidr")
    page.fill("input[name=clause-0-value]", "10.0.0.300/8")
    page.select_option("#r-verdict", "deny")
    page.wait_for_load_state("networkidle")
    page.click("#rule-save")
    error = page.wait_for_selector('#rule-errors li[data-path="args_match[0].value"]')
    assert "not a valid CIDR" in error.inner_text()
    assert not Rule.objects.filter(name="no internal hosts").exists()

    page.fill("input[name=clause-0-value]", "10.0.0.0/8")
    page.click("#rule-save")
    page.wait_for_url(f"**/firewall/{policy.pk}/")
    names = page.locator("tr.rule-row").evaluate_all("rows => rows.map(r => r.dataset.rule)")
    assert names == ["allow http", "no internal hosts"]

    page.click('button[aria-label="Move no internal hosts up"]')
    page.wait_for_function(
        "document.querySelector('tr.rule-row').dataset.rule === 'no internal hosts'"
    )

    page.fill("#try-call", json.dumps({"tool": "http.get", "arguments": {"ip": "10.9.8.7"}}))
    page.click("#try-submit")
    page.wait_for_selector("#try-rule")
    assert page.inner_text("#try-rule") == "no internal hosts"
    assert page.inner_text("#try-verdict") == "deny"
    # the arguments as highlighted JSON, never Python's repr
    assert json.loads(page.inner_text("#try-arguments")) == {"ip": "10.9.8.7"}
    assert page.inner_text("#try-arguments .j-key") == '"ip"'
    sign_out(page)

    sign_in(page, "aud-auditor", PASSWORD)
    page.goto("/audit/?action=firewall.")
    actions = page.locator("tr.audit-row").evaluate_all("rows => rows.map(r => r.dataset.action)")
    assert "firewall.rule.create" in actions and "firewall.policy.reorder" in actions
    assert "10.0.0.0/8" not in page.inner_text("#audit-rows")
