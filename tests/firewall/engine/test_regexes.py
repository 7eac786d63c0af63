"""RE2 as the engine uses it: exact outcomes of `compile_re2`, `fast_search` and `reason`.

These tests prove that compilation is quiet (a bad pattern writes nothing to stderr and the
options turn RE2's logging off), that a bad pattern becomes an `OperandInvalid` on the given
field with an exact one-line message, that `fast_search` calls RE2's matcher directly when the
build exposes it and falls back to `search` on UTF-8 bytes (invalid text replaced) when it does
not, and that `reason` turns any RE2 complaint into one lowercase sentence without a period.
"""

from __future__ import annotations

from typing import Any

import pytest
import re2

from firewall.engine import regexes
from firewall.engine.errors import OperandInvalid
from firewall.engine.regexes import compile_re2, fast_search, reason


class _NoSearch:
    """A compiled pattern whose `search` must not be used: only its RE2 matcher is there."""

    def __init__(self, pattern: str) -> None:
        self._regexp = re2.compile(pattern)._regexp

    def search(self, data: Any) -> Any:
        raise AssertionError("the fast path must not call search")


class _SearchOnly:
    """A compiled pattern with `search` and no underlying RE2 matcher, recording its inputs."""

    def __init__(self, pattern: str) -> None:
        self._search = re2.compile(pattern).search
        self.seen: list[Any] = []

    def search(self, data: Any) -> Any:
        self.seen.append(data)
        return self._search(data)


class _Substring:
    """A compiled-pattern stand-in that finds a literal in bytes, with a real RE2 matcher."""

    def __init__(self, literal: str) -> None:
        self._literal = literal.encode()
        self._regexp = re2.compile(literal)._regexp
        self.seen: list[Any] = []

    def search(self, data: Any) -> Any:
        self.seen.append(data)
        return data if self._literal in data else None


class _NoMatchMethod(_SearchOnly):
    """Has an `_regexp` attribute, but one without a `Match` method."""

    _regexp = object()


def test_options_turn_re2_error_logging_off() -> None:
    assert regexes._options().log_errors is False
    assert regexes._OPTIONS.log_errors is False


def test_a_bad_pattern_writes_nothing_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(OperandInvalid):
        compile_re2("(unclosed-quiet-check", "value")
    assert capfd.readouterr().err == ""


def test_a_good_pattern_compiles_to_a_working_regex() -> None:
    compiled = compile_re2("a+b", "value")
    assert compiled.search("xxaab") is not None
    assert compiled.search("ba") is None


def test_a_bad_pattern_raises_on_the_field_with_re2s_reason() -> None:
    with pytest.raises(OperandInvalid) as info:
        compile_re2("(", "rules[0].value")
    assert info.value.field == "rules[0].value"
    assert info.value.message == "not a valid RE2 regex: missing ): ("
    assert str(info.value) == "rules[0].value: not a valid RE2 regex: missing ): ("


def test_a_pattern_that_is_not_utf8_raises_on_the_field_with_an_exact_message() -> None:
    with pytest.raises(OperandInvalid) as info:
        compile_re2("a\ud800b", "deny[2]")
    assert info.value.field == "deny[2]"
    assert info.value.message == "not a valid RE2 regex: not valid UTF-8 text"
    assert str(info.value) == "deny[2]: not a valid RE2 regex: not valid UTF-8 text"
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__ is True


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("b", "abc", True),
        ("^b", "abc", False),
        ("c$", "abc", True),
        ("é", "café", True),
        ("x", "abc", False),
        ("", "", True),
        (r"\?", "a\ud800", True),
    ],
)
def test_fast_search_answers_exactly_on_a_real_pattern(
    pattern: str, text: str, expected: bool
) -> None:
    assert fast_search(re2.compile(pattern))(text) is expected


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [("b", "abc", True), ("x", "abc", False), ("é", "café", True), ("^b", "abc", False)],
)
def test_fast_search_uses_the_re2_matcher_and_not_search(
    pattern: str, text: str, expected: bool
) -> None:
    assert fast_search(_NoSearch(pattern))(text) is expected


@pytest.mark.parametrize(
    ("pattern", "text", "expected", "sent"),
    [
        ("b", "abc", True, b"abc"),
        ("x", "abc", False, b"abc"),
        ("é", "café", True, "café".encode()),
        (r"a\?", "a\ud800", True, b"a?"),
    ],
)
def test_fast_search_falls_back_to_search_on_utf8_bytes_without_a_matcher(
    pattern: str, text: str, expected: bool, sent: bytes
) -> None:
    compiled = _SearchOnly(pattern)
    assert fast_search(compiled)(text) is expected
    assert compiled.seen == [sent]


def test_fast_search_falls_back_when_the_matcher_has_no_match_method() -> None:
    compiled = _NoMatchMethod("b")
    assert fast_search(compiled)("abc") is True
    assert fast_search(compiled)("xyz") is False
    assert compiled.seen == [b"abc", b"xyz"]


def test_fast_search_falls_back_when_re2_has_no_anchor_enum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(re2, "_Anchor")
    compiled = _Substring("b")
    assert fast_search(compiled)("abc") is True
    assert fast_search(compiled)("xyz") is False
    assert compiled.seen == [b"abc", b"xyz"]


def test_fast_search_falls_back_when_the_anchor_enum_has_no_unanchored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(re2, "_Anchor", object())
    compiled = _Substring("b")
    assert fast_search(compiled)("abc") is True
    assert compiled.seen == [b"abc"]


class _Complaint(Exception):
    pass


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), "rejected by RE2"),
        (("",), "rejected by RE2"),
        ((" . ",), "rejected by RE2"),
        ((b"",), "rejected by RE2"),
        (("Missing ): (",), "missing ): ("),
        (("Bad thing.",), "bad thing"),
        ((" Bad thing.. ",), "bad thing"),
        (("BadX.",), "badX"),
        ((".Lead dot.",), ".Lead dot"),
        (("Trailing space. ",), "trailing space"),
        ((b"Bytes reason.",), "bytes reason"),
        ((b"Bad \xff byte",), "bad \ufffd byte"),
        ((None,), "none"),
        ((42,), "42"),
        (("first", "second"), "first"),
    ],
)
def test_reason_is_one_lowercase_sentence_without_a_final_period(
    args: tuple[Any, ...], expected: str
) -> None:
    assert reason(_Complaint(*args)) == expected
