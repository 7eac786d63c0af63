"""The rule editor's pages: the structured form, inline errors from the validator, order, try a call."""

from __future__ import annotations

import json

import pytest

from console.models import AuditRow
from firewall.forms import RuleForm, parse_value
from firewall.models import Policy, Rule

pytestmark = pytest.mark.django_db


@pytest.fixture
def policy(editor, client_for):
    response = client_for(editor).post(
        "/firewall/", {"name": "production", "default_verdict": "allow"}
    )
    assert response.status_code == 302
    return Policy.objects.get(name="production")


def _rule_post(**fields):
    base = {
        "name": "no internal",
        "priority": "",
        "enabled": "on",
        "mode": "enforce",
        "stage": "tool_call",
        "tool_name_glob": "http.*",
        "skill_glob": "",
        "verdict": "deny",
        "notes": "",
        "clause_count": "1",
        "clause-0-path": "$.ip",
        "clause-0-op": "cidr",
        "clause-0-value": "10.0.0.0/8",
        "step_count": "0",
        "action": "save",
    }
    base.update(fields)
    return base


def test_an_invalid_cidr_is_shown_on_its_clause_and_nothing_is_saved(policy, editor, client_for):
    before = AuditRow.objects.count()
    response = client_for(editor).post(
        f"/firewall/{policy.pk}/rules/new", _rule_post(**{"clause-0-value": "10.0.0.300/8"})
    )
    assert response.status_code == 400
    assert b"args_match[0].value: not a valid CIDR" in response.content
    assert b'class="clause-errors"' in response.content
    assert b'value="10.0.0.300/8"' in response.content  # what was typed stays in the form
    assert not Rule.objects.exists()
    assert AuditRow.objects.count() == before


def test_a_valid_rule_is_saved_after_the_others(policy, editor, client_for):
    client = client_for(editor)
    assert client.post(f"/firewall/{policy.pk}/rules/new", _rule_post()).status_code == 302
    assert (
        client.post(f"/firewall/{policy.pk}/rules/new", _rule_post(name="second")).status_code
        == 302
    )
    rules = list(policy.rules.order_by("priority"))
    assert [(r.name, r.priority) for r in rules] == [("no internal", 10), ("second", 20)]
    assert rules[0].spec["args_match"] == [{"path": "$.ip", "op": "cidr", "value": "10.0.0.0/8"}]


def test_adding_a_clause_row_saves_nothing(policy, editor, client_for):
    response = client_for(editor).post(
        f"/firewall/{policy.pk}/rules/new", _rule_post(action="add_clause"), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert response.content.count(b'class="clause-row"') == 2
    assert b"<html" not in response.content
    assert not Rule.objects.exists()


def test_the_form_shows_only_the_fields_the_verdict_uses(policy, editor, client_for):
    client = client_for(editor)
    plain = client.get(f"/firewall/{policy.pk}/rules/new").content
    assert b'id="sanitize-fields"' not in plain and b'id="cap-fields"' not in plain
    sanitize = client.post(
        f"/firewall/{policy.pk}/rules/new", _rule_post(verdict="sanitize", action="refresh")
    ).content
    assert b'id="sanitize-fields"' in sanitize and b'id="cap-fields"' not in sanitize
    egress = client.post(
        f"/firewall/{policy.pk}/rules/new", _rule_post(stage="egress", action="refresh")
    ).content
    assert b'id="egress-fields"' in egress


def test_an_empty_sanitizer_is_refused(policy, editor, client_for):
    response = client_for(editor).post(
        f"/firewall/{policy.pk}/rules/new", _rule_post(verdict="sanitize")
    )
    assert response.status_code == 400
    assert b"sanitize" in response.content
    assert not Rule.objects.exists()


def test_moving_a_rule_up_with_htmx_returns_the_table(policy, editor, client_for):
    client = client_for(editor)
    client.post(f"/firewall/{policy.pk}/rules/new", _rule_post())
    client.post(f"/firewall/{policy.pk}/rules/new", _rule_post(name="second"))
    second = Rule.objects.get(name="second")
    response = client.post(
        f"/firewall/rules/{second.pk}/move", {"direction": "up"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert response.content.strip().startswith(b'<div id="rule-table">')
    assert [r.name for r in policy.rules.order_by("priority", "id")] == ["second", "no internal"]


def test_try_a_call_shows_the_rule_and_records_nothing(policy, editor, client_for):
    from console.models import Event

    client = client_for(editor)
    client.post(f"/firewall/{policy.pk}/rules/new", _rule_post())
    call = {"tool": "http.get", "arguments": {"ip": "10.1.2.3"}}
    response = client.post(
        f"/firewall/{policy.pk}/try", {"call": json.dumps(call)}, HTTP_HX_REQUEST="true"
    )
    assert b'id="try-rule">no internal<' in response.content
    assert b">deny<" in response.content
    assert not Event.objects.exists()
    bad = client.post(f"/firewall/{policy.pk}/try", {"call": '{"tool": '}, HTTP_HX_REQUEST="true")
    assert b"call: line 1, column 10" in bad.content


def test_import_errors_name_paths_and_store_nothing(editor, client_for):
    body = {
        "name": "imported",
        "default_verdict": "allow",
        "rules": [
            {
                "priority": 1,
                "name": "r",
                "verdict": "deny",
                "args_match": [{"path": "$.a", "op": "in", "value": "x"}],
            }
        ],
    }
    response = client_for(editor).post("/firewall/import", {"json": json.dumps(body)})
    assert response.status_code == 400
    assert b"rules[0].args_match[0].value" in response.content
    assert not Policy.objects.filter(name="imported").exists()
    broken = client_for(editor).post("/firewall/import", {"json": "{\n  nope"})
    assert b"the pasted JSON: line 2, column 3" in broken.content


def test_an_auditor_reads_the_editor_but_cannot_post(policy, auditor, client_for):
    client = client_for(auditor)
    assert client.get(f"/firewall/{policy.pk}/").status_code == 200
    assert client.post(f"/firewall/{policy.pk}/rules/new", _rule_post()).status_code == 403
    assert client.post("/firewall/", {"name": "x"}).status_code == 403


def test_the_form_round_trips_a_rule():
    spec = {
        "priority": 50,
        "name": "exfil chain",
        "enabled": False,
        "mode": "shadow",
        "tool_name_glob": "",
        "verdict": "audit",
        "skill_glob": "community.*",
        "args_match": [
            {"path": "$.n", "op": "gt", "value": 5},
            {"path": "$.tags", "op": "in", "value": ["a", "b"]},
            {"path": "$.code", "op": "eq", "value": "10"},
        ],
        "sequence": {
            "steps": [
                {"tool_glob": "crm.read", "min_count": 50},
                {"tool_glob": "*", "min_count": 1, "egress": True},
            ],
            "window_seconds": 600,
            "on_match": ["hold_session", "notify"],
        },
        "notes": "n",
    }
    form = RuleForm.from_spec(spec)
    post = _as_post(form)
    assert RuleForm.from_post(post).to_spec() == spec


def test_clause_values_read_as_json_when_they_are_json():
    assert parse_value("10") == 10
    assert parse_value('"10"') == "10"
    assert parse_value('["a", "b"]') == ["a", "b"]
    assert parse_value("rm\\s+-rf") == "rm\\s+-rf"


def _as_post(form: RuleForm):
    from django.http import QueryDict

    q = QueryDict(mutable=True)
    v = form.values
    for key in (
        "name",
        "priority",
        "mode",
        "stage",
        "tool_name_glob",
        "skill_glob",
        "verdict",
        "notes",
        "sanitize_patterns",
        "egress_allow",
        "egress_deny",
        "cap_cost_cents",
        "window_seconds",
    ):
        q[key] = v[key]
    if v["enabled"]:
        q["enabled"] = "on"
    q.setlist("sanitize_presets", v["sanitize_presets"])
    q.setlist("on_match", v["on_match"])
    q["clause_count"] = str(len(form.clauses))
    for i, c in enumerate(form.clauses):
        for name in ("path", "op", "value"):
            q[f"clause-{i}-{name}"] = c[name]
    q["step_count"] = str(len(form.steps))
    for i, s in enumerate(form.steps):
        q[f"step-{i}-tool_glob"] = s["tool_glob"]
        q[f"step-{i}-min_count"] = s["min_count"]
        if s["egress"]:
            q[f"step-{i}-egress"] = "on"
    return q


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"priority": "9" * 5000}, "priority"),  # int() refuses past 4,300 digits: was a 500
        ({"clause-0-op": "in", "clause-0-value": "[" * 100_000}, "args_match[0].value"),
        ({"clause-0-op": "eq", "clause-0-value": "[" * 100 + "]" * 100}, "args_match[0].value"),
        ({"clause-0-op": "eq", "clause-0-value": '"a\\u0000b"'}, "args_match[0].value"),
        ({"verdict": "cap_cost", "cap_cost_cents": "9" * 5000}, "cap_cost_cents"),
        ({"step_count": "1", "step-0-tool_glob": "a.*", "step-0-min_count": "9" * 5000},
         "sequence.steps[0].min_count"),
    ],
)  # fmt: skip
def test_a_malformed_rule_field_is_refused_on_its_field_never_a_500(
    fields, field, policy, editor, client_for
):
    client = client_for(editor)
    client.raise_request_exception = False
    response = client.post(f"/firewall/{policy.pk}/rules/new", _rule_post(**fields))
    assert response.status_code == 400
    assert field.encode() in response.content  # the field, or a path inside its value
    assert not Rule.objects.exists()


@pytest.mark.parametrize("action", ["remove_clause:\u00b2", "remove_clause:" + "9" * 5000])
def test_a_row_button_with_a_malformed_index_changes_nothing(action, policy, editor, client_for):
    client = client_for(editor)
    client.raise_request_exception = False
    response = client.post(f"/firewall/{policy.pk}/rules/new", _rule_post(action=action))
    assert response.status_code == 200
    assert b'name="clause-0-path"' in response.content


def test_a_place_that_is_a_digit_only_to_unicode_is_refused_not_a_500(policy, editor, client_for):
    client = client_for(editor)
    client.raise_request_exception = False
    client.post(f"/firewall/{policy.pk}/rules/new", _rule_post())
    rule = Rule.objects.get()
    response = client.post(f"/firewall/rules/{rule.pk}/move", {"to": "\u00b2"})  # '²'.isdigit()
    assert response.status_code == 400
    assert b"a place in the order: a whole number" in response.content


@pytest.mark.parametrize("ref", ["\u00b2", "9" * 5000])
def test_a_version_reference_that_is_no_number_says_what_a_reference_is(
    ref, policy, editor, client_for
):
    client = client_for(editor)
    response = client.get(f"/firewall/{policy.pk}/diff", {"old": ref})
    assert response.status_code == 400
    assert b"a version&#x27;s number, or `draft`" in response.content
    exported = client.get(f"/firewall/{policy.pk}/export.json", {"version": ref})
    assert exported.status_code == 400
    assert exported.json() == {"version": ["a version's number, or `draft`"]}
