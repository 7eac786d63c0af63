"""Exact behaviour of the lenient loader (`firewall.engine.rules`): the sentence each left-out
rule is listed with, the default's and the policy's own errors, where a broken part of a kept
rule is said to be, the order of rules of one priority, and what `validated` skips.

The loader's messages reach a policy's `issues` and a decision's `errors` verbatim, so they are
pinned word for word.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from firewall.engine.rules import LoadedPolicy, _join, content_problem, load_policy


def rule(**fields: Any) -> dict[str, Any]:
    """A sound deny rule named `r` at priority 10, with the given fields over it."""
    return {"name": "r", "priority": 10, "verdict": "deny", **fields}


def issues_of(*raw_rules: Any) -> list[str]:
    return load_policy({"name": "p", "default_verdict": "allow", "rules": list(raw_rules)}).issues


def loaded(**fields: Any) -> Any:
    """The one loaded rule of a policy around `rule(**fields)`."""
    policy = load_policy({"name": "p", "default_verdict": "allow", "rules": [rule(**fields)]})
    assert policy.issues == []
    (only,) = policy.rules
    return only


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (5, "not an object"),
        (rule(priority="1"), "`priority` is not an integer"),
        (rule(id=""), "`id` is not an integer or a non-empty string"),
        (rule(id=True), "`id` is not an integer or a non-empty string"),
        (rule(id=1.5), "`id` is not an integer or a non-empty string"),
        (rule(name=5), "`name` is not a string"),
        (rule(enabled="yes"), "`enabled` is not a boolean"),
        (rule(mode="loud"), "`mode` is not `enforce` or `shadow`"),
        (rule(stage="outbound"), "`stage` is not a stage"),
        (rule(tool_name_glob=5), "`tool_name_glob` is not a string"),
        (rule(skill_glob=["a.*"]), "`skill_glob` is not a string"),
        (rule(args_match="x"), "`args_match` is not a list"),
        (rule(verdict="block"), "`verdict` is not a verdict"),
    ],
)
def test_a_rule_whose_shape_cannot_be_read_is_left_out_with_this_sentence(
    raw: Any, problem: str
) -> None:
    assert issues_of(rule(name="kept"), raw) == [f"rules[1]: left out: {problem}"]


@pytest.mark.parametrize(
    "fields",
    [
        {"id": 7},
        {"id": "a"},
        {"stage": ""},
        {"stage": None},
        {"stage": "egress"},
        {"mode": "shadow"},
        {"tool_name_glob": None, "skill_glob": None, "args_match": None},
    ],
)
def test_a_sound_shape_is_kept(fields: dict[str, Any]) -> None:
    assert loaded(**fields).name == "r"


def test_an_empty_stage_and_missing_globs_load_as_empty_strings() -> None:
    kept = loaded(stage="", tool_name_glob=None)
    assert (kept.stage, kept.tool_glob, kept.skill_glob, kept.clauses) == ("", "", "", [])


def test_a_rule_without_a_mode_enforces_and_a_shadow_rule_is_marked() -> None:
    assert loaded().shadow is False
    assert loaded(mode="shadow").shadow is True
    assert loaded(mode="enforce").shadow is False


def test_a_policy_that_is_not_an_object_loads_nothing_and_says_so() -> None:
    assert load_policy(["rules"]) == LoadedPolicy(
        "", None, "the policy is not a JSON object", [], []
    )


def test_a_name_that_is_not_a_string_reads_as_empty() -> None:
    assert load_policy({"name": 5, "default_verdict": "allow"}).name == ""
    assert load_policy({"default_verdict": "allow"}).name == ""
    assert load_policy({"name": "p", "default_verdict": "allow"}).name == "p"


def test_a_usable_default_has_no_error() -> None:
    policy = load_policy({"name": "p", "default_verdict": "deny"})
    assert (policy.default_verdict, policy.default_error) == ("deny", None)


@pytest.mark.parametrize(
    ("default", "shown"),
    [
        ("block", "block"),
        (None, "None"),
        (5, "5"),
        (Decimal("1"), "Decimal('1')"),
    ],
)
def test_an_unusable_default_is_named_in_the_error(default: Any, shown: str) -> None:
    policy = load_policy({"name": "p", "default_verdict": default})
    assert policy.default_verdict is None
    assert policy.default_error == (
        f"default verdict `{shown}` is not one of allow, audit, deny, require_approval"
    )


def test_missing_rules_load_none_without_an_issue() -> None:
    policy = load_policy({"name": "p", "default_verdict": "allow"})
    assert (policy.rules, policy.issues) == ([], [])
    policy = load_policy({"name": "p", "default_verdict": "allow", "rules": None})
    assert (policy.rules, policy.issues) == ([], [])


def test_rules_that_are_not_a_list_are_one_issue() -> None:
    policy = load_policy({"name": "p", "default_verdict": "allow", "rules": {"r": rule()}})
    assert (policy.rules, policy.issues) == ([], ["rules: not a list, no rule loaded"])


def test_rules_of_one_priority_without_ids_keep_their_file_order() -> None:
    raw = [rule(name="a"), rule(name="b"), rule(name="c", priority=5), rule(name="d")]
    policy = load_policy({"name": "p", "default_verdict": "allow", "rules": raw})
    assert [(r.name, r.rank, r.position) for r in policy.rules] == [
        ("c", 0, 2),
        ("a", 1, 0),
        ("b", 2, 1),
        ("d", 3, 3),
    ]


def test_within_a_priority_integer_ids_come_first_then_string_ids_then_none() -> None:
    raw = [
        rule(name="none"),
        rule(name="s-b", id="b"),
        rule(name="i-9", id=9),
        rule(name="s-a", id="a"),
        rule(name="i-2", id=2),
    ]
    policy = load_policy({"name": "p", "default_verdict": "allow", "rules": raw})
    assert [r.name for r in policy.rules] == ["i-2", "i-9", "s-a", "s-b", "none"]


def test_validated_skips_the_shape_check() -> None:
    data = {"name": "p", "default_verdict": "allow", "rules": [rule(id="")]}
    assert load_policy(data).rules == []
    (kept,) = load_policy(data, validated=True).rules
    assert (kept.id, kept.name) == ("", "r")


def test_disabled_and_sequence_rules_are_left_out_silently() -> None:
    raw = [rule(enabled=False), rule(sequence={"steps": []}), rule(name="kept")]
    policy = load_policy({"name": "p", "default_verdict": "allow", "rules": raw})
    assert ([r.name for r in policy.rules], policy.issues) == (["kept"], [])


@pytest.mark.parametrize(
    ("prefix", "field_name", "joined"),
    [
        ("egress", "", "egress"),
        ("egress", "deny", "egress.deny"),
        ("args_match[0]", "[1]", "args_match[0][1]"),
        ("sanitize", "presets[0]", "sanitize.presets[0]"),
    ],
)
def test_where_a_problem_is_said_to_be(prefix: str, field_name: str, joined: str) -> None:
    assert _join(prefix, field_name) == joined


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({}, None),
        (
            {"args_match": [{"path": "$.a", "op": "eq", "value": 1}, 5]},
            "args_match[1]: must be an object with `path`, `op` and `value`",
        ),
        (
            {"args_match": [{"path": "$.a", "op": "bogus", "value": 1}], "egress": 5},
            "args_match[0].op: unknown operator `bogus` (known: eq, neq, in, not_in, contains, "
            "starts_with, ends_with, regex, cidr, exists, gt, gte, lt, lte)",
        ),
        ({"egress": 5}, "egress: must be an object with `allow` and/or `deny` lists"),
        (
            {"egress": {"deny": 5}},
            "egress.deny: must be a list of CIDRs, IP addresses or hostnames",
        ),
        ({"egress": {"deny": ["10.0.0.0/8"]}}, None),
        (
            {"verdict": "sanitize"},
            "sanitize: is required for the `sanitize` verdict",
        ),
        (
            {"verdict": "sanitize", "sanitize": 5},
            "sanitize: must be an object with `presets` and/or `patterns`",
        ),
        (
            {"verdict": "sanitize", "sanitize": {"presets": 5}},
            "sanitize.presets: must be a list of preset names",
        ),
        ({"verdict": "sanitize", "sanitize": {"presets": ["email"]}}, None),
        (
            {"verdict": "cap_cost"},
            "cap_cost_cents: must be a positive integer for the `cap_cost` verdict",
        ),
        (
            {"verdict": "cap_cost", "cap_cost_cents": 0},
            "cap_cost_cents: must be a positive integer for the `cap_cost` verdict",
        ),
        (
            {"verdict": "cap_cost", "cap_cost_cents": True},
            "cap_cost_cents: must be a positive integer for the `cap_cost` verdict",
        ),
        ({"verdict": "cap_cost", "cap_cost_cents": 1}, None),
        ({"verdict": "deny", "cap_cost_cents": 0}, None),
    ],
)
def test_the_first_broken_part_of_a_kept_rule(fields: dict[str, Any], problem: str | None) -> None:
    assert content_problem(loaded(**fields)) == problem
