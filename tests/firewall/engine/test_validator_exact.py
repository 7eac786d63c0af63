"""The validator, issue by issue: exact field paths and messages, and every limit at its edge.

Each invalid input is checked against the whole list of issues it yields (path and message,
nothing more, nothing less), so that a wrong path, a reworded message, a lost issue or an extra
one all fail. Each size limit is checked twice: a document exactly at the limit is accepted, one
past it is refused with the limit's own message.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from firewall.engine import ValidationIssue, validate_policy, validate_rule
from firewall.engine.validator import (
    MAX_CLAUSE_VALUES,
    MAX_CLAUSES_PER_RULE,
    MAX_EGRESS_ENTRIES,
    MAX_ID_LENGTH,
    MAX_NAME_LENGTH,
    MAX_NOTES_LENGTH,
    MAX_RULES_PER_POLICY,
    MAX_SANITIZE_PATTERNS,
)
from firewall.engine.vocabulary import PRIORITY_MAX, PRIORITY_MIN

VERDICTS_SHOWN = "allow, audit, deny, sanitize, require_approval, cap_cost"
SEQUENCE = {"steps": [{"tool_glob": "a.*"}, {"tool_glob": "b.*"}], "window_seconds": 60}


def rule(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"priority": 1, "name": "r", "verdict": "deny"}
    base.update(fields)
    return {key: value for key, value in base.items() if value is not ...}


def policy(rules: list[Any], **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "p", "default_verdict": "allow", "rules": rules}
    base.update(fields)
    return base


def pairs(issues: list[ValidationIssue]) -> list[tuple[str, str]]:
    return [(issue.path, issue.message) for issue in issues]


def in_clause(count: int) -> dict[str, Any]:
    return {"path": "$.x", "op": "in", "value": [str(n) for n in range(count)]}


def hosts(count: int) -> list[str]:
    return [f"h{n}.example.com" for n in range(count)]


# --- whole documents that are not objects -------------------------------------------------


@pytest.mark.parametrize("data", [None, [], "rule", 3])
def test_a_rule_that_is_not_an_object_is_one_issue_at_the_rule_path(data: object) -> None:
    assert pairs(validate_rule(data)) == [("", "a rule must be a JSON object")]
    assert pairs(validate_rule(data, "rules[4]")) == [("rules[4]", "a rule must be a JSON object")]


@pytest.mark.parametrize("data", [None, [], "policy", 3])
def test_a_policy_that_is_not_an_object_is_one_issue_with_an_empty_path(data: object) -> None:
    issues = validate_policy(data)
    assert pairs(issues) == [("", "a policy must be a JSON object")]
    assert str(issues[0]) == "a policy must be a JSON object"


# --- paths ---------------------------------------------------------------------------------


def test_an_unknown_field_named_like_an_index_is_joined_without_a_dot() -> None:
    issues = validate_policy(policy([rule(**{"[x]": 1})]))
    assert pairs(issues) == [("rules[0][x]", "unknown field")]


def test_an_unknown_field_is_joined_to_the_rule_path_with_a_dot() -> None:
    issues = validate_policy(policy([rule(colour="red")]))
    assert pairs(issues) == [("rules[0].colour", "unknown field")]


# --- ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize("rule_id", [0, 1, "a", "x" * MAX_ID_LENGTH])
def test_an_id_of_zero_or_up_to_the_maximum_length_is_accepted(rule_id: object) -> None:
    assert validate_rule(rule(id=rule_id)) == []


def test_a_negative_id_is_refused_at_the_id_path() -> None:
    assert pairs(validate_rule(rule(id=-1))) == [("id", "must not be negative")]


@pytest.mark.parametrize("rule_id", ["", "x" * (MAX_ID_LENGTH + 1), "a\n", "\tb"])
def test_an_empty_long_or_unprintable_string_id_is_refused(rule_id: str) -> None:
    assert pairs(validate_rule(rule(id=rule_id))) == [
        ("id", f"must be 1 to {MAX_ID_LENGTH} printable characters")
    ]


# --- names ---------------------------------------------------------------------------------


def test_a_name_of_the_maximum_length_is_accepted_and_one_more_is_refused() -> None:
    assert validate_rule(rule(name="n" * MAX_NAME_LENGTH)) == []
    assert pairs(validate_rule(rule(name="n" * (MAX_NAME_LENGTH + 1)))) == [
        ("name", f"the name must be at most {MAX_NAME_LENGTH} characters")
    ]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("  ", "the name must not be blank"),
        (7, "the name must be a string"),
        ("a\nb", "the name must not contain control characters"),
        ("n" * (MAX_NAME_LENGTH + 1), f"the name must be at most {MAX_NAME_LENGTH} characters"),
    ],
)
def test_a_bad_policy_name_is_refused_with_the_name_message(name: object, message: str) -> None:
    assert pairs(validate_policy(policy([], name=name))) == [("name", message)]


def test_a_policy_name_of_the_maximum_length_is_accepted() -> None:
    assert validate_policy(policy([], name="n" * MAX_NAME_LENGTH)) == []


# --- priority ------------------------------------------------------------------------------


@pytest.mark.parametrize("priority", [PRIORITY_MIN, 0, PRIORITY_MAX])
def test_a_priority_at_either_bound_is_accepted(priority: int) -> None:
    assert validate_rule(rule(priority=priority)) == []


@pytest.mark.parametrize("priority", [PRIORITY_MIN - 1, PRIORITY_MAX + 1])
def test_a_priority_one_past_either_bound_is_refused(priority: int) -> None:
    assert pairs(validate_rule(rule(priority=priority))) == [
        ("priority", f"must be between {PRIORITY_MIN} and {PRIORITY_MAX}")
    ]


# --- stage ---------------------------------------------------------------------------------


def test_an_unknown_stage_is_refused_with_the_stages_listed() -> None:
    assert pairs(validate_rule(rule(stage="later"))) == [
        ("stage", "must be one of inbound, tool_call, egress, or empty for every stage")
    ]


def test_an_unknown_stage_does_not_also_refuse_the_egress_object_for_its_stage() -> None:
    issues = validate_rule(rule(stage="later", egress={"deny": ["10.0.0.0/8"]}))
    assert pairs(issues) == [
        ("stage", "must be one of inbound, tool_call, egress, or empty for every stage")
    ]


# --- clauses -------------------------------------------------------------------------------


def test_the_maximum_number_of_clauses_is_accepted_and_one_more_is_refused() -> None:
    clause = {"path": "$.x", "op": "eq", "value": 1}
    assert validate_rule(rule(args_match=[clause] * MAX_CLAUSES_PER_RULE)) == []
    over = MAX_CLAUSES_PER_RULE + 1
    assert pairs(validate_rule(rule(args_match=[clause] * over))) == [
        ("args_match", f"holds {over} clauses, more than {MAX_CLAUSES_PER_RULE}")
    ]


def test_the_maximum_number_of_in_values_is_accepted_and_one_more_is_refused() -> None:
    assert validate_rule(rule(args_match=[in_clause(MAX_CLAUSE_VALUES)])) == []
    over = MAX_CLAUSE_VALUES + 1
    assert pairs(validate_rule(rule(args_match=[in_clause(over)]))) == [
        ("args_match[0].value", f"holds {over} values, more than {MAX_CLAUSE_VALUES}")
    ]


def test_a_clause_with_too_many_values_does_not_stop_the_next_clause_being_checked() -> None:
    over = MAX_CLAUSE_VALUES + 1
    bad = {"path": "$.ip", "op": "cidr", "value": "nope"}
    issues = validate_rule(rule(args_match=[in_clause(over), bad], stage="tool_call"))
    assert pairs(issues) == [
        ("args_match[0].value", f"holds {over} values, more than {MAX_CLAUSE_VALUES}"),
        ("args_match[1].value", "not a valid CIDR"),
    ]


def test_a_clause_that_is_not_an_object_is_reported_without_a_crash() -> None:
    issues = validate_rule(rule(args_match=["eq"]))
    assert [path for path, _ in pairs(issues)] == ["args_match[0]"]


# --- verdict -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verdict", "shown"),
    [("maybe", "maybe"), (5, "5"), (None, "None"), (datetime.date(2020, 1, 2), "2020-01-02")],
)
def test_an_unknown_verdict_is_refused_with_the_verdicts_listed(
    verdict: object, shown: str
) -> None:
    if isinstance(verdict, datetime.date):
        shown = repr(verdict)
    assert pairs(validate_rule(rule(verdict=verdict))) == [
        ("verdict", f"unknown verdict `{shown}` (known: {VERDICTS_SHOWN})")
    ]


def test_an_unknown_verdict_does_not_also_refuse_a_sanitize_payload() -> None:
    issues = validate_rule(rule(verdict="maybe", sanitize={"presets": ["email"]}))
    assert pairs(issues) == [("verdict", f"unknown verdict `maybe` (known: {VERDICTS_SHOWN})")]


def test_an_unknown_verdict_does_not_also_refuse_a_sequence_rule_verdict() -> None:
    issues = validate_rule(rule(verdict="maybe", sequence=SEQUENCE))
    assert pairs(issues) == [("verdict", f"unknown verdict `maybe` (known: {VERDICTS_SHOWN})")]


def test_an_egress_object_of_an_unknown_verdict_is_read_as_a_deny_rule() -> None:
    issues = validate_rule(rule(verdict="maybe", stage="egress", egress={"allow": ["a.com"]}))
    assert pairs(issues) == [
        ("verdict", f"unknown verdict `maybe` (known: {VERDICTS_SHOWN})"),
        ("egress.deny", "a `deny` rule needs entries here to say what it blocks"),
    ]


# --- sanitize ------------------------------------------------------------------------------


def sanitize_rule(count: int) -> dict[str, Any]:
    return rule(verdict="sanitize", sanitize={"patterns": [f"X{n}" for n in range(count)]})


def test_the_maximum_number_of_patterns_is_accepted_and_one_more_is_refused() -> None:
    assert validate_rule(sanitize_rule(MAX_SANITIZE_PATTERNS)) == []
    over = MAX_SANITIZE_PATTERNS + 1
    assert pairs(validate_rule(sanitize_rule(over))) == [
        ("sanitize.patterns", f"holds {over} patterns, more than {MAX_SANITIZE_PATTERNS}")
    ]


def test_too_many_patterns_are_refused_before_any_pattern_is_read() -> None:
    over = MAX_SANITIZE_PATTERNS + 1
    issues = validate_rule(rule(verdict="sanitize", sanitize={"patterns": ["("] * over}))
    assert pairs(issues) == [
        ("sanitize.patterns", f"holds {over} patterns, more than {MAX_SANITIZE_PATTERNS}")
    ]


def test_a_sanitize_payload_that_is_not_an_object_is_reported_at_its_path() -> None:
    issues = validate_rule(rule(verdict="sanitize", sanitize="email"))
    assert pairs(issues) == [("sanitize", "must be an object with `presets` and/or `patterns`")]


# --- cap_cost ------------------------------------------------------------------------------


@pytest.mark.parametrize("cents", [1, 2, PRIORITY_MAX])
def test_a_cap_from_one_cent_to_the_maximum_is_accepted(cents: int) -> None:
    assert validate_rule(rule(verdict="cap_cost", cap_cost_cents=cents)) == []


@pytest.mark.parametrize("cents", [0, -1, 1.5, True])
def test_a_cap_that_is_not_a_positive_integer_is_refused(cents: object) -> None:
    assert pairs(validate_rule(rule(verdict="cap_cost", cap_cost_cents=cents))) == [
        ("cap_cost_cents", "must be a positive integer")
    ]


def test_a_cap_one_past_the_maximum_is_refused() -> None:
    issues = validate_rule(rule(verdict="cap_cost", cap_cost_cents=PRIORITY_MAX + 1))
    assert pairs(issues) == [("cap_cost_cents", f"must be at most {PRIORITY_MAX}")]


# --- egress --------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["allow", "deny"])
def test_the_maximum_number_of_egress_entries_is_accepted(key: str) -> None:
    lists = {"allow": hosts(1), "deny": hosts(1)}
    lists[key] = hosts(MAX_EGRESS_ENTRIES)
    assert validate_rule(rule(stage="egress", egress=lists)) == []


@pytest.mark.parametrize("key", ["allow", "deny"])
def test_one_egress_entry_past_the_maximum_is_refused_at_that_list(key: str) -> None:
    over = MAX_EGRESS_ENTRIES + 1
    lists = {"allow": hosts(1), "deny": hosts(1)}
    lists[key] = ["not a host!"] * over
    assert pairs(validate_rule(rule(stage="egress", egress=lists))) == [
        (f"egress.{key}", f"holds {over} entries, more than {MAX_EGRESS_ENTRIES}")
    ]


def test_both_egress_lists_past_the_maximum_are_both_refused() -> None:
    over = MAX_EGRESS_ENTRIES + 1
    lists = {"allow": hosts(over), "deny": hosts(over)}
    assert pairs(validate_rule(rule(stage="egress", egress=lists))) == [
        ("egress.allow", f"holds {over} entries, more than {MAX_EGRESS_ENTRIES}"),
        ("egress.deny", f"holds {over} entries, more than {MAX_EGRESS_ENTRIES}"),
    ]


def test_an_egress_payload_that_is_not_an_object_is_reported_at_its_path() -> None:
    issues = validate_rule(rule(stage="egress", egress=["10.0.0.0/8"]))
    assert pairs(issues) == [("egress", "must be an object with `allow` and/or `deny` lists")]


# --- notes ---------------------------------------------------------------------------------


def test_notes_of_the_maximum_length_are_accepted_and_one_more_is_refused() -> None:
    assert validate_rule(rule(notes="n" * MAX_NOTES_LENGTH)) == []
    assert pairs(validate_rule(rule(notes="n" * (MAX_NOTES_LENGTH + 1)))) == [
        ("notes", f"must be at most {MAX_NOTES_LENGTH} characters")
    ]


# --- sequences -----------------------------------------------------------------------------


def test_a_sequence_rule_with_another_verdict_is_refused_with_the_verdicts_listed() -> None:
    issues = validate_rule(rule(verdict="allow", sequence=SEQUENCE))
    assert pairs(issues) == [
        ("verdict", "a sequence rule's verdict must be one of audit, deny, require_approval")
    ]


@pytest.mark.parametrize("key", ["tool_name_glob", "skill_glob"])
@pytest.mark.parametrize("glob", [..., "", "*"])
def test_a_sequence_rule_accepts_an_empty_or_star_glob(key: str, glob: object) -> None:
    assert validate_rule(rule(sequence=SEQUENCE, **{key: glob})) == []


@pytest.mark.parametrize("key", ["tool_name_glob", "skill_glob"])
def test_a_sequence_rule_refuses_any_other_glob(key: str) -> None:
    issues = validate_rule(rule(sequence=SEQUENCE, **{key: "crm.*"}))
    assert pairs(issues) == [(key, "a sequence rule matches tools through its steps' globs")]


def test_a_sequence_rule_refuses_egress_lists() -> None:
    issues = validate_rule(rule(sequence=SEQUENCE, egress={"deny": ["10.0.0.0/8"]}))
    assert pairs(issues) == [
        ("egress", "egress lists apply only to rules on the `egress` stage"),
        ("egress", "a sequence rule has no egress lists (use `egress: true` on a step)"),
    ]


# --- policies ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("default", "hint"),
    [
        ("sanitize", " (it needs a rule's payload)"),
        ("cap_cost", " (it needs a rule's payload)"),
        ("never", " (known: allow, audit, deny, require_approval)"),
    ],
)
def test_a_default_verdict_that_cannot_be_a_default_gets_the_right_hint(
    default: str, hint: str
) -> None:
    assert pairs(validate_policy(policy([], default_verdict=default))) == [
        ("default_verdict", f"`{default}` cannot be the default verdict{hint}")
    ]


def test_the_maximum_number_of_rules_is_accepted_and_one_more_is_refused() -> None:
    rules = [
        {"priority": 1, "name": f"r{n}", "verdict": "deny"} for n in range(MAX_RULES_PER_POLICY)
    ]
    assert validate_policy(policy(rules)) == []
    rules.append({"priority": 1, "name": "last", "verdict": "deny"})
    over = MAX_RULES_PER_POLICY + 1
    assert pairs(validate_policy(policy(rules))) == [
        ("rules", f"a policy holds at most {MAX_RULES_PER_POLICY} rules, not {over}")
    ]


def test_a_rule_that_is_not_an_object_does_not_stop_the_duplicate_checks() -> None:
    rules = [rule(name="a", id=1), "junk", rule(name="a", id=1)]
    assert pairs(validate_policy(policy(rules))) == [
        ("rules[1]", "a rule must be a JSON object"),
        ("rules[2].name", "duplicate rule name `a` (see rules[0])"),
        ("rules[2].id", "duplicate rule id `1` (see rules[0])"),
    ]


def test_an_integer_id_and_the_same_digits_as_a_string_are_different_ids() -> None:
    assert validate_policy(policy([rule(name="a", id=1), rule(name="b", id="1")])) == []
