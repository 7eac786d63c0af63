"""Step 3 where mutation testing found it unguarded: undeclared arguments at every depth.

Chapter 45, step 3: the arguments against the tool's schema; an argument the schema does not declare
is refused. Names declared through `anyOf`, `oneOf`, `then`, `else` and local `$ref`s are declared;
objects nested under `items`, `prefixItems` and `additionalProperties` are closed too; an argument
whose schema constrains nothing is only partly described (`schema_partial`).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from guard.engine import Issue
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


# -- nested undeclared fields: each named once, at its own pointer ---------------------------------


def test_a_nested_field_declared_through_all_of_or_a_reference_is_not_called_undeclared():
    for extra in (
        {"allOf": [{"properties": {"b": {}}}]},
        {"$ref": "#/$defs/more"},
    ):
        nested = {"type": "object", "properties": {"a": {}}, **extra}
        schema = compiled(
            {
                "type": "object",
                "$defs": {"more": {"properties": {"b": {}}}},
                "properties": {"x": nested},
            }
        )
        assert validate_arguments(schema, {"x": {"a": 1, "b": 2, "c": 3}}) == [
            {"pointer": "/x/c", "keyword": "undeclared", "message": "is not declared by the tool"}
        ]
        assert validate_arguments(schema, {"x": {"a": 1, "b": 2}}) == []


@pytest.mark.parametrize("properties", [{}, {"a": {"type": "integer"}}])
def test_a_nested_object_that_forbids_extras_names_each_extra(properties):
    nested = {"type": "object", "properties": properties, "additionalProperties": False}
    if not properties:
        del nested["properties"]
    schema = compiled({"type": "object", "properties": {"x": nested}})
    arguments = {"x": {"a": 1, "c": 3}} if properties else {"x": {"c": 3}}
    assert validate_arguments(schema, arguments) == [
        {"pointer": "/x/c", "keyword": "undeclared", "message": "is not declared by the tool"}
    ]


def test_a_tool_without_parameters_takes_no_arguments_and_with_the_check_off_they_are_partial():
    from guard.engine import ToolCheck

    from .conftest import KEY

    check = ToolCheck({"tools": [{"name": "ping", "kind": "write"}]}, key=KEY)
    call = {"tool": "ping", "arguments": {"host": "a"}, "origins": {"host": "typed"}}
    assert check.check(call, session=check.new_history("s")).reasons == ("argument_schema",)
    off = check.check(call, session=check.new_history("s"), checks=["order"])
    assert off.reasons == ("schema_partial",)


def test_parameters_that_are_not_a_schema_object_are_refused_at_their_path():
    assert compile_parameters(["x"], "tools[0].parameters") == (
        None,
        [Issue("tools[0].parameters", "must be a JSON Schema object")],
    )
    _, issues = compile_parameters(
        {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "thing"}]}}},
        "tools[0].parameters",
    )
    assert [issue.path for issue in issues] == ["tools[0].parameters.properties.a.anyOf[1].type"]
    _, issues = compile_parameters({"type": "object", "properties": ["a"]}, "p")
    assert Issue("p.properties", "must be a mapping of argument name to schema") in issues


def test_loading_a_schema_leaves_the_given_schema_as_it_was():
    given = {"type": "object", "properties": {"x": {"type": "object", "properties": {"a": {}}}}}
    before = copy.deepcopy(given)
    compiled(given)
    assert given == before


def test_a_schema_closed_only_through_all_of_still_refuses_an_undeclared_argument():
    schema = compiled({"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}}]})
    assert pointers(schema, {"a": "x", "note": "y"}) == ["/note"]
    assert pointers(schema, {"a": "x"}) == []


@pytest.mark.parametrize(
    "extra",
    [
        {"additionalProperties": True},
        {"additionalProperties": {"type": "string"}},
        {"patternProperties": {"^x_": {}}},
        {"unevaluatedProperties": True},
    ],
)
def test_a_schema_that_allows_extra_arguments_keeps_them_as_partial(extra):
    schema = compiled({"type": "object", "properties": {"a": {"type": "string"}}, **extra})
    assert schema.undeclared({"a": "x", "x_note": "y"}) == []
    assert schema.partial_arguments({"a": "x", "x_note": "y"}) == ["x_note"]


def test_a_schema_that_forbids_extras_explicitly_is_closed():
    for extra in ({"additionalProperties": False}, {"unevaluatedProperties": False}):
        schema = compiled({"type": "object", "properties": {"a": {"type": "string"}}, **extra})
        assert schema.undeclared({"a": "x", "note": "y"}) == ["note"]


def test_formats_are_checked():
    schema = compiled(
        {"type": "object", "properties": {"to": {"type": "string", "format": "email"}}}
    )
    assert pointers(schema, {"to": "not an address"}) == ["/to"]
    assert pointers(schema, {"to": "ana@example.org"}) == []
