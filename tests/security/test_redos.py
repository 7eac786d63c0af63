"""Catastrophic regular expressions: every pattern an author writes runs on RE2, in linear time.

The attacker's pattern is `^(a+)+$` and their text thirty `a`s and a `!`: Python's backtracking
engine took a minute per call on it. Here 25 `a`s are enough to take seconds on a backtracking
engine, while RE2 answers in microseconds; each test allows half a second.
"""

from __future__ import annotations

import time

import pytest

from firewall import engine as firewall
from guard.engine import CatalogueInvalid, ToolCheck, load_catalogue

EVIL = "^(a+)+$"
TEXT = "a" * 25 + "!"
KEY = b"a key for the attack tests, long enough to sign"
BUDGET = 0.5


def catalogue(parameters: dict) -> dict:
    return {
        "agents": {"desk": {"tools": ["run_code"]}},
        "tools": [
            {"name": "look_up", "kind": "read"},
            {"name": "list_files", "kind": "read"},
            {"name": "run_code", "kind": "read", "parameters": parameters},
        ],
    }


def checked(parameters: dict, arguments: dict):
    check = ToolCheck(load_catalogue(catalogue(parameters)), key=KEY)
    call = {"tool": "run_code", "agent": "desk", "arguments": arguments}
    call["origins"] = {name: "typed" for name in arguments}
    started = time.perf_counter()
    decision = check.check(call, session=check.new_history("s"))
    return decision, time.perf_counter() - started


def test_a_catastrophic_schema_pattern_answers_in_linear_time():
    parameters = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": EVIL}},
        "required": ["code"],
    }
    decision, took = checked(parameters, {"code": TEXT})
    assert decision.reasons == ("argument_schema",)
    assert took < BUDGET


def test_a_catastrophic_pattern_behind_a_keyword_the_fast_path_leaves_answers_in_linear_time():
    # `format` sends the schema to `jsonschema`, whose own `pattern` would backtrack.
    parameters = {
        "type": "object",
        "properties": {"code": {"type": "string", "format": "email", "pattern": EVIL}},
    }
    decision, took = checked(parameters, {"code": TEXT})
    assert decision.reasons == ("argument_schema",)
    assert took < BUDGET


def test_a_catastrophic_pattern_property_answers_in_linear_time():
    parameters = {
        "type": "object",
        "patternProperties": {EVIL: {"type": "integer"}},
    }
    decision, took = checked(parameters, {TEXT: 1})
    assert decision.decision == "allow"
    assert took < BUDGET


def test_an_argument_name_read_against_additional_properties_answers_in_linear_time():
    parameters = {
        "type": "object",
        "patternProperties": {EVIL: {"type": "integer"}},
        "additionalProperties": False,
    }
    decision, took = checked(parameters, {TEXT: 1})
    assert decision.reasons == ("argument_schema",)
    assert took < BUDGET


def test_an_argument_name_read_against_unevaluated_properties_answers_in_linear_time():
    parameters = {
        "type": "object",
        "patternProperties": {EVIL: {"type": "integer"}},
        "unevaluatedProperties": False,
    }
    decision, took = checked(parameters, {TEXT: 1})
    assert decision.reasons == ("argument_schema",)
    assert took < BUDGET


@pytest.mark.parametrize(
    ("pattern", "where"),
    [
        ("(a)\\1", "tools[2].parameters.properties.code.pattern"),
        ("^(?=admin)", "tools[2].parameters.properties.code.pattern"),
    ],
)
def test_a_pattern_re2_cannot_run_is_refused_when_the_catalogue_is_loaded(pattern, where):
    parameters = {"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}}
    with pytest.raises(CatalogueInvalid) as caught:
        load_catalogue(catalogue(parameters))
    paths = [issue.path for issue in caught.value.issues]
    assert paths == [where]
    assert f"`{pattern}`" in caught.value.issues[0].message


def test_a_pattern_property_re2_cannot_run_is_refused_with_its_path():
    parameters = {"type": "object", "patternProperties": {"(?<!x)y": {"type": "string"}}}
    with pytest.raises(CatalogueInvalid) as caught:
        load_catalogue(catalogue(parameters))
    assert [issue.path for issue in caught.value.issues] == [
        "tools[2].parameters.patternProperties"
    ]


def test_a_result_schema_pattern_re2_cannot_run_is_refused_with_its_path():
    data = catalogue({"type": "object"})
    data["tools"][2]["result_schema"] = {"properties": {"out": {"pattern": "(x)\\1"}}}
    with pytest.raises(CatalogueInvalid) as caught:
        load_catalogue(data)
    assert [issue.path for issue in caught.value.issues] == [
        "tools[2].result_schema.properties.out.pattern"
    ]


def test_a_property_named_pattern_is_an_argument_not_a_keyword():
    parameters = {"type": "object", "properties": {"pattern": {"type": "string"}}}
    assert "run_code" in load_catalogue(catalogue(parameters)).tools


def firewall_policy(rule: dict) -> firewall.CompiledPolicy:
    policy = {"name": "p", "default_verdict": "allow", "rules": [rule]}
    assert firewall.validate_policy(policy) == []
    return firewall.compile_policy(policy)


def test_a_catastrophic_firewall_clause_answers_in_linear_time():
    policy = firewall_policy(
        {
            "priority": 1,
            "name": "evil",
            "args_match": [{"path": "$.code", "op": "regex", "value": EVIL}],
            "verdict": "deny",
        }
    )
    started = time.perf_counter()
    decision = policy.evaluate({"tool": "run_code", "arguments": {"code": TEXT}})
    assert decision.verdict == "allow"
    assert time.perf_counter() - started < BUDGET


def test_a_catastrophic_sanitize_pattern_answers_in_linear_time():
    policy = firewall_policy(
        {
            "priority": 1,
            "name": "scrub",
            "verdict": "sanitize",
            "sanitize": {"patterns": ["(a+)+b"]},
        }
    )
    started = time.perf_counter()
    decision = policy.evaluate({"tool": "run_code", "arguments": {"code": TEXT}})
    assert decision.arguments == {"code": TEXT}
    assert time.perf_counter() - started < BUDGET


def test_a_fact_source_padded_with_spaces_is_refused_in_linear_time():
    # `from` is matched by a pattern whose lazy value is quadratic in a run of spaces.
    data = catalogue({"type": "object"})
    data["facts"] = {"paid": {"from": "look_up.status == x" + " " * 20_000 + "y"}}
    started = time.perf_counter()
    with pytest.raises(CatalogueInvalid) as caught:
        load_catalogue(data)
    assert time.perf_counter() - started < BUDGET
    assert [issue.path for issue in caught.value.issues] == ["facts.paid.from"]
