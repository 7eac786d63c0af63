"""References to values of earlier calls, where mutation testing found them unguarded.

`refs`: a source is `arguments.<field>`, `result.<field>`, or a bare (possibly dotted) field meaning
`result.<field>`; a tool reference is `<tool>.<field>`; following a path into a value that is not a
mapping finds nothing.
"""

from __future__ import annotations

import pytest

from guard.engine.refs import MISSING, parse_source, parse_tool_reference, resolve, source_text


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("arguments.order_id", ("arguments", "order_id")),
        ("result.order_id", ("result", "order_id")),
        ("order_id", ("result", "order_id")),
        ("customer.id", ("result", "customer", "id")),
        ("result", ("result", "result")),
        ("arguments", ("result", "arguments")),
        ("result.customer.id", ("result", "customer", "id")),
        ("", None),
        (None, None),
        (7, None),
        ("result.", None),
        ("9lives", None),
        ("a..b", None),
    ],
)
def test_a_source_reads_as_its_path_in_an_earlier_call(text, path):
    assert parse_source(text) == path
    if path is not None:
        assert parse_source(source_text(path)) == path


@pytest.mark.parametrize(
    ("text", "reference"),
    [
        ("get_order.card", ("get_order", ("result", "card"))),
        ("get_order.customer.id", ("get_order", ("result", "customer", "id"))),
        ("get_order.arguments.order_id", ("get_order", ("arguments", "order_id"))),
        ("9x.card", None),
        ("get_order", None),
        ("get_order.", None),
        (7, None),
        (None, None),
    ],
)
def test_a_tool_reference_names_the_tool_and_the_path_in_its_result(text, reference):
    assert parse_tool_reference(text) == reference


def test_a_path_into_text_or_a_list_finds_nothing():
    content = {"result": {"card": "visa", "items": ["a"]}}
    assert resolve(content, ("result", "card", "v")) is MISSING
    assert resolve(content, ("result", "items", "a")) is MISSING
    assert resolve(content, ("result", "card")) == "visa"
