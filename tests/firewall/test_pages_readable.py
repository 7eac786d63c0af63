"""The rule editor as each role meets it: read-only for readers, rules said in one line, export
that import reads back, presets that do not repeat, order that keeps priorities."""

from __future__ import annotations

import json
import re

import pytest

from console.models import AuditRow
from firewall import display
from firewall.models import Policy, Rule
from tests.firewall.test_pages import _rule_post

pytestmark = pytest.mark.django_db

FORM_CONTROLS = re.compile(rb"<(form|input|select|textarea|button)\b")


@pytest.fixture
def policy(editor, client_for):
    client_for(editor).post("/firewall/", {"name": "production", "default_verdict": "allow"})
    return Policy.objects.get(name="production")


@pytest.fixture
def rule(policy, editor, client_for):
    client_for(editor).post(f"/firewall/{policy.pk}/rules/new", _rule_post())
    assert client_for(editor).post(f"/firewall/{policy.pk}/publish").status_code == 302
    return Rule.objects.get(name="no internal")


def test_an_auditors_rule_page_has_no_form_controls(rule, auditor, client_for):
    page = client_for(auditor).get(f"/firewall/rules/{rule.pk}/")
    assert page.status_code == 200
    main = page.content.split(b"<main>", 1)[1]
    assert not FORM_CONTROLS.search(main), FORM_CONTROLS.search(main)
    assert b"http.* at tool_call where $.ip in 10.0.0.0/8 \xe2\x86\x92 deny" in main


def test_an_editors_rule_page_is_the_form(rule, editor, client_for):
    page = client_for(editor).get(f"/firewall/rules/{rule.pk}/")
    assert b'id="rule-form"' in page.content
    assert b"Delete this rule" in page.content


def test_the_rules_table_says_each_rules_conditions_mode_and_matches(
    rule, editor, auditor, client_for
):
    from console.access import Actor
    from firewall import services

    actor = Actor(
        organisation=rule.organisation, role="editor", label="user:eve-editor", user_id=editor.pk
    )
    services.rule_create(
        actor=actor,
        policy=rule.policy,
        data={
            "name": "watch",
            "priority": 1,
            "tool_name_glob": "http.*",
            "verdict": "deny",
            "mode": "shadow",
        },
    )
    services.policy_publish(actor=actor, policy=rule.policy)
    for ip in ("10.1.2.3", "10.4.5.6", "192.0.2.1"):
        services.firewall_evaluate(actor=actor, call={"tool": "http.get", "arguments": {"ip": ip}})
    page = client_for(auditor).get(f"/firewall/{rule.policy_id}/").content.decode()

    def cells(name: str) -> list[str]:
        row = page.split(f'data-rule="{name}"')[1].split("</tr>")[0]
        return [re.sub(r"<[^>]+>", "", c.split("</td>")[0]) for c in row.split("<td")[1:]]

    enforcing, shadow = cells("no internal"), cells("watch")
    assert enforcing[3].endswith("http.* at tool_call where $.ip in 10.0.0.0/8 → deny")
    # its mode, its matches (hour / day) and its would-be matches in shadow (hour / day)
    assert enforcing[5:8] == [">enforce", ">2 / 2", ">0 / 0"]
    assert shadow[3].endswith("http.* → deny")
    # the shadow rule never decides: it is counted for the 3 calls it would have denied
    assert shadow[5:8] == [">shadow", ">0 / 0", ">3 / 3"]


@pytest.mark.parametrize(
    ("spec", "text"),
    [
        (
            {
                "tool_name_glob": "shell.*",
                "args_match": [{"path": "$.command", "op": "regex", "value": r"rm\s+-rf"}],
                "verdict": "deny",
            },
            r"shell.* where $.command ~ rm\s+-rf → deny",
        ),
        ({"verdict": "cap_cost", "cap_cost_cents": 500}, "any tool → cap_cost 500¢"),
        (
            {
                "stage": "egress",
                "verdict": "deny",
                "egress": {"deny": ["10.0.0.0/8"], "allow": ["10.1.2.3"]},
            },
            "any tool at egress to 10.0.0.0/8 except 10.1.2.3 → deny",
        ),
        (
            {
                "stage": "egress",
                "verdict": "allow",
                "egress": {"allow": ["api.example"], "deny": ["x.api.example"]},
            },
            "any tool at egress to api.example except x.api.example → allow",
        ),
        (
            {
                "verdict": "audit",
                "sequence": {
                    "steps": [
                        {"tool_glob": "crm.read", "min_count": 50},
                        {"tool_glob": "*", "egress": True},
                    ],
                    "window_seconds": 600,
                    "on_match": ["hold_session"],
                },
            },
            "sequence crm.read ×50 then * (egress) within 600 s → audit + hold_session",
        ),
        (
            {
                "tool_name_glob": "*.send",
                "verdict": "sanitize",
                "sanitize": {"presets": ["email"], "patterns": ["ACME-[0-9]{6}"]},
            },
            "*.send → sanitize email, /ACME-[0-9]{6}/",
        ),
        (
            {
                "args_match": [
                    {"path": "$.env", "op": "exists"},
                    {"path": "$.n", "op": "gte", "value": 3},
                ],
                "verdict": "deny",
            },
            "any tool where $.env exists and $.n ≥ 3 → deny",
        ),
    ],
)
def test_a_rule_is_said_in_one_line(spec, text):
    assert display.rule_text(spec) == text


def test_export_from_the_page_is_json_that_import_reads_back(rule, editor, client_for):
    client = client_for(editor)
    exported = client.get(f"/firewall/{rule.policy_id}/export.json", HTTP_ACCEPT="text/html")
    assert exported["Content-Type"].startswith("application/json")
    assert exported["Content-Disposition"] == 'attachment; filename="production.json"'
    data = json.loads(exported.content)
    assert [r["name"] for r in data["rules"]] == ["no internal"]
    back = client.post("/firewall/import", {"json": exported.content.decode(), "name": "copy"})
    assert back.status_code == 302
    copy = Policy.objects.get(name="copy")
    assert [r.spec["args_match"] for r in copy.rules.all()] == [rule.spec["args_match"]]


def test_the_api_export_is_json_even_for_a_browser(rule, editor, client_for):
    exported = client_for(editor).get(
        f"/v1/firewall/policies/{rule.policy_id}/export", HTTP_ACCEPT="text/html"
    )
    assert exported["Content-Type"].startswith("application/json")
    assert json.loads(exported.content)["name"] == "production"


def test_an_export_file_name_carries_no_header_syntax(editor, client_for):
    client_for(editor).post("/firewall/", {"name": 'a"b; c', "default_verdict": "allow"})
    policy = Policy.objects.get(name='a"b; c')
    client_for(editor).post(f"/firewall/{policy.pk}/publish")
    exported = client_for(editor).get(f"/firewall/{policy.pk}/export.json")
    assert exported["Content-Disposition"] == 'attachment; filename="a-b--c.json"'


def test_a_preset_applied_twice_adds_its_rules_once(policy, editor, client_for):
    client = client_for(editor)
    client.post(f"/firewall/{policy.pk}/presets", {"preset": "tight"})
    first = sorted(policy.rules.values_list("name", flat=True))
    assert first
    client.post(f"/firewall/{policy.pk}/presets", {"preset": "tight"})
    assert sorted(policy.rules.values_list("name", flat=True)) == first
    assert not [n for n in first if n.endswith(" (2)")]


def test_a_preset_preview_shows_the_rules_it_would_add_and_adds_nothing(policy, editor, client_for):
    client = client_for(editor)
    before = AuditRow.objects.count()
    preview = client.get(f"/firewall/{policy.pk}/presets/preview", {"preset": "block_ssrf_egress"})
    assert preview.status_code == 200
    assert b'class="preset-rule"' in preview.content
    assert b"\xe2\x86\x92 deny" in preview.content
    assert not policy.rules.exists()
    assert AuditRow.objects.count() == before
    client.post(f"/firewall/{policy.pk}/presets", {"preset": "block_ssrf_egress"})
    again = client.get(f"/firewall/{policy.pk}/presets/preview", {"preset": "block_ssrf_egress"})
    assert b"already in this policy" in again.content


def test_moving_a_rule_changes_its_own_priority_only_and_says_so(policy, editor, client_for):
    client = client_for(editor)
    for name, priority in (("a", "10"), ("b", "25"), ("c", "70")):
        client.post(f"/firewall/{policy.pk}/rules/new", _rule_post(name=name, priority=priority))
    c = Rule.objects.get(name="c")
    response = client.post(
        f"/firewall/rules/{c.pk}/move", {"direction": "up"}, HTTP_HX_REQUEST="true"
    )
    got = {r.name: r.priority for r in policy.rules.all()}
    assert got == {"a": 10, "c": 17, "b": 25}
    assert [r.name for r in policy.rules.order_by("priority", "id")] == ["a", "c", "b"]
    assert b"Moved c: its priority went from 70 to 17; no other rule changed." in response.content


def test_a_rule_dragged_to_the_top_takes_a_step_above_the_first(policy, editor, client_for):
    client = client_for(editor)
    for name, priority in (("a", "10"), ("b", "20"), ("c", "30")):
        client.post(f"/firewall/{policy.pk}/rules/new", _rule_post(name=name, priority=priority))
    c = Rule.objects.get(name="c")
    client.post(f"/firewall/rules/{c.pk}/move", {"to": "0"})
    assert {r.name: r.priority for r in policy.rules.all()} == {"c": 0, "a": 10, "b": 20}
    row = AuditRow.objects.filter(action="firewall.policy.reorder").get()
    assert row.changes["priorities"] == {"old": {"c": 30}, "new": {"c": 0}}


def test_with_no_gap_only_the_rules_in_the_way_move_and_the_page_names_them(
    policy, editor, client_for
):
    client = client_for(editor)
    for name, priority in (("a", "10"), ("b", "11"), ("c", "12"), ("d", "40")):
        client.post(f"/firewall/{policy.pk}/rules/new", _rule_post(name=name, priority=priority))
    d = Rule.objects.get(name="d")
    response = client.post(f"/firewall/rules/{d.pk}/move", {"to": "1"}, HTTP_HX_REQUEST="true")
    got = {r.name: r.priority for r in policy.rules.all()}
    assert got == {"a": 10, "d": 11, "b": 12, "c": 13}
    assert [r.name for r in policy.rules.order_by("priority", "id")] == ["a", "d", "b", "c"]
    assert b"to make room, b from 11 to 12, c from 12 to 13." in response.content


@pytest.mark.parametrize("to", ["9", "-1", "x", "1" * 12])
def test_a_place_outside_the_order_is_refused_naming_the_field(policy, editor, client_for, to):
    client = client_for(editor)
    for name in ("a", "b"):
        client.post(f"/firewall/{policy.pk}/rules/new", _rule_post(name=name))
    b = Rule.objects.get(name="b")
    response = client.post(f"/firewall/rules/{b.pk}/move", {"to": to}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert b"to: a " in response.content
    assert [r.name for r in policy.rules.order_by("priority", "id")] == ["a", "b"]


def test_a_tie_of_priorities_is_made_strict_so_the_order_holds(policy, editor, client_for):
    client = client_for(editor)
    for name in ("a", "b"):
        client.post(f"/firewall/{policy.pk}/rules/new", _rule_post(name=name, priority="10"))
    b = Rule.objects.get(name="b")
    client.post(f"/firewall/rules/{b.pk}/move", {"direction": "up"})
    assert [r.name for r in policy.rules.order_by("priority", "id")] == ["b", "a"]


@pytest.mark.parametrize("entry", ["192.168.1.300", "999.1.1.1", "10.0.0.1."])
def test_an_egress_list_refuses_a_mistyped_address_as_a_host(policy, editor, client_for, entry):
    response = client_for(editor).post(
        f"/firewall/{policy.pk}/rules/new",
        _rule_post(stage="egress", clause_count="0", egress_deny=entry),
    )
    if entry == "10.0.0.1.":
        # A trailing dot spells the address itself: it is read as 10.0.0.1, not refused.
        assert response.status_code in (204, 302)
        return
    assert response.status_code == 400
    assert b"is not a valid IP address" in response.content
    assert not Rule.objects.exists()


def test_try_a_call_refuses_a_misspelled_field(policy, editor, client_for):
    call = {"tool": "http.get", "stge": "egress"}
    response = client_for(editor).post(
        f"/firewall/{policy.pk}/try", {"call": json.dumps(call)}, HTTP_HX_REQUEST="true"
    )
    assert b"call: stge: not a field of a call" in response.content
    assert b'id="try-verdict"' not in response.content
