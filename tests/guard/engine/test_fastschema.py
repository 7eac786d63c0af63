"""Two engines, one answer: the fast validator agrees with `jsonschema` on random input."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from guard.engine.fastschema import compile_fast

names = st.sampled_from(["a", "b", "c", "amount", "order_id"])
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5),
    st.sampled_from([0.0, 1.0, 1.5, -2.5, 3.0]),
    st.sampled_from(["", "a", "ab", "4411", "x1", "ÁÉ", "abc-9"]),
)
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(names, children, max_size=3),
    max_leaves=6,
)
types = st.sampled_from(["string", "number", "integer", "boolean", "object", "array", "null"])


def leaf_schema():
    return st.fixed_dictionaries(
        {},
        optional={
            "type": st.one_of(types, st.lists(types, min_size=1, max_size=2, unique=True)),
            "enum": st.lists(scalars, min_size=1, max_size=3),
            "const": scalars,
            "minimum": st.integers(-3, 3),
            "maximum": st.sampled_from([0, 1, 2.5, 4]),
            "exclusiveMinimum": st.integers(-3, 3),
            "exclusiveMaximum": st.integers(-3, 3),
            "minLength": st.integers(0, 3),
            "maxLength": st.integers(0, 3),
            "pattern": st.sampled_from(["^[0-9]+$", "a", "^$", "[A-Z]"]),
            "minItems": st.integers(0, 2),
            "maxItems": st.integers(0, 2),
            "description": st.just("annotation"),
        },
    )


schemas = st.recursive(
    leaf_schema(),
    lambda children: st.fixed_dictionaries(
        {},
        optional={
            "type": st.just("object"),
            "properties": st.dictionaries(names, children, max_size=3),
            "required": st.lists(names, max_size=2, unique=True),
            "additionalProperties": st.just(False),
            "items": children,
        },
    ),
    max_leaves=5,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas, values)
def test_the_fast_validator_agrees_with_jsonschema(schema, value):
    fast = compile_fast(schema)
    assert fast is not None
    assert fast(value) == Draft202012Validator(schema).is_valid(value)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(names, schemas, max_size=3), st.dictionaries(names, values, max_size=4))
def test_it_agrees_on_closed_argument_objects_as_the_check_builds_them(properties, arguments):
    schema = {"type": "object", "properties": properties, "unevaluatedProperties": False}
    assert compile_fast(schema)(arguments) == Draft202012Validator(schema).is_valid(arguments)


def test_schemas_with_keywords_it_leaves_out_go_to_jsonschema():
    for schema in (
        {"format": "email"},
        {"$ref": "#/$defs/x"},
        {"allOf": [{}]},
        {"patternProperties": {"^a": {}}},
        {"additionalProperties": {"type": "string"}},
        {"pattern": "("},
    ):
        assert compile_fast(schema) is None
