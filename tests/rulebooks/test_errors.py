"""Compile errors: collected, coded, located, sorted and rendered with a caret."""

from __future__ import annotations

import pytest

from rulebooks.compiler import CompileError, RulebookError, RulebookUnsupported, compile_colang

BROKEN = """\
define flow b
  goto x
  user ask refund

define flow a
  if $x <
    execute refund_card
  label here
"""


def test_every_error_of_a_file_is_reported_at_once_in_line_order() -> None:
    with pytest.raises(RulebookUnsupported) as caught:
        compile_colang(BROKEN)
    assert [(e.line, e.construct) for e in caught.value.errors] == [
        (2, "goto"),
        (6, None),
        (8, "label"),
    ]
    assert all(e.code == "rulebook_unsupported" for e in caught.value.errors)
    assert isinstance(caught.value, RulebookError)


def test_an_error_renders_its_source_line_with_a_caret_under_the_column() -> None:
    with pytest.raises(RulebookUnsupported) as caught:
        compile_colang(BROKEN)
    rendered = caught.value.errors[1].render(BROKEN)
    assert rendered.splitlines() == [
        "policy.co:6:10: expected a value but found the end of the line",
        "6 |   if $x <",
        "             ^",
    ]


def test_the_exception_message_names_the_first_error_and_counts_the_rest() -> None:
    with pytest.raises(RulebookUnsupported) as caught:
        compile_colang(BROKEN)
    assert str(caught.value) == (
        "policy.co:2:3: `goto` is not supported in a rulebook (and 2 more errors)"
    )
    assert len(caught.value.render(BROKEN).split("\n\n")) == 3


def test_messages_are_one_lowercase_sentence_without_a_final_period() -> None:
    with pytest.raises(RulebookUnsupported) as caught:
        compile_colang(BROKEN)
    for error in caught.value.errors:
        assert error.message[0].islower() or error.message[0] == "`"
        assert not error.message.endswith(".")


def test_an_error_is_plain_data() -> None:
    error = CompileError("rulebook_unsupported", "bad", "p.co", 3, 4, construct="goto")
    assert error.to_dict() == {
        "code": "rulebook_unsupported",
        "message": "bad",
        "file": "p.co",
        "line": 3,
        "column": 4,
        "construct": "goto",
        "field": None,
    }


def test_a_refusal_needs_at_least_one_error() -> None:
    with pytest.raises(ValueError):
        RulebookUnsupported([])


def test_text_that_is_not_utf8_is_refused_at_its_line() -> None:
    with pytest.raises(RulebookUnsupported) as caught:
        compile_colang(b"define flow x\n  bot \xff\n")
    assert (caught.value.errors[0].line, caught.value.errors[0].column) == (2, 7)
