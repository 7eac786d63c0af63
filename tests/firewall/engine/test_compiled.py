"""The compiled index: candidates per glob shape, first-match order across lists, and scale."""

from __future__ import annotations

from typing import Any

import pytest

from firewall.engine import CompiledPolicy, PolicyInvalid, compile_policy, reference_evaluate

from .conftest import policy


def index_of(compiled: CompiledPolicy, stage: str = "tool_call") -> Any:
    return compiled._by_stage[stage]


def candidate_names(compiled: CompiledPolicy, tool: str, stage: str = "tool_call") -> set[str]:
    return {rule.name for bucket in index_of(compiled, stage).candidates(tool) for rule in bucket}


def test_candidates_are_exactly_the_rules_whose_tool_glob_matches() -> None:
    compiled = compile_policy(
        policy(
            {"tool_name_glob": "", "verdict": "audit", "name": "empty"},
            {"tool_name_glob": "*", "verdict": "audit", "name": "star"},
            {"tool_name_glob": "a.b.c", "verdict": "audit", "name": "exact"},
            {"tool_name_glob": "a.*", "verdict": "audit", "name": "prefix a"},
            {"tool_name_glob": "a.b.*", "verdict": "audit", "name": "prefix a.b"},
            {"tool_name_glob": "*.c", "verdict": "audit", "name": "suffix c"},
            {"tool_name_glob": "*.b.c", "verdict": "audit", "name": "suffix b.c"},
            {"tool_name_glob": "*.b.*", "verdict": "audit", "name": "infix b"},
            {"tool_name_glob": "a.*.c", "verdict": "audit", "name": "literal star"},
            {"tool_name_glob": "x.*", "verdict": "audit", "name": "other prefix"},
            {"tool_name_glob": "*.a.b.c", "verdict": "audit", "name": "too long suffix"},
            {"tool_name_glob": "*.a.*", "verdict": "audit", "name": "infix at the edge"},
        )
    )
    assert candidate_names(compiled, "a.b.c") == {
        "empty",
        "star",
        "exact",
        "prefix a",
        "prefix a.b",
        "suffix c",
        "suffix b.c",
        "infix b",
    }
    assert candidate_names(compiled, "a.*.c") == {
        "empty",
        "star",
        "literal star",
        "prefix a",
        "suffix c",
    }


def test_first_match_order_holds_across_index_lists() -> None:
    data = policy(
        {"tool_name_glob": "shell.exec", "verdict": "deny", "name": "exact", "priority": 30},
        {"tool_name_glob": "*.exec", "verdict": "audit", "name": "suffix", "priority": 20},
        {
            "tool_name_glob": "shell.*",
            "verdict": "require_approval",
            "name": "prefix",
            "priority": 25,
        },
        {"tool_name_glob": "*", "verdict": "allow", "name": "any", "priority": 40},
    )
    assert compile_policy(data).evaluate({"tool": "shell.exec"}).rule == "suffix"
    assert reference_evaluate(data, {"tool": "shell.exec"}).rule == "suffix"


def test_shadow_and_errors_after_the_deciding_rule_in_another_list_are_not_reported() -> None:
    data = policy(
        {"tool_name_glob": "shell.exec", "verdict": "deny", "name": "decides", "priority": 1},
        {"tool_name_glob": "*.exec", "verdict": "audit", "mode": "shadow", "priority": 2},
        {
            "tool_name_glob": "shell.*",
            "verdict": "deny",
            "priority": 3,
            "args_match": [{"path": "$.x", "op": "regex", "value": "(bad"}],
        },
    )
    decision = compile_policy(data, strict=False).evaluate({"tool": "shell.exec"})
    assert (decision.rule, decision.shadow, decision.errors) == ("decides", [], [])


def test_rules_are_indexed_by_stage() -> None:
    compiled = compile_policy(
        policy(
            {"stage": "egress", "verdict": "deny", "name": "egress"},
            {"stage": "", "verdict": "audit", "name": "all"},
        )
    )
    assert candidate_names(compiled, "x", "tool_call") == {"all"}
    assert candidate_names(compiled, "x", "egress") == {"egress", "all"}


def test_tool_names_with_many_dots_use_the_infix_set() -> None:
    data = policy(
        {"tool_name_glob": "*.shell.*", "verdict": "deny", "name": "infix"},
        {"tool_name_glob": "*.q.r.*", "verdict": "audit", "name": "infix 2"},
    )
    compiled = compile_policy(data)
    long_name = ".".join(["a"] * 20 + ["shell"] + ["b"] * 5)
    assert compiled.evaluate({"tool": long_name}).rule == "infix"
    assert index_of(compiled).infix_set is not None
    assert compiled.evaluate({"tool": ".".join(["shell"] * 20)}).rule == "infix"
    assert compiled.evaluate({"tool": "shell." + ".".join(["a"] * 20)}).rule is None


def test_the_candidates_of_a_call_do_not_grow_with_unrelated_rules() -> None:
    rules = [{"tool_name_glob": f"srv{i}.tool{i}", "verdict": "deny"} for i in range(5000)]
    rules += [{"tool_name_glob": f"srv{i}.*", "verdict": "audit"} for i in range(2000)]
    rules += [{"tool_name_glob": f"*.verb{i}", "verdict": "audit"} for i in range(2000)]
    compiled = compile_policy(policy(*rules))
    buckets = index_of(compiled).candidates("srv7.tool7")
    assert sum(len(bucket) for bucket in buckets) == 2
    assert compiled.evaluate({"tool": "srv7.tool7"}).verdict == "deny"
    assert compiled.evaluate({"tool": "srv4000.verb3"}).verdict == "audit"


def test_compile_policy_raises_policy_invalid_naming_the_first_issue() -> None:
    with pytest.raises(PolicyInvalid, match=r"policy is invalid: rules\[0\].verdict"):
        compile_policy(policy({"verdict": "nah"}, {"verdict": "nah", "name": "x"}))


def test_a_strict_compile_of_a_valid_policy_has_no_issues() -> None:
    compiled = compile_policy(policy({"verdict": "deny"}))
    assert compiled.issues == [] and compiled.rule_count == 1


def test_candidates_are_remembered_per_tool_name_within_bounds() -> None:
    compiled = compile_policy(policy({"tool_name_glob": "a.*", "verdict": "deny"}))
    index = index_of(compiled)
    index._capacity = 2
    for name in ("a.x", "a.x", "a.y"):
        assert compiled.evaluate({"tool": name}).verdict == "deny"
    assert set(index._seen) == {"a.x", "a.y"}
    assert compiled.evaluate({"tool": "a.z"}).verdict == "deny"
    assert len(index._seen) <= 2
    long_name = "a." + "x" * 300
    assert compiled.evaluate({"tool": long_name}).verdict == "deny"
    assert long_name not in index._seen


def test_tool_names_that_find_the_same_rules_share_one_plan() -> None:
    compiled = compile_policy(
        policy(
            {"tool_name_glob": "a.*", "verdict": "deny"},
            {"name": "b", "tool_name_glob": "b.x", "verdict": "audit"},
        )
    )
    index = index_of(compiled)
    for name in ("a.x", "a.y", "b.x", "c.x", "d.y"):
        compiled.evaluate({"tool": name})
    assert index._seen["a.x"] is index._seen["a.y"]
    assert index._seen["c.x"] is index._seen["d.y"]
    assert index._seen["a.x"] is not index._seen["b.x"]
    assert index._seen["a.x"] is not index._seen["c.x"]
    assert len(index._plans) == 3
    assert compiled.evaluate({"tool": "a.q"}).verdict == "deny"
    assert compiled.evaluate({"tool": "b.x"}).verdict == "audit"
    assert compiled.evaluate({"tool": "c.q"}).verdict == "allow"


def test_the_shared_plans_are_bounded_too() -> None:
    compiled = compile_policy(
        policy(*({"name": f"r{n}", "tool_name_glob": f"t{n}", "verdict": "deny"} for n in range(5)))
    )
    index = index_of(compiled)
    index._capacity = 2
    for n in range(5):
        assert compiled.evaluate({"tool": f"t{n}"}).verdict == "deny"
        assert len(index._plans) <= 2 and len(index._seen) <= 2
    assert compiled.evaluate({"tool": "t0"}).rule == "r0"


def test_at_least_8192_tool_names_are_remembered() -> None:
    index = index_of(compile_policy(policy({"tool_name_glob": "a.*", "verdict": "deny"})))
    assert index._capacity == 8192


def test_a_policy_without_staged_rules_builds_one_index_for_every_stage() -> None:
    compiled = compile_policy(
        policy(
            {"tool_name_glob": "a.*", "verdict": "deny"},
            {"tool_name_glob": "*", "verdict": "audit", "stage": ""},
        )
    )
    indexes = {id(index_of(compiled, stage)) for stage in ("inbound", "tool_call", "egress")}
    assert len(indexes) == 1
    for stage in ("inbound", "tool_call", "egress"):
        assert compiled.evaluate({"tool": "a.x", "stage": stage}).verdict == "deny"
        assert compiled.evaluate({"tool": "b.x", "stage": stage}).verdict == "audit"


def test_a_staged_rule_gives_each_stage_its_own_index() -> None:
    compiled = compile_policy(
        policy(
            {"tool_name_glob": "a.*", "verdict": "deny", "stage": "egress"},
            {"tool_name_glob": "*", "verdict": "audit"},
        )
    )
    indexes = {id(index_of(compiled, stage)) for stage in ("inbound", "tool_call", "egress")}
    assert len(indexes) == 3
    assert compiled.evaluate({"tool": "a.x", "stage": "egress"}).verdict == "deny"
    assert compiled.evaluate({"tool": "a.x", "stage": "tool_call"}).verdict == "audit"
    assert compiled.evaluate({"tool": "a.x", "stage": "inbound"}).verdict == "audit"
