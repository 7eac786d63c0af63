"""Evaluation, through both engines: order, verdicts, shadow mode, defaults and fail-closed rules."""

from __future__ import annotations

from typing import Any

import pytest

from firewall.engine import Decision, PolicyInvalid, compile_policy, reference_evaluate

from .conftest import FakeResolver, policy


def both(data: dict[str, Any], call: Any, *, strict: bool = True) -> Decision:
    """Decide with the compiled and the reference engine, insist they agree, return one."""
    resolver = FakeResolver()
    compiled = compile_policy(data, strict=strict, resolver=resolver).evaluate(call)
    reference = reference_evaluate(data, call, resolver=resolver)
    assert compiled.to_dict() == reference.to_dict()
    return compiled


RM = {"path": "$.command", "op": "regex", "value": r"rm\s+-rf"}


def test_the_first_rule_whose_conditions_hold_decides() -> None:
    data = policy(
        {"tool_name_glob": "shell.*", "args_match": [RM], "verdict": "deny", "name": "no rm"},
        {"tool_name_glob": "shell.*", "verdict": "require_approval", "name": "hold shell"},
        {"tool_name_glob": "*", "verdict": "audit", "name": "audit all"},
    )
    call = {"tool": "shell.exec", "arguments": {"command": "rm -rf /"}}
    assert both(data, call).rule == "no rm"
    call = {"tool": "shell.exec", "arguments": {"command": "ls"}}
    decision = both(data, call)
    assert (decision.rule, decision.verdict, decision.decision) == (
        "hold shell",
        "require_approval",
        "confirm",
    )
    assert both(data, {"tool": "db.read"}).rule == "audit all"


def test_no_match_gives_the_default_verdict_with_a_null_rule() -> None:
    data = policy({"tool_name_glob": "shell.exec", "verdict": "deny"}, default="require_approval")
    decision = both(data, {"tool": "db.read", "arguments": {"q": 1}})
    assert decision.to_dict() == {
        "verdict": "require_approval",
        "decision": "confirm",
        "rule": None,
        "rule_id": None,
        "arguments": {"q": 1},
        "reasons": ["default_verdict: require_approval"],
        "shadow": [],
        "cap_cost_cents": None,
        "errors": [],
    }


def test_priority_orders_rules_not_their_position() -> None:
    data = policy(
        {"priority": 50, "verdict": "deny", "name": "late"},
        {"priority": 5, "verdict": "audit", "name": "early"},
    )
    assert both(data, {"tool": "x"}).rule == "early"


def test_ties_in_priority_are_broken_by_id_then_by_position() -> None:
    by_id = policy(
        {"priority": 1, "id": 9, "verdict": "deny", "name": "id 9"},
        {"priority": 1, "id": 3, "verdict": "audit", "name": "id 3"},
    )
    assert both(by_id, {"tool": "x"}).rule == "id 3"
    by_position = policy(
        {"priority": 1, "verdict": "deny", "name": "first"},
        {"priority": 1, "verdict": "audit", "name": "second"},
    )
    assert both(by_position, {"tool": "x"}).rule == "first"
    string_ids = policy(
        {"priority": 1, "id": "b", "verdict": "deny", "name": "b"},
        {"priority": 1, "id": "a", "verdict": "audit", "name": "a"},
    )
    assert both(string_ids, {"tool": "x"}).rule == "a"


def test_decision_of_each_verdict() -> None:
    for verdict, decision in [
        ("allow", "allow"),
        ("audit", "allow"),
        ("deny", "refuse"),
        ("require_approval", "confirm"),
    ]:
        data = policy({"verdict": verdict, "id": 7})
        result = both(data, {"tool": "x"})
        assert (result.verdict, result.decision, result.rule_id) == (verdict, decision, 7)
        assert result.reasons == ["rule: rule 0"]


def test_cap_cost_carries_its_cents() -> None:
    data = policy({"verdict": "cap_cost", "cap_cost_cents": 500})
    decision = both(data, {"tool": "llm.complete"})
    assert (decision.verdict, decision.decision, decision.cap_cost_cents) == (
        "cap_cost",
        "allow",
        500,
    )


def test_stage_scopes_rules_and_empty_stage_matches_all() -> None:
    data = policy(
        {"stage": "inbound", "verdict": "deny", "name": "inbound only"},
        {"verdict": "audit", "name": "any stage"},
    )
    assert both(data, {"tool": "x", "stage": "inbound"}).rule == "inbound only"
    assert both(data, {"tool": "x", "stage": "tool_call"}).rule == "any stage"
    assert both(data, {"tool": "x", "stage": "egress"}).rule == "any stage"


def test_a_call_without_stage_is_a_tool_call_or_egress_when_it_has_a_destination() -> None:
    data = policy(
        {"stage": "egress", "verdict": "deny", "name": "egress"},
        {"stage": "tool_call", "verdict": "audit", "name": "tool call"},
    )
    assert both(data, {"tool": "x"}).rule == "tool call"
    assert both(data, {"tool": "x", "destination": "https://a.example"}).rule == "egress"


def test_skill_glob_is_anded_with_the_tool_glob() -> None:
    data = policy(
        {"tool_name_glob": "http.fetch", "skill_glob": "community.*", "verdict": "deny"},
    )
    assert both(data, {"tool": "http.fetch", "skill": "community.web"}).verdict == "deny"
    assert both(data, {"tool": "http.fetch", "skill": "builtin.web"}).verdict == "allow"
    assert both(data, {"tool": "http.other", "skill": "community.web"}).verdict == "allow"


def test_a_call_without_skill_does_not_match_a_non_empty_skill_glob() -> None:
    for glob in ("community.*", "*", "*.web"):
        data = policy({"skill_glob": glob, "verdict": "deny"})
        assert both(data, {"tool": "http.fetch"}).verdict == "allow", glob
    data = policy({"skill_glob": "", "verdict": "deny"})
    assert both(data, {"tool": "http.fetch"}).verdict == "deny"


def test_disabled_rules_are_skipped() -> None:
    data = policy({"verdict": "deny", "enabled": False}, {"verdict": "audit", "name": "on"})
    assert both(data, {"tool": "x"}).rule == "on"


def test_sequence_rules_are_never_evaluated_inline() -> None:
    sequence = {"steps": [{"tool_glob": "*"}], "window_seconds": 0}
    data = policy({"verdict": "deny", "sequence": sequence, "name": "chain"})
    decision = both(data, {"tool": "x"})
    assert (decision.verdict, decision.rule) == ("allow", None)


def test_sanitize_returns_cleaned_arguments_and_says_what_it_redacted() -> None:
    data = policy(
        {
            "tool_name_glob": "*.send",
            "verdict": "sanitize",
            "sanitize": {"presets": ["email", "credit_card"], "patterns": ["ACME-[0-9]{6}"]},
        }
    )
    arguments = {"to": "bob@example.com", "body": {"text": "card 4111-1111-1111-1111 ACME-000001"}}
    decision = both(data, {"tool": "mail.send", "arguments": arguments})
    assert decision.verdict == "sanitize" and decision.decision == "allow"
    assert decision.arguments == {
        "to": "[redacted:email]",
        "body": {"text": "card [redacted:credit_card] [redacted:custom]"},
    }
    assert decision.reasons == [
        "rule: rule 0",
        "redacted: credit_card",
        "redacted: email",
        "redacted: custom",
    ]
    assert arguments["to"] == "bob@example.com"


def test_unsanitized_decisions_return_the_original_arguments() -> None:
    arguments = {"to": "bob@example.com"}
    decision = both(policy({"verdict": "audit"}), {"tool": "mail.send", "arguments": arguments})
    assert decision.arguments == arguments


def test_sanitize_on_the_inbound_stage_escalates_to_a_block() -> None:
    data = policy({"verdict": "sanitize", "sanitize": {"presets": ["email"]}})
    decision = both(data, {"tool": "turn", "stage": "inbound", "arguments": {"t": "a@b.example"}})
    assert (decision.verdict, decision.decision) == ("deny", "refuse")
    assert decision.reasons == ["rule: rule 0", "sanitize_escalated: inbound"]


def test_sanitize_that_cannot_walk_the_arguments_refuses() -> None:
    deep: Any = "a@b.example"
    for _ in range(300):
        deep = [deep]
    data = policy({"verdict": "sanitize", "sanitize": {"presets": ["email"]}})
    decision = both(data, {"tool": "x", "arguments": {"d": deep}})
    assert (decision.verdict, decision.rule) == ("deny", "rule 0")
    assert decision.reasons[1].startswith("sanitize_failed:")
    assert decision.arguments is None


def test_shadow_rules_report_but_never_decide() -> None:
    data = policy(
        {"verdict": "deny", "mode": "shadow", "name": "would deny", "id": 1, "priority": 1},
        {"verdict": "audit", "name": "enforced", "id": 2, "priority": 2},
        {"verdict": "deny", "mode": "shadow", "name": "after", "id": 3, "priority": 3},
    )
    decision = both(data, {"tool": "x"})
    assert decision.rule == "enforced"
    assert decision.verdict == "audit"
    assert decision.shadow == [{"rule": "would deny", "rule_id": 1, "verdict": "deny"}]


def test_shadow_rules_are_reported_with_the_default_verdict() -> None:
    data = policy(
        {"verdict": "deny", "mode": "shadow", "name": "s1"},
        {"verdict": "require_approval", "mode": "shadow", "name": "s2"},
        default="allow",
    )
    decision = both(data, {"tool": "x"})
    assert decision.verdict == "allow" and decision.rule is None
    assert [entry["rule"] for entry in decision.shadow] == ["s1", "s2"]


def test_a_shadow_sanitize_on_inbound_reports_the_block_it_would_make() -> None:
    data = policy({"verdict": "sanitize", "mode": "shadow", "sanitize": {"presets": ["email"]}})
    decision = both(data, {"tool": "t", "stage": "inbound"})
    assert decision.shadow == [{"rule": "rule 0", "rule_id": None, "verdict": "deny"}]


@pytest.mark.parametrize(
    "call",
    [
        "shell.exec",
        None,
        ["tool"],
        {},
        {"tool": ""},
        {"tool": 7},
        {"tool": "x", "skill": 1},
        {"tool": "x", "stage": "outbound"},
        {"tool": "x", "stage": ""},
        {"tool": "x", "destination": ["http://a"]},
    ],
)
def test_a_call_that_cannot_be_read_is_refused_whatever_the_policy(call: Any) -> None:
    decision = both(policy({"verdict": "allow"}), call)
    assert (decision.verdict, decision.decision, decision.rule) == ("deny", "refuse", None)
    assert decision.reasons[0].startswith("malformed_call: ")


def test_arguments_that_are_not_an_object_make_clauses_false_but_not_the_call() -> None:
    data = policy(
        {"verdict": "deny", "args_match": [{"path": "$", "op": "exists"}], "name": "clause"},
        {"verdict": "deny", "args_match": [{"path": "$.x", "op": "exists", "value": False}]},
        {"verdict": "audit", "name": "no clause"},
    )
    for arguments in (["a"], "text", 3):
        decision = both(data, {"tool": "x", "arguments": arguments})
        assert decision.rule == "no clause"
        assert decision.arguments == arguments


def test_neq_and_not_in_do_not_fire_on_a_missing_path() -> None:
    data = policy(
        {"verdict": "deny", "args_match": [{"path": "$.mode", "op": "neq", "value": "safe"}]},
        {"verdict": "deny", "args_match": [{"path": "$.mode", "op": "not_in", "value": ["a"]}]},
    )
    assert both(data, {"tool": "x", "arguments": {}}).verdict == "allow"
    assert both(data, {"tool": "x", "arguments": {"mode": "fast"}}).verdict == "deny"


def test_compile_policy_refuses_an_invalid_policy_with_every_issue() -> None:
    data = policy(
        {"verdict": "deny", "args_match": [{"path": "$.x", "op": "regex", "value": "(a"}]},
        {"verdict": "explode"},
    )
    with pytest.raises(PolicyInvalid) as caught:
        compile_policy(data)
    paths = [issue.path for issue in caught.value.issues]
    assert paths == ["rules[0].args_match[0].value", "rules[1].verdict"]


def test_a_stored_rule_with_a_broken_clause_does_not_fire_and_is_reported() -> None:
    data = policy(
        {"verdict": "deny", "args_match": [{"path": "$.ip", "op": "cidr", "value": "10.0.0.0/33"}]},
        {
            "verdict": "deny",
            "name": "bad regex",
            "args_match": [RM, {"path": "$.x", "op": "regex", "value": "(a"}],
        },
        {"verdict": "audit", "name": "fallback"},
    )
    decision = both(
        data, {"tool": "x", "arguments": {"ip": "10.0.0.1", "command": "rm -rf /"}}, strict=False
    )
    assert decision.rule == "fallback"
    assert decision.errors == [
        "rule `rule 0`: args_match[0].value: not a valid CIDR: prefix out of range",
        "rule `bad regex`: args_match[1].value: not a valid RE2 regex: missing ): (a",
    ]


def test_broken_clause_errors_are_only_reported_when_evaluation_reaches_them() -> None:
    data = policy(
        {"verdict": "audit", "name": "first"},
        {"verdict": "deny", "args_match": [{"path": "$.x", "op": "regex", "value": "(a"}]},
    )
    assert both(data, {"tool": "x"}, strict=False).errors == []


def test_stored_rules_with_broken_payloads_do_not_fire() -> None:
    data = policy(
        {"verdict": "sanitize", "name": "no sanitizer"},
        {"verdict": "sanitize", "name": "bad preset", "sanitize": {"presets": ["phone"]}},
        {"verdict": "cap_cost", "name": "no cap"},
        {
            "verdict": "deny",
            "stage": "egress",
            "name": "bad list",
            "egress": {"deny": ["10.0.0.1/8"]},
        },
        default="audit",
    )
    decision = both(data, {"tool": "x", "destination": "http://10.0.0.1/"}, strict=False)
    assert (decision.verdict, decision.rule) == ("audit", None)
    assert [error.split(":")[0] for error in decision.errors] == [
        "rule `no sanitizer`",
        "rule `bad preset`",
        "rule `no cap`",
        "rule `bad list`",
    ]


def test_rules_whose_shape_cannot_be_read_are_left_out_and_listed() -> None:
    data = policy({"verdict": "deny", "priority": "high"}, {"verdict": "audit", "name": "ok"})
    compiled = compile_policy(data, strict=False)
    assert compiled.evaluate({"tool": "x"}).rule == "ok"
    assert "rules[0]: left out: `priority` is not an integer" in compiled.issues
    assert reference_evaluate(data, {"tool": "x"}).rule == "ok"


def test_an_unusable_default_verdict_refuses_what_no_rule_decides() -> None:
    data = {"name": "p", "default_verdict": "sanitize", "rules": []}
    decision = both(data, {"tool": "x"}, strict=False)
    assert (decision.verdict, decision.decision) == ("deny", "refuse")
    assert decision.reasons == ["invalid_default_verdict"]
    assert "default verdict `sanitize`" in decision.errors[0]


@pytest.mark.parametrize("data", [None, [], "policy", {"rules": "x"}])
def test_a_stored_policy_that_is_not_a_policy_refuses_calls(data: Any) -> None:
    decision = both(data, {"tool": "x"}, strict=False)
    assert decision.decision == "refuse"


def test_a_broken_payload_is_reported_only_when_the_egress_scope_fires() -> None:
    broken = {
        "verdict": "sanitize",
        "stage": "egress",
        "egress": {"deny": ["10.0.0.0/8"], "allow": ["10.0.0.5"]},
    }
    data = policy(broken)
    excepted = both(data, {"tool": "x", "destination": "http://10.0.0.5/"}, strict=False)
    assert excepted.errors == []
    blocked = both(data, {"tool": "x", "destination": "http://10.0.0.6/"}, strict=False)
    assert blocked.errors == ["rule `rule 0`: sanitize: is required for the `sanitize` verdict"]
    assert blocked.rule is None
