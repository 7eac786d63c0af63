"""Step 3 where mutation testing found it unguarded: undeclared arguments at every depth.

Chapter 45, step 3: the arguments against the tool's schema; an argument the schema does not declare
is refused. Names declared through `anyOf`, `oneOf`, `then`, `else` and local `$ref`s are declared;
objects nested under `items`, `prefixItems` and `additionalProperties` are closed too; an argument
whose schema constrains nothing is only partly described (`schema_partial`).
"""

from __future__ import annotations

from typing import Any

import pytest

from guard.engine.schema import compile_parameters, validate_arguments

CITY = {"type": "object", "properties": {"city": {"type": "string"}}}


def compiled(schema: dict[str, Any]):
    result, issues = compile_parameters(schema, "tools[0].parameters")
    assert issues == []
    return result


def pointers(schema, arguments) -> list[str]:
    return [problem["pointer"] for problem in validate_arguments(schema, arguments)]


@pytest.mark.parametrize(
    ("where", "arguments", "pointer"),
    [
        ("items", {"stops": [{"city": "Recife", "zip": "5"}]}, "/stops/0/zip"),
        ("prefixItems", {"stops": [{"city": "Recife", "zip": "5"}]}, "/stops/0/zip"),
        (
            "additionalProperties",
            {"stops": {"first": {"city": "Recife", "zip": "5"}}},
            "/stops/first/zip",
        ),
    ],
)
def test_an_object_nested_under_items_or_a_map_refuses_an_undeclared_field(
    where, arguments, pointer
):
    stops: dict[str, Any] = {"type": "array" if where != "additionalProperties" else "object"}
    stops[where] = [CITY] if where == "prefixItems" else CITY
    schema = compiled({"type": "object", "properties": {"stops": stops}})
    assert pointers(schema, arguments) == [pointer]
    fine = (
        {"stops": {"first": {"city": "Recife"}}}
        if where == "additionalProperties"
        else {"stops": [{"city": "Recife"}]}
    )
    assert pointers(schema, fine) == []


def test_a_nested_object_that_lists_no_properties_stays_open():
    schema = compiled(
        {"type": "object", "properties": {"metadata": {"type": "object", "maxProperties": 5}}}
    )
    assert pointers(schema, {"metadata": {"anything": 1}}) == []


@pytest.mark.parametrize("keyword", ["anyOf", "oneOf"])
def test_names_declared_in_any_of_or_one_of_branches_are_declared(keyword):
    schema = compiled(
        {
            "type": "object",
            keyword: [
                {"properties": {"card": {"type": "string"}}, "required": ["card"]},
                {"properties": {"iban": {"type": "integer"}}, "required": ["iban"]},
            ],
        }
    )
    assert schema.undeclared({"card": "x", "iban": 1}) == []
    assert schema.undeclared({"cash": 1}) == ["cash"]
    assert pointers(schema, {"card": "visa"}) == []


def test_names_declared_in_then_and_else_are_declared():
    schema = compiled(
        {
            "type": "object",
            "properties": {"kind": {"enum": ["card", "bank"]}},
            "if": {"properties": {"kind": {"const": "card"}}},
            "then": {"properties": {"card": {"type": "string"}}},
            "else": {"properties": {"iban": {"type": "string"}}},
        }
    )
    assert schema.undeclared({"kind": "card", "card": "x", "iban": "y"}) == []
    assert pointers(schema, {"kind": "card", "card": "visa"}) == []
    assert pointers(schema, {"kind": "bank", "iban": "DE00"}) == []


def test_names_declared_through_a_local_reference_are_declared_even_with_escaped_parts():
    schema = compiled(
        {
            "type": "object",
            "$defs": {"a/b~c": {"properties": {"amount": {"type": "number"}}}},
            "$ref": "#/$defs/a~1b~0c",
            "properties": {"order_id": {"type": "string"}},
        }
    )
    assert schema.declared == ("amount", "order_id")
    assert pointers(schema, {"order_id": "A1", "amount": 5}) == []
    assert pointers(schema, {"order_id": "A1", "note": "x"}) == ["/note"]


@pytest.mark.parametrize("branch", ["allOf", "then"])
def test_a_reference_inside_a_branch_is_followed_from_the_root(branch):
    money = {"$ref": "#/$defs/money"}
    schema = compiled(
        {
            "type": "object",
            "$defs": {"money": {"properties": {"amount": {"type": "number"}}}},
            branch: [money] if branch == "allOf" else money,
        }
    )
    assert schema.declared == ("amount",)


def test_an_argument_whose_schema_is_true_is_only_partly_described():
    schema = compiled(
        {"type": "object", "properties": {"note": True, "order_id": {"type": "string"}}}
    )
    assert schema.partial_arguments({"note": "x", "order_id": "A1"}) == ["note"]


# -- what a refusal at step 3 says: the keyword that failed, never the value ----------------------


@pytest.mark.parametrize(
    ("schema", "value", "message"),
    [
        ({"type": "string"}, 5, "must be of type `string`"),
        ({"type": ["string", "null"]}, 5, "must be of type `string` or `null`"),
        ({"enum": ["EUR", "BRL"]}, "USD", "must be one of the values the tool allows"),
        ({"const": "EUR"}, "USD", "must be one of the values the tool allows"),
        ({"minimum": 1}, 0, "must be at least `1`"),
        ({"exclusiveMinimum": 0}, 0, "must be more than `0`"),
        ({"maximum": 100}, 101, "must be at most `100`"),
        ({"exclusiveMaximum": 100}, 100, "must be less than `100`"),
        ({"minLength": 2}, "a", "must be at least 2 characters"),
        ({"maxLength": 2}, "abc", "must be at most 2 characters"),
        ({"minItems": 1}, [], "must have at least 1 items"),
        ({"maxItems": 1}, [1, 2], "must have at most 1 items"),
        ({"pattern": "^A[0-9]+$"}, "B1", "must match the pattern `^A[0-9]+$`"),
        ({"format": "email"}, "not-an-address", "must be a valid `email`"),
        (
            {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            1.5,
            "must match one of the shapes the tool allows",
        ),
        (
            {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            1.5,
            "must match one of the shapes the tool allows",
        ),
        ({"multipleOf": 5}, 7, "fails `multipleOf`"),
    ],
)
def test_a_refused_value_is_described_by_the_keyword_it_failed(schema, value, message):
    compiled_schema = compiled({"type": "object", "properties": {"secret_value": schema}})
    problems = validate_arguments(compiled_schema, {"secret_value": value})
    assert [(problem["pointer"], problem["message"]) for problem in problems] == [
        ("/secret_value", message)
    ]


def test_a_pointer_escapes_tilde_and_slash_in_names():
    schema = compiled({"type": "object", "properties": {"a": {"type": "string"}}})
    assert pointers(schema, {"a/b": 1, "c~d": 2}) == ["/a~1b", "/c~0d"]
