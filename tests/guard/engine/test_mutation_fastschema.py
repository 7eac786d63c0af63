"""Two engines, one answer, at the edges: the fast validator agrees with `jsonschema` exactly there.

`fastschema` promises to accept what `jsonschema` accepts and nothing else; the property test
draws random schemas and values, which seldom land on a bound. These examples sit on each bound
and on the values JSON Schema calls equal (1 and 1.0, arrays and objects by their items).
"""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from guard.engine.fastschema import compile_fast

CASES = [
    ({"minimum": 3}, [3, 2.99, 4]),
    ({"maximum": 3}, [3, 3.01, 2]),
    ({"exclusiveMinimum": 3}, [3, 3.01, 2]),
    ({"exclusiveMaximum": 3}, [3, 2.99, 4]),
    ({"minimum": 3}, ["text", None]),
    ({"minLength": 2}, ["a", "ab", "abc"]),
    ({"maxLength": 2}, ["abc", "ab", "a"]),
    ({"enum": [[1, 2]]}, [[3, 4], [1, 2.0], [1, 2], [2, 1]]),
    ({"enum": [{"a": 1}]}, [{"a": 2}, {"a": 1.0}, {"b": 1}]),
    ({"const": [True, None]}, [[True, None], [1, None], [True, False]]),
    ({"type": "string", "minLength": 2, "maxLength": 3}, ["ab", "a", "abcd", 5]),
    ({"type": "string", "maxLength": 3, "pattern": "^a"}, ["ab", "b", "abcd"]),
    (
        {
            "type": "string",
            "minLength": 2,
            "maxLength": 3,
            "pattern": "^a",
            "enum": ["ab", "abc", "b"],
        },
        ["ab", "abc", "a", "b", "abcd", "ac"],
    ),
    (
        {
            "type": "integer",
            "minimum": 1,
            "maximum": 9,
            "exclusiveMaximum": 8,
            "enum": [1, 5, 8, 9],
        },
        [1, 5, 8, 9, 0, 5.0],
    ),
]


@pytest.mark.parametrize(("schema", "values"), CASES)
def test_the_fast_validator_agrees_with_jsonschema_on_the_edges(schema, values):
    fast = compile_fast(schema)
    assert fast is not None
    judge = Draft202012Validator(schema)
    for value in values:
        assert fast(value) == judge.is_valid(value), value
