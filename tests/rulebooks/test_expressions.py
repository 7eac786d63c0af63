"""The condition language's parser: trees, precedence, and what it refuses."""

from __future__ import annotations

import pytest

from rulebooks.compiler.expressions import ExpressionError, parse_expression, tokenize


def p(text: str, dialect: str = "colang") -> dict:
    return parse_expression(text, dialect=dialect)


def test_and_binds_tighter_than_or_and_not_tighter_than_and() -> None:
    assert p("$a or $b and not $c") == {
        "op": "or",
        "args": [
            {"var": "a"},
            {"op": "and", "args": [{"var": "b"}, {"op": "not", "args": [{"var": "c"}]}]},
        ],
    }


def test_arithmetic_binds_tighter_than_comparison() -> None:
    assert p("$a + 1 * 2 > 3") == {
        "op": ">",
        "args": [
            {"op": "+", "args": [{"var": "a"}, {"op": "*", "args": [{"value": 1}, {"value": 2}]}]},
            {"value": 3},
        ],
    }


@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">=", "in", "not in", "is", "is not"])
def test_every_comparison(op: str) -> None:
    assert p(f"$a {op} $b") == {"op": op, "args": [{"var": "a"}, {"var": "b"}]}


def test_literals_lists_dicts_and_field_access() -> None:
    assert p('[1, "a", True, None]') == {
        "list": [{"value": 1}, {"value": "a"}, {"value": True}, {"value": None}]
    }
    assert p('{"k": -2.5}') == {"dict": [[{"value": "k"}, {"value": -2.5}]]}
    assert p('$r.status["x"][0]') == {
        "get": [
            {"get": [{"get": [{"var": "r"}, {"value": "status"}]}, {"value": "x"}]},
            {"value": 0},
        ]
    }


def test_strings_decode_escapes_and_raw_strings_do_not() -> None:
    assert p(r'"a\n\"b\" \u00e9"') == {"value": 'a\n"b" é'}
    assert p(r'r"a\n"') == {"value": r"a\n"}


def test_functions_are_a_closed_list() -> None:
    assert p("len($x) > 0")["args"][0] == {"call": "len", "args": [{"var": "x"}]}
    with pytest.raises(ExpressionError, match="`open` is not supported"):
        p("open('/etc/passwd')")


def test_a_sheet_reads_bare_names_as_arguments_and_results_by_tool() -> None:
    assert p("amount > 100", "sheet")["args"][0] == {"arg": "amount"}
    assert p("arguments.amount", "sheet") == {"arg": "amount"}
    assert p("results.get_order.status", "sheet") == {
        "get": [{"result": "get_order", "same": {}, "match": {}}, {"value": "status"}]
    }
    assert p("$order_paid", "sheet") == {"fact": "order_paid"}


def test_colang_refuses_a_bare_name() -> None:
    with pytest.raises(ExpressionError, match="written `\\$amount`"):
        p("amount > 1")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "$a +",
        "(1",
        "$a $b",
        "'unterminated",
        "1 < $a < 3",
        "$a.m()",
        "$a[1:2]",
        "lambda: 1",
        "$a if $b else $c",
        "1e999",
        "$",
        "# comment",
        "(1, 2)",
        "len(x=1)",
        "len(1, 2)",
    ],
)
def test_malformed_or_unsupported_text_raises_with_an_offset(text: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        p(text)
    assert 0 <= caught.value.offset <= len(text)


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    with pytest.raises(ExpressionError, match="nests too deeply"):
        p("(" * 500 + "1" + ")" * 500)
    with pytest.raises(ExpressionError):
        p("not " * 500 + "$a")


def test_tokens_carry_their_offsets() -> None:
    tokens = tokenize("if $a == 'x'", 3)
    assert [(t.kind, t.start) for t in tokens] == [
        ("var", 3),
        ("op", 6),
        ("string", 9),
        ("end", 12),
    ]
