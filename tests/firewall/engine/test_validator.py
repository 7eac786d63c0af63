"""The validator: every refusal, every issue at once, located, and never a crash."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firewall.engine import ValidationIssue, validate_policy, validate_rule

SPEC_POLICY: dict[str, Any] = {
    "name": "production",
    "default_verdict": "allow",
    "rules": [
        {
            "priority": 10,
            "name": "no rm -rf",
            "enabled": True,
            "stage": "tool_call",
            "tool_name_glob": "shell.*",
            "skill_glob": "community.*",
            "args_match": [{"path": "$.command", "op": "regex", "value": "rm\\s+-rf"}],
            "verdict": "deny",
            "notes": "why the author wrote it",
        },
        {
            "priority": 20,
            "name": "scrub",
            "tool_name_glob": "*.send",
            "verdict": "sanitize",
            "sanitize": {"presets": ["email", "credit_card"], "patterns": ["ACME-[0-9]{6}"]},
        },
        {
            "priority": 30,
            "name": "ssrf",
            "stage": "egress",
            "verdict": "deny",
            "egress": {"deny": ["169.254.169.254", "10.0.0.0/8"], "allow": ["10.1.2.3"]},
        },
        {"priority": 40, "name": "budget", "verdict": "cap_cost", "cap_cost_cents": 500},
        {
            "priority": 50,
            "name": "exfil chain",
            "verdict": "audit",
            "sequence": {
                "steps": [
                    {"tool_glob": "crm.read", "min_count": 50},
                    {"tool_glob": "*.export"},
                    {"tool_glob": "*", "egress": True},
                ],
                "window_seconds": 600,
            },
        },
    ],
}


def rule(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"priority": 1, "name": "r", "verdict": "deny"}
    base.update(fields)
    return {key: value for key, value in base.items() if value is not ...}


def messages(issues: list[ValidationIssue]) -> list[str]:
    return [str(issue) for issue in issues]


def test_the_spec_example_policy_is_valid() -> None:
    assert validate_policy(SPEC_POLICY) == []


def test_an_issue_prints_as_path_colon_message() -> None:
    issues = validate_rule(
        rule(
            args_match=[
                {"path": "$.ip", "op": "eq", "value": 1},
                {"path": "$.ip", "op": "cidr", "value": "nope"},
            ]
        )
    )
    assert messages(issues) == ["args_match[1].value: not a valid CIDR"]
    assert issues[0].to_dict() == {"path": "args_match[1].value", "message": "not a valid CIDR"}


def test_rule_paths_are_prefixed_inside_a_policy() -> None:
    data = copy.deepcopy(SPEC_POLICY)
    data["rules"][2]["args_match"] = [
        {"path": "$.a", "op": "eq", "value": 1},
        {"path": "$.ip", "op": "cidr", "value": "300.0.0.0/8"},
    ]
    data["rules"][2]["stage"] = "egress"
    assert messages(validate_policy(data)) == ["rules[2].args_match[1].value: not a valid CIDR"]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"colour": "red"}, "colour: unknown field"),
        (
            {"args_match": [{"path": "$.a", "op": "eq", "value": 1, "x": 1}]},
            "args_match[0].x: unknown field",
        ),
        (
            {"args_match": [{"path": "$.a", "op": "like", "value": 1}]},
            "args_match[0].op: unknown operator `like`",
        ),
        (
            {"args_match": [{"path": "$..a", "op": "eq", "value": 1}]},
            "args_match[0].path: `$..a` is not a path",
        ),
        (
            {"args_match": [{"path": "$.a", "op": "in", "value": "x"}]},
            "args_match[0].value: must be an array for `in`",
        ),
        (
            {"args_match": [{"path": "$.a", "op": "not_in", "value": 3}]},
            "args_match[0].value: must be an array for `not_in`",
        ),
        (
            {"args_match": [{"path": "$.a", "op": "gt", "value": "3"}]},
            "args_match[0].value: must be a number for `gt`",
        ),
        (
            {"args_match": [{"path": "$.a", "op": "gte", "value": False}]},
            "args_match[0].value: must be a number for `gte`",
        ),
        (
            {"args_match": [{"path": "$.a", "op": "regex", "value": "a(?=b)"}]},
            "args_match[0].value: not a valid RE2 regex",
        ),
        (
            {"args_match": [{"path": "$.a", "op": "cidr", "value": "10.0.0.1/8"}]},
            "args_match[0].value: not a valid CIDR: host bits set",
        ),
        ({"args_match": "all"}, "args_match: must be a list of clauses"),
        ({"priority": "10"}, "priority: must be an integer"),
        ({"priority": True}, "priority: must be an integer"),
        ({"priority": 2**40}, "priority: must be between"),
        ({"priority": ...}, "priority: is required"),
        ({"name": ...}, "name: is required"),
        ({"name": "  "}, "name: the name must not be blank"),
        ({"name": 3}, "name: the name must be a string"),
        ({"verdict": "block"}, "verdict: unknown verdict `block`"),
        ({"verdict": ...}, "verdict: is required"),
        ({"stage": "outbound"}, "stage: must be one of"),
        ({"enabled": "yes"}, "enabled: must be `true` or `false`"),
        ({"mode": "dry_run"}, "mode: must be one of enforce, shadow"),
        ({"tool_name_glob": 7}, "tool_name_glob: is not a glob: must be a string"),
        ({"skill_glob": "a b"}, "skill_glob: is not a glob"),
        ({"id": True}, "id: must be an integer or a string"),
        ({"id": ""}, "id: must be 1 to 64 printable characters"),
        ({"notes": 5}, "notes: must be a string"),
        ({"verdict": "sanitize"}, "sanitize: is required for the `sanitize` verdict"),
        ({"verdict": "sanitize", "sanitize": {}}, "sanitize: an empty sanitizer redacts nothing"),
        (
            {"verdict": "sanitize", "sanitize": {"presets": ["iban"]}},
            "sanitize.presets[0]: unknown preset `iban`",
        ),
        (
            {"verdict": "sanitize", "sanitize": {"patterns": ["(x"]}},
            "sanitize.patterns[0]: not a valid RE2 regex",
        ),
        (
            {"verdict": "sanitize", "sanitize": {"presets": ["email"], "keep": 1}},
            "sanitize.keep: unknown field",
        ),
        (
            {"sanitize": {"presets": ["email"]}},
            "sanitize: is used only with the `sanitize` verdict",
        ),
        ({"verdict": "cap_cost"}, "cap_cost_cents: is required for the `cap_cost` verdict"),
        (
            {"verdict": "cap_cost", "cap_cost_cents": 0},
            "cap_cost_cents: must be a positive integer",
        ),
        (
            {"verdict": "cap_cost", "cap_cost_cents": 2.5},
            "cap_cost_cents: must be a positive integer",
        ),
        (
            {"verdict": "cap_cost", "cap_cost_cents": True},
            "cap_cost_cents: must be a positive integer",
        ),
        ({"cap_cost_cents": 100}, "cap_cost_cents: is used only with the `cap_cost` verdict"),
        (
            {"verdict": "cap_cost", "cap_cost_cents": 5, "stage": "egress"},
            "verdict: `cap_cost` does not apply on the `egress` stage",
        ),
        (
            {"egress": {"deny": ["10.0.0.0/8"]}},
            "egress: egress lists apply only to rules on the `egress` stage",
        ),
        (
            {"egress": {"deny": ["10.0.0.0/8"]}, "stage": "tool_call"},
            "egress: egress lists apply only",
        ),
        ({"stage": "egress", "egress": {}}, "egress: must list at least one entry"),
        (
            {"stage": "egress", "egress": {"deny": ["10.0.0.0/33"]}},
            "egress.deny[0]: `10.0.0.0/33` is not a valid CIDR",
        ),
        (
            {"stage": "egress", "egress": {"deny": ["x.example"], "via": []}},
            "egress.via: unknown field",
        ),
        (
            {"stage": "egress", "verdict": "allow", "egress": {"deny": ["x.example"]}},
            "egress.allow: an `allow` rule needs entries",
        ),
    ],
)
def test_each_refusal(fields: dict[str, Any], expected: str) -> None:
    found = messages(validate_rule(rule(**fields)))
    assert any(message.startswith(expected) for message in found), found


SEQUENCE = {"steps": [{"tool_glob": "crm.read", "min_count": 2}, {"tool_glob": "*.export"}]}


@pytest.mark.parametrize(
    ("sequence", "expected"),
    [
        ({"steps": []}, "sequence.steps: must hold at least one step"),
        ({"window_seconds": 5}, "sequence.steps: is required"),
        ({"steps": "crm.read"}, "sequence.steps: must be a list"),
        (
            {"steps": [{"tool_glob": "a", "min_count": 0}]},
            "sequence.steps[0].min_count: must be at least 1",
        ),
        (
            {"steps": [{"tool_glob": "a", "min_count": "2"}]},
            "sequence.steps[0].min_count: must be an integer",
        ),
        (
            {"steps": [{"tool_glob": "a"}], "window_seconds": -1},
            "sequence.window_seconds: must not be negative",
        ),
        (
            {"steps": [{"tool_glob": "a"}], "window_seconds": "1h"},
            "sequence.window_seconds: must be a number",
        ),
        ({"steps": [{"tool_glob": ""}]}, "sequence.steps[0].tool_glob: is not a glob"),
        ({"steps": [{"tool_glob": "crm read"}]}, "sequence.steps[0].tool_glob: is not a glob"),
        ({"steps": [{"tool_glob": 5}]}, "sequence.steps[0].tool_glob: is not a glob"),
        ({"steps": [{}]}, "sequence.steps[0].tool_glob: is required"),
        ({"steps": [{"tool_glob": "a", "count": 2}]}, "sequence.steps[0].count: unknown field"),
        (
            {"steps": [{"tool_glob": "a", "egress": "yes"}]},
            "sequence.steps[0].egress: must be `true` or `false`",
        ),
        ({"steps": [{"tool_glob": "a"}], "every": 1}, "sequence.every: unknown field"),
        (
            {"steps": [{"tool_glob": "a", "min_count": 500}]},
            "sequence.steps: the `min_count`s add up to 500",
        ),
        ("crm.read then export", "sequence: must be an object"),
    ],
)
def test_malformed_sequences_are_refused(sequence: Any, expected: str) -> None:
    found = messages(validate_rule(rule(verdict="audit", sequence=sequence)))
    assert any(message.startswith(expected) for message in found), found


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"verdict": "sanitize", "sanitize": {"presets": ["email"]}},
            "verdict: a sequence rule's verdict",
        ),
        ({"stage": "tool_call"}, "stage: a sequence rule has no stage"),
        ({"tool_name_glob": "crm.*"}, "tool_name_glob: a sequence rule matches tools"),
        (
            {"args_match": [{"path": "$.a", "op": "exists"}]},
            "args_match: a sequence rule has no argument",
        ),
    ],
)
def test_sequence_rules_cannot_carry_inline_conditions(
    fields: dict[str, Any], expected: str
) -> None:
    found = messages(validate_rule(rule(**{"verdict": "audit", "sequence": SEQUENCE, **fields})))
    assert any(message.startswith(expected) for message in found), found


def test_a_valid_sequence_rule_passes() -> None:
    assert validate_rule(rule(verdict="require_approval", sequence=SEQUENCE)) == []


def test_sanitize_on_inbound_is_accepted_because_it_escalates() -> None:
    assert (
        validate_rule(rule(stage="inbound", verdict="sanitize", sanitize={"presets": ["email"]}))
        == []
    )


def test_null_optional_payloads_count_as_absent() -> None:
    assert (
        validate_rule(
            rule(
                id=None, sanitize=None, egress=None, cap_cost_cents=None, sequence=None, notes=None
            )
        )
        == []
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ([], ["a policy must be a JSON object"]),
        (
            {"name": "p", "default_verdict": "allow"},
            ["rules: is required (it may be an empty list)"],
        ),
        (
            {"name": "p", "default_verdict": "allow", "rules": {}},
            ["rules: must be a list of rules"],
        ),
        ({"default_verdict": "allow", "rules": []}, ["name: is required"]),
        ({"name": "p", "rules": []}, ["default_verdict: is required"]),
        (
            {"name": "p", "default_verdict": "maybe", "rules": []},
            [
                "default_verdict: `maybe` cannot be the default verdict (known: allow, audit, deny, require_approval)"
            ],
        ),
        (
            {"name": "p", "default_verdict": "sanitize", "rules": []},
            [
                "default_verdict: `sanitize` cannot be the default verdict (it needs a rule's payload)"
            ],
        ),
        (
            {"name": "p", "default_verdict": "allow", "rules": [], "owner": "x"},
            ["owner: unknown field"],
        ),
        (
            {"name": "p", "default_verdict": "allow", "rules": ["deny all"]},
            ["rules[0]: a rule must be a JSON object"],
        ),
    ],
)
def test_policy_level_refusals(data: Any, expected: list[str]) -> None:
    assert messages(validate_policy(data)) == expected


def test_duplicate_names_and_ids_are_refused() -> None:
    data = {
        "name": "p",
        "default_verdict": "allow",
        "rules": [rule(name="a", id=1), rule(name="b", id=1), rule(name="a", id="1")],
    }
    assert messages(validate_policy(data)) == [
        "rules[1].id: duplicate rule id `1` (see rules[0])",
        "rules[2].name: duplicate rule name `a` (see rules[0])",
    ]


def test_every_issue_is_returned_at_once_in_document_order() -> None:
    data = {
        "name": "",
        "default_verdict": "nope",
        "rules": [
            rule(
                priority="x", verdict="sanitize", sanitize={"presets": ["nope"], "patterns": ["(a"]}
            ),
            rule(name="r", args_match=[{"path": "a", "op": "zz"}], egress={"deny": []}),
        ],
    }
    assert [issue.path for issue in validate_policy(data)] == [
        "name",
        "default_verdict",
        "rules[0].priority",
        "rules[0].sanitize.presets[0]",
        "rules[0].sanitize.patterns[0]",
        "rules[1].args_match[0].path",
        "rules[1].args_match[0].op",
        "rules[1].egress",
        "rules[1].egress",
        "rules[1].name",
    ]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "priority",
                    "verdict",
                    "rules",
                    "args_match",
                    "path",
                    "op",
                    "value",
                    "sanitize",
                    "egress",
                    "allow",
                    "deny",
                    "sequence",
                    "steps",
                    "tool_glob",
                    "min_count",
                    "presets",
                    "patterns",
                    "stage",
                    "id",
                    "x",
                ]
            ),
            children,
            max_size=6,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(data=_json)
def test_validation_never_raises_on_any_json(data: Any) -> None:
    for issue in validate_policy(data):
        assert isinstance(issue, ValidationIssue) and issue.message
    validate_rule(data, "rules[0]")


_mutations = st.tuples(
    st.integers(min_value=0, max_value=4),
    st.sampled_from(sorted({k for r in SPEC_POLICY["rules"] for k in r} | {"value", "op"})),
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.text(max_size=6), st.just([]), st.just({})
    ),
)


@settings(max_examples=200, deadline=None)
@given(mutations=st.lists(_mutations, max_size=4))
def test_validation_never_raises_on_mutated_policies(mutations: list[tuple[int, str, Any]]) -> None:
    data = copy.deepcopy(SPEC_POLICY)
    for index, key, value in mutations:
        data["rules"][index][key] = value
    validate_policy(data)


@pytest.mark.parametrize("char", ["\x00", "\n", "\x7f", "\u200b", "\u2028"])
def test_a_rule_name_with_a_control_or_invisible_character_is_refused(char: str) -> None:
    issues = validate_rule(rule(name=f"bad{char}name"), "rules[0]")
    assert [str(issue) for issue in issues] == [
        "rules[0].name: the name must not contain control characters"
    ]


def test_a_rule_name_may_hold_printable_text_beyond_ascii() -> None:
    assert validate_rule(rule(name="règle née")) == []
