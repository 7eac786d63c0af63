"""Exact behaviour of the compiled engine: what each compiled rule holds, how the index buckets,
splits, caches and looks up tool names (dot boundaries, the infix-set threshold, the cache
bounds), and the exact decisions, shadows, rule ids and issues it reports.

These pin the index's internals as well as its answers, so that a change which keeps the
answers but drops a cache, a shared split or a bound is noticed.
"""

from __future__ import annotations

from typing import Any

import pytest

import firewall.engine.compiled as compiled_module
from firewall.engine import CompiledPolicy, compile_policy, reference_evaluate

from .conftest import FakeResolver
from .conftest import policy as make_policy


def index_of(policy: CompiledPolicy, stage: str = "tool_call") -> Any:
    return policy._by_stage[stage]


def candidate_names(policy: CompiledPolicy, tool: str) -> list[str]:
    return sorted(rule.name for bucket in index_of(policy).candidates(tool) for rule in bucket)


def eq_rules(count: int) -> list[dict[str, Any]]:
    """`count` deny rules a clause index can file (an `eq` on `$.x`)."""
    return [
        {"verdict": "deny", "args_match": [{"path": "$.x", "op": "eq", "value": n}]}
        for n in range(count)
    ]


EGRESS_DENY = {"verdict": "deny", "stage": "egress", "egress": {"deny": ["10.0.0.0/8"]}}
EGRESS_CALL = {"tool": "t", "stage": "egress", "arguments": {"u": ["http://ok.example/"]}}


# --- compiled rules -----------------------------------------------------------------------


def test_a_plain_rule_compiles_simple_without_sanitizer_or_cap() -> None:
    data = make_policy({"verdict": "deny", "cap_cost_cents": 5, "id": 7})
    policy = compile_policy(data, strict=False)
    (rule,) = index_of(policy).any
    assert (rule.simple, rule.sanitizer, rule.cap_cost_cents) == (True, None, None)
    assert (rule.decision, rule.reason, rule.broken, rule.payload_error) == (
        "refuse",
        "rule: rule 0",
        None,
        None,
    )


def test_a_cap_cost_on_another_verdict_is_not_reported() -> None:
    data = make_policy({"verdict": "deny", "cap_cost_cents": 5, "id": 7})
    decision = compile_policy(data, strict=False).evaluate({"tool": "t"})
    assert decision.to_dict() == {
        "verdict": "deny",
        "decision": "refuse",
        "rule": "rule 0",
        "rule_id": 7,
        "arguments": {},
        "reasons": ["rule: rule 0"],
        "shadow": [],
        "cap_cost_cents": None,
        "errors": [],
    }


def test_an_egress_rule_is_not_simple() -> None:
    policy = compile_policy(make_policy(EGRESS_DENY))
    (rule,) = index_of(policy, "egress").any
    assert rule.simple is False and rule.egress is not None


def test_a_cap_cost_rule_keeps_its_cap() -> None:
    policy = compile_policy(make_policy({"verdict": "cap_cost", "cap_cost_cents": 25}))
    assert index_of(policy).any[0].cap_cost_cents == 25
    assert policy.evaluate({"tool": "t"}).cap_cost_cents == 25


# --- buckets and splits -------------------------------------------------------------------


def test_a_split_bucket_is_keyed_by_the_bucket_and_its_plan_asks_only_the_index() -> None:
    policy = CompiledPolicy(make_policy(*eq_rules(3)), min_indexed=2, validated=True)
    index = index_of(policy)
    assert list(index.split) == [id(index.any)]
    plain, clause_index = index.split[id(index.any)]
    assert plain == []
    assert index.plan("t") == ([], [clause_index])
    assert policy.evaluate({"tool": "t", "arguments": {"x": 1}}).rule == "rule 1"
    assert policy.evaluate({"tool": "t", "arguments": {"x": 9}}).rule is None


def test_a_split_bucket_with_plain_rules_walks_them_beside_the_index() -> None:
    rules = [*eq_rules(3), {"verdict": "audit", "name": "plain"}]
    policy = CompiledPolicy(make_policy(*rules), min_indexed=2, validated=True)
    index = index_of(policy)
    plain, clause_index = index.split[id(index.any)]
    assert [rule.name for rule in plain] == ["plain"]
    lists, indexes = index.plan("t")
    assert lists == [plain] and lists[0] is plain and indexes == [clause_index]
    assert policy.evaluate({"tool": "t", "arguments": {"x": 9}}).rule == "plain"


def test_stages_with_the_same_bucket_share_one_split() -> None:
    rules = [*eq_rules(3), {"verdict": "audit", "stage": "egress", "tool_name_glob": "e"}]
    policy = CompiledPolicy(make_policy(*rules), min_indexed=2, validated=True)
    inbound, tool_call = index_of(policy, "inbound"), index_of(policy, "tool_call")
    assert inbound is not tool_call
    (first,) = inbound.split.values()
    (second,) = tool_call.split.values()
    assert first[0] is second[0] and first[1] is second[1]


def test_the_name_cache_holds_twice_the_keys_of_every_shape() -> None:
    rules = [{"tool_name_glob": f"e{n}", "verdict": "deny"} for n in range(4100)]
    rules += [{"tool_name_glob": f"p{n}.*", "verdict": "deny"} for n in range(3)]
    rules += [{"tool_name_glob": f"*.s{n}", "verdict": "deny"} for n in range(5)]
    rules += [{"tool_name_glob": f"*.i{n}.*", "verdict": "deny"} for n in range(7)]
    index = index_of(CompiledPolicy(make_policy(*rules), validated=True))
    assert (len(index.exact), len(index.prefix), len(index.suffix), len(index.infix)) == (
        4100,
        3,
        5,
        7,
    )
    assert index._capacity == 2 * 4115


# --- plans and the name cache -------------------------------------------------------------


def test_a_remembered_name_returns_its_plan_without_a_new_lookup() -> None:
    index = index_of(compile_policy(make_policy({"tool_name_glob": "a.*", "verdict": "deny"})))
    first = index.plan("a.x")
    index._plans.clear()
    assert index.plan("a.x") is first
    assert index._plans == {}


@pytest.mark.parametrize(("length", "remembered"), [(255, True), (256, True), (257, False)])
def test_names_up_to_256_characters_are_remembered(length: int, remembered: bool) -> None:
    index = index_of(compile_policy(make_policy({"tool_name_glob": "a.*", "verdict": "deny"})))
    name = "a." + "x" * (length - 2)
    index.plan(name)
    assert (name in index._seen) is remembered


# --- dot positions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("glob", "tool", "found"),
    [
        ("a.b.*", "a.b.", False),  # the trailing dot ends no prefix key
        ("a.b.*", "a.b.c", True),
        ("*.b", ".a.b", True),  # a leading dot is not searched, the next one is
        ("*.a.b", ".a.b", False),
        ("*.b.c", "a..b.c", True),  # adjacent dots are both found
        ("a..*", "a..b", True),
        ("*.b.*", "a.b.c.d", True),  # every pair of inner dots is tried
        ("*.c.*", "a.b.c.d", True),
        ("*.b.c.*", "a.b.c.d", True),
        ("*.b.*", "a.b.", False),
    ],
)
def test_tool_globs_match_at_exactly_the_inner_dots(glob: str, tool: str, found: bool) -> None:
    data = make_policy({"tool_name_glob": glob, "verdict": "deny", "name": "g"})
    policy = compile_policy(data)
    assert candidate_names(policy, tool) == (["g"] if found else [])
    assert policy.evaluate({"tool": tool}).verdict == ("deny" if found else "allow")
    assert reference_evaluate(data, {"tool": tool}).verdict == ("deny" if found else "allow")


def test_a_many_dotted_name_without_infix_rules_finds_its_prefix_rule() -> None:
    policy = compile_policy(make_policy({"tool_name_glob": "a.*", "verdict": "deny", "name": "g"}))
    tool = ".".join(["a"] * 20)
    assert candidate_names(policy, tool) == ["g"]
    assert index_of(policy).infix_set is None


@pytest.mark.parametrize(("dots", "uses_set"), [(12, False), (13, True)])
def test_the_infix_set_serves_names_with_more_than_12_inner_dots(dots: int, uses_set: bool) -> None:
    data = make_policy({"tool_name_glob": "*.shell.*", "verdict": "deny", "name": "g"})
    policy = compile_policy(data)
    tool = ".".join(["a"] * (dots - 1) + ["shell", "b"])
    assert tool.count(".") == dots
    assert candidate_names(policy, tool) == ["g"]
    assert (index_of(policy).infix_set is not None) is uses_set


# --- evaluation ---------------------------------------------------------------------------


def test_without_a_resolver_the_default_resolver_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeResolver({"ok.example": ["10.0.0.1"]})
    monkeypatch.setattr(compiled_module, "default_resolver", lambda: fake)
    decision = compile_policy(make_policy(EGRESS_DENY)).evaluate(EGRESS_CALL)
    assert (decision.verdict, decision.rule, decision.errors) == ("deny", "rule 0", [])
    assert fake.asked == ["ok.example"]


def test_a_shadow_rule_before_an_egress_rule_keeps_the_call_and_the_resolver() -> None:
    fake = FakeResolver({"ok.example": ["10.0.0.1"]})
    data = make_policy({"verdict": "audit", "mode": "shadow", "name": "sh", "id": 3}, EGRESS_DENY)
    decision = compile_policy(data, resolver=fake).evaluate(EGRESS_CALL)
    assert decision.to_dict() == {
        "verdict": "deny",
        "decision": "refuse",
        "rule": "rule 1",
        "rule_id": None,
        "arguments": {"u": ["http://ok.example/"]},
        "reasons": ["rule: rule 1"],
        "shadow": [{"rule": "sh", "rule_id": 3, "verdict": "audit"}],
        "cap_cost_cents": None,
        "errors": [],
    }
    assert fake.asked == ["ok.example"]


def test_a_sanitize_decision_carries_the_rule_id() -> None:
    data = make_policy({"verdict": "sanitize", "sanitize": {"presets": ["email"]}, "id": "s1"})
    decision = compile_policy(data).evaluate({"tool": "t", "arguments": {"a": "x a@b.example"}})
    assert decision.to_dict() == {
        "verdict": "sanitize",
        "decision": "allow",
        "rule": "rule 0",
        "rule_id": "s1",
        "arguments": {"a": "x [redacted:email]"},
        "reasons": ["rule: rule 0", "redacted: email"],
        "shadow": [],
        "cap_cost_cents": None,
        "errors": [],
    }


# --- compile_policy -----------------------------------------------------------------------


def test_the_compiled_policy_keeps_its_name() -> None:
    assert compile_policy(make_policy({"verdict": "deny"})).name == "test"


def test_a_lenient_compile_reports_the_validation_issues_as_text() -> None:
    data = make_policy({"verdict": "deny", "cap_cost_cents": 5})
    policy = compile_policy(data, strict=False)
    assert policy.issues == ["rules[0].cap_cost_cents: is used only with the `cap_cost` verdict"]
    assert policy.rule_count == 1
