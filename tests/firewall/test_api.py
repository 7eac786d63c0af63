"""The firewall's API: CRUD, strict validation at the edge, order, presets, import/export, evaluate."""

from __future__ import annotations

import json

import pytest

from console.models import AuditRow, Event
from firewall.models import Policy, Rule, RuleMatchCount

pytestmark = pytest.mark.django_db

RM_RF = {
    "priority": 10,
    "name": "no rm -rf",
    "stage": "tool_call",
    "tool_name_glob": "shell.*",
    "args_match": [{"path": "$.command", "op": "regex", "value": "rm\\s+-rf"}],
    "verdict": "deny",
    "notes": "why",
}
SCRUB = {
    "priority": 20,
    "name": "scrub",
    "tool_name_glob": "*.send",
    "verdict": "sanitize",
    "sanitize": {"presets": ["email"], "patterns": ["ACME-[0-9]{6}"]},
}


def _post(client, url, body):
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def policy(editor, client_for):
    response = _post(
        client_for(editor),
        "/v1/firewall/policies",
        {"name": "production", "default_verdict": "allow", "rules": [RM_RF, SCRUB]},
    )
    assert response.status_code == 201, response.content
    policy_id = response.json()["id"]
    published = _post(client_for(editor), f"/v1/firewall/policies/{policy_id}/publish", {})
    assert published.status_code == 201, published.content
    return Policy.objects.get(pk=policy_id)


def _publish(client, policy) -> None:
    response = _post(client, f"/v1/firewall/policies/{policy.pk}/publish", {})
    assert response.status_code == 201, response.content


def test_creating_a_policy_stores_its_rules_and_audits_them_in_one_row_without_blobs(
    policy, organisation
):
    assert policy.active
    assert [r.name for r in policy.rules.order_by("priority")] == ["no rm -rf", "scrub"]
    rows = AuditRow.objects.filter(organisation=organisation, action="firewall.policy.import")
    assert rows.count() == 1
    text = json.dumps([r.changes for r in rows])
    assert "rm\\\\s+-rf" not in text and "ACME-" not in text and "why" not in text
    assert rows.get().changes == {
        "rules": {"old": 0, "new": 2},
        "rule_names": {"old": None, "new": ["no rm -rf", "scrub"]},
    }


def test_an_invalid_rule_is_refused_with_every_path_and_nothing_stored(policy, editor, client_for):
    bad = {
        "name": "bad",
        "tool_name_glob": "x",
        "verdict": "sanitize",
        "priority": 5,
        "sanitize": {"presets": [], "patterns": ["("]},
        "args_match": [
            {"path": "$..a", "op": "eq", "value": 1},
            {"path": "$.ip", "op": "cidr", "value": "10.0.0.300/8"},
            {"path": "$.x", "op": "in", "value": "nope"},
            {"path": "$.x", "op": "like", "value": "a"},
        ],
        "colour": "red",
    }
    before = AuditRow.objects.count()
    response = _post(client_for(editor), f"/v1/firewall/policies/{policy.pk}/rules", bad)
    assert response.status_code == 400
    errors = response.json()
    for path in (
        "args_match[0].path",
        "args_match[1].value",
        "args_match[2].value",
        "args_match[3].op",
        "colour",
        "sanitize.patterns[0]",
    ):
        assert path in errors, (path, errors)
    assert not Rule.objects.filter(name="bad").exists()
    assert AuditRow.objects.count() == before


def test_cap_cost_needs_positive_cents(policy, editor, client_for):
    response = _post(
        client_for(editor),
        f"/v1/firewall/policies/{policy.pk}/rules",
        {"name": "budget", "priority": 40, "verdict": "cap_cost", "cap_cost_cents": 0},
    )
    assert response.status_code == 400
    assert "cap_cost_cents" in response.json()


def test_a_duplicate_rule_name_is_refused(policy, editor, client_for):
    response = _post(
        client_for(editor), f"/v1/firewall/policies/{policy.pk}/rules", {**RM_RF, "priority": 99}
    )
    assert response.status_code == 400
    assert "name" in response.json()


def test_import_refuses_a_whole_policy_with_one_bad_rule(editor, client_for):
    body = {
        "name": "p2",
        "default_verdict": "allow",
        "rules": [RM_RF, {**SCRUB, "sanitize": {"presets": [], "patterns": []}}],
    }
    response = _post(client_for(editor), "/v1/firewall/policies", body)
    assert response.status_code == 400
    assert any(k.startswith("rules[1].sanitize") for k in response.json())
    assert not Policy.objects.filter(name="p2").exists()
    assert not Rule.objects.exists()


def test_export_gives_back_the_policy_format(policy, auditor, client_for):
    body = client_for(auditor).get(f"/v1/firewall/policies/{policy.pk}/export").json()
    assert body["name"] == "production" and body["default_verdict"] == "allow"
    assert [r["name"] for r in body["rules"]] == ["no rm -rf", "scrub"]
    assert all(isinstance(r["id"], int) for r in body["rules"])
    assert body["rules"][0]["args_match"] == RM_RF["args_match"]


def test_roles_for_the_firewall(policy, auditor, approver, client_for):
    for user in (auditor, approver):
        client = client_for(user)
        assert client.get(f"/v1/firewall/policies/{policy.pk}").status_code == 200
        response = _post(client, f"/v1/firewall/policies/{policy.pk}/rules", {**RM_RF, "name": "n"})
        assert response.status_code == 403
    evaluate = _post(client_for(auditor), "/v1/firewall/evaluate", {"tool": "shell.exec"})
    assert evaluate.status_code == 403
    assert (
        _post(client_for(approver), "/v1/firewall/evaluate", {"tool": "shell.exec"}).status_code
        == 200
    )


def test_another_organisations_policy_and_rules_answer_404(policy, outsider, client_for):
    client = client_for(outsider)
    rule = policy.rules.first()
    assert client.get(f"/v1/firewall/policies/{policy.pk}").status_code == 404
    assert client.get(f"/v1/firewall/rules/{rule.pk}").status_code == 404
    assert client.delete(f"/v1/firewall/rules/{rule.pk}").status_code == 404
    assert (
        _post(
            client, "/v1/firewall/evaluate", {"tool": "shell.exec", "policy": policy.pk}
        ).status_code
        == 404
    )
    assert Rule.objects.filter(pk=rule.pk).exists()


class TestEvaluate:
    def test_the_first_matching_rule_decides_and_an_event_is_recorded(
        self, policy, editor, client_for
    ):
        call = {
            "tool": "shell.exec",
            "skill": "community.tools",
            "stage": "tool_call",
            "arguments": {"command": "rm -rf /"},
            "agent": "desk",
            "session": "s1",
        }
        body = _post(client_for(editor), "/v1/firewall/evaluate", call).json()
        assert (body["verdict"], body["decision"], body["rule"]) == ("deny", "refuse", "no rm -rf")
        event = Event.objects.get()
        assert (event.source, event.verdict, event.rule, event.agent, event.tool) == (
            "firewall",
            "deny",
            "no rm -rf",
            "desk",
            "shell.exec",
        )

    def test_a_plain_allow_is_counted_not_recorded(self, policy, editor, client_for):
        body = _post(
            client_for(editor),
            "/v1/firewall/evaluate",
            {"tool": "shell.exec", "arguments": {"command": "ls"}},
        ).json()
        assert (body["verdict"], body["rule"]) == ("allow", None)
        assert not Event.objects.exists()

    def test_sanitize_forwards_cleaned_arguments(self, policy, editor, client_for):
        body = _post(
            client_for(editor),
            "/v1/firewall/evaluate",
            {"tool": "mail.send", "arguments": {"to": "ana@example.org", "ref": "ACME-123456"}},
        ).json()
        assert body["verdict"] == "sanitize"
        assert body["arguments"] == {"to": "[redacted:email]", "ref": "[redacted:custom]"}
        assert RuleMatchCount.objects.get(rule__name="scrub").count == 1
        event = Event.objects.get()
        assert "ana@example.org" in json.dumps(event.detail["call"])  # the call as recorded
        assert event.detail["arguments_after"]["to"] == "[redacted:email]"

    def test_a_shadow_rule_never_decides_but_is_counted(self, policy, editor, client_for):
        client = client_for(editor)
        response = _post(
            client,
            f"/v1/firewall/policies/{policy.pk}/rules",
            {
                "name": "watch exec",
                "priority": 1,
                "tool_name_glob": "*.exec",
                "verdict": "deny",
                "mode": "shadow",
            },
        )
        assert response.status_code == 201, response.content
        _publish(client, policy)
        body = _post(
            client, "/v1/firewall/evaluate", {"tool": "shell.exec", "arguments": {"command": "ls"}}
        ).json()
        assert body["verdict"] == "allow" and body["rule"] is None
        assert [s["rule"] for s in body["shadow"]] == ["watch exec"]
        detail = client.get(f"/v1/firewall/policies/{policy.pk}").json()
        watch = next(r for r in detail["rules"] if r["name"] == "watch exec")
        assert watch["matches"]["shadow_hour"] == 1 and watch["matches"]["shadow_day"] == 1

    def test_without_an_active_policy_the_call_is_refused(self, editor, client_for):
        body = _post(client_for(editor), "/v1/firewall/evaluate", {"tool": "shell.exec"}).json()
        assert (body["decision"], body["reasons"]) == ("refuse", ["no_active_policy"])

    @pytest.mark.parametrize(
        ("call", "field"),
        [
            ({}, "tool"),
            ({"tool": "x", "stage": "later"}, "stage"),
            ({"tool": "x", "colour": 1}, "colour"),
            ({"tool": ["x"]}, "tool"),
        ],
    )
    def test_a_malformed_call_names_its_field(self, policy, editor, client_for, call, field):
        response = _post(client_for(editor), "/v1/firewall/evaluate", call)
        assert response.status_code == 400
        assert field in response.json()

    def test_a_stored_rule_broken_behind_the_orms_back_fails_closed(
        self, policy, editor, client_for
    ):
        from firewall.models import PolicyVersion

        published = PolicyVersion.objects.get(policy=policy)
        broken = [{**published.rules[0], "verdict": "nonsense"}, *published.rules[1:]]
        # behind the ORM's back (a version is never changed through it), and under a new key,
        # as a process that never compiled it would meet it
        PolicyVersion.objects.filter(pk=published.pk).update(
            rules=broken, key="00000000-0000-0000-0000-000000000099"
        )
        body = _post(client_for(editor), "/v1/firewall/evaluate", {"tool": "shell.exec"}).json()
        assert (body["decision"], body["reasons"]) == ("refuse", ["policy_invalid"])


def test_reorder_changes_which_rule_fires_and_is_audited(policy, editor, client_for):
    client = client_for(editor)
    first = _post(
        client,
        f"/v1/firewall/policies/{policy.pk}/rules",
        {"name": "allow ls", "priority": 50, "tool_name_glob": "shell.exec", "verdict": "allow"},
    ).json()
    call = {"tool": "shell.exec", "arguments": {"command": "rm -rf /"}}
    _publish(client, policy)
    assert _post(client, "/v1/firewall/evaluate", call).json()["rule"] == "no rm -rf"
    ids = [r.pk for r in policy.rules.order_by("priority", "id")]
    ids.remove(first["id"])
    response = _post(
        client, f"/v1/firewall/policies/{policy.pk}/reorder", {"rules": [first["id"], *ids]}
    )
    assert response.status_code == 200
    _publish(client, policy)
    assert _post(client, "/v1/firewall/evaluate", call).json()["rule"] == "allow ls"
    row = AuditRow.objects.filter(action="firewall.policy.reorder").get()
    assert row.changes["order"]["new"][0] == "allow ls"
    bad = _post(client, f"/v1/firewall/policies/{policy.pk}/reorder", {"rules": ids})
    assert bad.status_code == 400


def test_a_preset_adds_its_rules(policy, editor, client_for):
    client = client_for(editor)
    response = _post(client, f"/v1/firewall/policies/{policy.pk}/presets", {"preset": "tight"})
    assert response.status_code == 201, response.content
    _publish(client, policy)
    body = _post(
        client,
        "/v1/firewall/evaluate",
        {
            "tool": "http.fetch",
            "stage": "egress",
            "destination": "http://169.254.169.254/latest/meta-data",
        },
    ).json()
    assert body["verdict"] == "deny"
    unknown = _post(client, f"/v1/firewall/policies/{policy.pk}/presets", {"preset": "loose"})
    assert unknown.status_code == 400 and "preset" in unknown.json()


def test_update_and_delete_a_rule(policy, editor, client_for):
    client = client_for(editor)
    rule = policy.rules.get(name="scrub")
    response = client.put(
        f"/v1/firewall/rules/{rule.pk}",
        json.dumps({**SCRUB, "tool_name_glob": "*.post"}),
        content_type="application/json",
    )
    assert response.status_code == 200
    assert Rule.objects.get(pk=rule.pk).spec["tool_name_glob"] == "*.post"
    assert client.delete(f"/v1/firewall/rules/{rule.pk}").status_code == 204
    actions = list(
        AuditRow.objects.filter(object_type="firewall_rule")
        .order_by("seq")
        .values_list("action", flat=True)
    )
    assert actions[-2:] == ["firewall.rule.update", "firewall.rule.delete"]
