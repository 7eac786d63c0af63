"""JSON values in rules: how deep a rule's own value may nest, as the validator and compiler see it."""

from __future__ import annotations

from typing import Any

import pytest

from firewall.engine import compile_policy, validate_policy
from firewall.engine.errors import PolicyInvalid
from firewall.engine.values import MAX_VALUE_DEPTH, json_problem

from .conftest import policy


def nested(levels: int, leaf: Any = "x") -> Any:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def eq_rule(value: Any) -> dict[str, Any]:
    return {
        "tool_name_glob": "t",
        "args_match": [{"path": "$.x", "op": "eq", "value": value}],
        "verdict": "deny",
    }


def test_a_value_nested_as_deep_as_the_limit_is_a_rule_value() -> None:
    value = nested(MAX_VALUE_DEPTH)
    assert json_problem(value) is None
    data = policy(eq_rule(value))
    assert validate_policy(data) == []
    decision = compile_policy(data).evaluate({"tool": "t", "arguments": {"x": value}})
    assert decision.verdict == "deny"


def test_a_value_nested_one_level_deeper_is_refused_with_the_limit_named() -> None:
    value = nested(MAX_VALUE_DEPTH + 1)
    assert json_problem(value) == f"nests deeper than {MAX_VALUE_DEPTH} levels"
    issues = [str(issue) for issue in validate_policy(policy(eq_rule(value)))]
    assert issues == [f"rules[0].args_match[0].value: nests deeper than {MAX_VALUE_DEPTH} levels"]
    with pytest.raises(PolicyInvalid):
        compile_policy(policy(eq_rule(value)))


def test_objects_count_their_levels_as_arrays_do() -> None:
    inside: Any = 1
    for _ in range(MAX_VALUE_DEPTH):
        inside = {"k": inside}
    assert json_problem(inside) is None
    assert json_problem({"k": inside}) == f"nests deeper than {MAX_VALUE_DEPTH} levels"
