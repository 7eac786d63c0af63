"""Arguments against a tool's JSON Schema: undeclared arguments, pointers, partial schemas."""

from __future__ import annotations

from guard.engine.schema import compile_parameters, validate_arguments


def compiled(schema):
    result, issues = compile_parameters(schema, "tools[0].parameters")
    assert issues == []
    return result


def test_an_undeclared_argument_is_refused_even_without_additional_properties_false():
    schema = compiled({"type": "object", "properties": {"a": {"type": "string"}}})
    assert validate_arguments(schema, {"a": "x", "note": "y"}) == [
        {"pointer": "/note", "keyword": "undeclared", "message": "is not declared by the tool"}
    ]


def test_nested_objects_refuse_undeclared_fields_too_at_their_pointer():
    schema = compiled(
        {
            "type": "object",
            "properties": {
                "address": {"type": "object", "properties": {"city": {"type": "string"}}}
            },
        }
    )
    problems = validate_arguments(schema, {"address": {"city": "Recife", "zip": "5"}})
    assert [problem["pointer"] for problem in problems] == ["/address/zip"]


def test_properties_declared_through_all_of_count_as_declared():
    schema = compiled(
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "allOf": [{"properties": {"b": {"type": "integer"}}}],
        }
    )
    assert validate_arguments(schema, {"b": 1}) == []


def test_a_schema_that_allows_extras_keeps_them_as_partially_described():
    schema = compiled({"type": "object", "properties": {"a": {}}, "additionalProperties": True})
    assert validate_arguments(schema, {"a": 1, "z": 2}) == []
    assert schema.partial_arguments({"a": 1, "z": 2}) == ["a", "z"]


def test_messages_come_from_the_keyword_never_from_the_value():
    schema = compiled(
        {
            "type": "object",
            "properties": {"pin": {"type": "string", "pattern": "^[0-9]{4}$"}, "n": {"maximum": 3}},
            "required": ["pin", "n"],
        }
    )
    problems = validate_arguments(schema, {"pin": "secret-value", "n": 7})
    assert problems == [
        {"pointer": "/n", "keyword": "maximum", "message": "must be at most `3`"},
        {"pointer": "/pin", "keyword": "pattern", "message": "must match the pattern `^[0-9]{4}$`"},
    ]
    assert validate_arguments(schema, {})[0] == {
        "pointer": "/n",
        "keyword": "required",
        "message": "is required",
    }


def test_a_tool_without_parameters_takes_no_arguments():
    schema = compiled(None)
    assert validate_arguments(schema, {}) == []
    assert validate_arguments(schema, {"x": 1})[0]["pointer"] == "/x"


def test_a_bad_schema_names_its_path():
    _, issues = compile_parameters({"type": "object", "properties": {"a": {"minimum": "x"}}}, "p")
    assert str(issues[0]).startswith("p.properties.a.minimum: is not a valid JSON Schema")
