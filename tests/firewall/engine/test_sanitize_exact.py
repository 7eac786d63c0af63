"""Exact behaviour of `sanitize`: cleaned values, problem lists, limits and step tables.

The tests prove the Luhn and length checks of cards, the digit count of the hints, that a
credential preset runs only its own recogniser (and `credentials` all of them, under one label),
the exact messages and field paths of every sanitizer problem, the length limit of a custom
pattern, the depth limit on both passes (lists and objects, one level either side), the
shortest-match cut-off, and that arguments with nothing to redact come back as the same object.
"""

from __future__ import annotations

from typing import Any

import pytest

from firewall.engine import credentials
from firewall.engine.errors import OperandInvalid
from firewall.engine.sanitize import (
    MAX_PATTERN_LENGTH,
    MAX_SANITIZE_DEPTH,
    SANITIZE_PRESETS,
    SanitizeFailed,
    _card,
    _digits,
    _luhn,
    build_sanitizer,
    compile_pattern,
    sanitizer_problems,
)

from .conftest import redact

GITHUB = "ghp_R2d2C3poBb8Kx9Lm0Nq1Pr4St7Uv5Wy6Za3Yb"
AWS = "AKIAIOSFODNN7EXAMPLE"
DEEPER = f"arguments nest deeper than {MAX_SANITIZE_DEPTH} levels"


class _Match:
    def __init__(self, text: str) -> None:
        self.text = text

    def group(self, index: int) -> str:
        assert index == 0
        return self.text


@pytest.mark.parametrize(
    ("digits", "valid"),
    [
        ("4222222222222", True),
        ("5555555555554444", True),
        ("5555555555554445", False),
        ("4111111111111111", True),
        ("4111111111111112", False),
        ("59", True),
        ("58", False),
        ("0", True),
    ],
)
def test_luhn_checks_the_doubled_digits_minus_nine(digits: str, valid: bool) -> None:
    assert _luhn(digits) is valid


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4222222222222", "[redacted:credit_card]"),
        ("4222-2222-22222", "[redacted:credit_card]"),
        ("4000000000000000006", "[redacted:credit_card]"),
        ("422222222222", "422222222222"),
        ("40000000000000000008", "40000000000000000008"),
        ("4111111111111112", "4111111111111112"),
    ],
)
def test_card_redacts_only_13_to_19_digits_that_pass_luhn(text: str, expected: str) -> None:
    assert _card(_Match(text)) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("card 4222222222222 ok", "card [redacted:credit_card] ok"),
        ("card 4000000000000000006 ok", "card [redacted:credit_card] ok"),
        ("card 5555555555554444 ok", "card [redacted:credit_card] ok"),
        ("card 5555555555554445 ok", "card 5555555555554445 ok"),
    ],
)
def test_credit_card_preset_at_the_length_bounds(text: str, expected: str) -> None:
    labels = ["credit_card"] if expected != text else []
    assert redact(["credit_card"], text) == (expected, labels)


@pytest.mark.parametrize(
    ("text", "count"),
    [("", 0), ("abc", 0), ("a1b22c333", 6), ("0123456789", 10), ("x\ud8009", 1), ("é7", 1)],
)
def test_digits_counts_ascii_digits_and_survives_lone_surrogates(text: str, count: int) -> None:
    assert _digits(text) == count


def test_a_single_credential_preset_runs_only_its_own_recogniser() -> None:
    text = f"{AWS} {GITHUB}"
    assert redact(["aws_access_key"], text) == (
        f"[redacted:aws_access_key] {GITHUB}",
        ["aws_access_key"],
    )
    assert redact(["aws_access_key"], GITHUB) == (GITHUB, [])


def test_the_credentials_preset_runs_every_recogniser_under_its_own_label() -> None:
    assert redact(["credentials"], f"{AWS} {GITHUB}") == (
        "[redacted:credentials] [redacted:credentials]",
        ["credentials"],
    )


def test_a_single_credential_step_uses_its_recogniser_length_hint_and_search() -> None:
    sanitizer = build_sanitizer({"presets": ["aws_access_key"]})
    ((label, clean, least, hint, search),) = sanitizer.steps
    assert label == "aws_access_key"
    assert least == credentials.shortest("aws_access_key")
    assert sanitizer.shortest == least
    assert least != credentials.shortest(None)
    assert (hint(GITHUB), search(GITHUB), clean(GITHUB)) == (False, False, GITHUB)
    assert (hint(AWS), search(AWS), clean(AWS)) == (True, True, "[redacted:aws_access_key]")


def test_the_credentials_step_spans_the_whole_table() -> None:
    sanitizer = build_sanitizer({"presets": ["credentials"]})
    ((label, _clean, least, hint, search),) = sanitizer.steps
    assert (label, least) == ("credentials", credentials.shortest(None))
    assert (hint(GITHUB), search(GITHUB)) == (True, True)


@pytest.mark.parametrize(
    ("preset", "rejected", "accepted"),
    [
        ("email", "no at sign here", "a@b.cd"),
        ("credit_card", "123456789012 x", "1234567890123"),
        ("ssn_us", "12345678 x", "123456789"),
    ],
)
def test_pii_steps_keep_their_hints(preset: str, rejected: str, accepted: str) -> None:
    ((label, _clean, _least, hint, _search),) = build_sanitizer({"presets": [preset]}).steps
    assert label == preset
    assert (hint(rejected), hint(accepted)) == (False, True)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (5, "must be a string"),
        (None, "must be a string"),
        ("", "must not be empty"),
        ("a" * (MAX_PATTERN_LENGTH + 1), "is longer than 1000 characters"),
        ("a*", "`a*` matches the empty string"),
        ("^$", "`^$` matches the empty string"),
    ],
)
def test_compile_pattern_rejections_are_exact(pattern: object, message: str) -> None:
    with pytest.raises(OperandInvalid) as caught:
        compile_pattern(pattern, "patterns[3]")
    assert (caught.value.field, caught.value.message) == ("patterns[3]", message)
    assert str(caught.value) == f"patterns[3]: {message}"
    assert sanitizer_problems({"patterns": ["x", pattern]}) == [("patterns[1]", message)]


@pytest.mark.parametrize("pattern", ["a" * MAX_PATTERN_LENGTH, "X", "XXXX"])
def test_compile_pattern_accepts_up_to_the_limit(pattern: str) -> None:
    assert compile_pattern(pattern, "patterns[0]").search(pattern) is not None


KNOWN = ", ".join(SANITIZE_PRESETS)


@pytest.mark.parametrize(
    ("spec", "problems"),
    [
        ("email", [("", "must be an object with `presets` and/or `patterns`")]),
        ([], [("", "must be an object with `presets` and/or `patterns`")]),
        ({"presets": "email"}, [("presets", "must be a list of preset names")]),
        ({"patterns": "x"}, [("patterns", "must be a list of RE2 patterns")]),
        (
            {"presets": ["email", 3, "phone"]},
            [
                ("presets[1]", "must be a string"),
                ("presets[2]", f"unknown preset `phone` (known: {KNOWN})"),
            ],
        ),
        ({"presets": ["email"], "patterns": ["x"]}, []),
        ({"presets": ["email"], "patterns": []}, []),
        ({"presets": [], "patterns": ["x"]}, []),
        ({"presets": ["email", "ssn_us"], "patterns": ["x", "y"]}, []),
        ({}, [("", "an empty sanitizer redacts nothing: name a preset or a pattern")]),
        (
            {"presets": [], "patterns": []},
            [("", "an empty sanitizer redacts nothing: name a preset or a pattern")],
        ),
        ({"mode": 1, "presets": ["email"]}, [("mode", "unknown field")]),
        ({7: 1}, [("7", "unknown field")]),
    ],
)
def test_sanitizer_problems_are_exact(spec: Any, problems: list[tuple[str, str]]) -> None:
    assert sanitizer_problems(spec) == problems


def test_the_known_presets_are_listed_in_order() -> None:
    assert KNOWN == (
        "aws_access_key, aws_secret_key, anthropic_key, openai_key, bearer_token, credentials, "
        "credit_card, ssn_us, email"
    )


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ("email", "", "must be an object with `presets` and/or `patterns`"),
        (
            {"presets": [1], "patterns": ["a*"]},
            "presets[0]",
            "must be a string",
        ),
        ({"patterns": ["ok", ""]}, "patterns[1]", "must not be empty"),
    ],
)
def test_build_sanitizer_raises_the_first_problem(spec: Any, field: str, message: str) -> None:
    with pytest.raises(OperandInvalid) as caught:
        build_sanitizer(spec)
    assert (caught.value.field, caught.value.message) == (field, message)


def test_a_one_character_custom_pattern_redacts_one_character() -> None:
    sanitizer = build_sanitizer({"patterns": ["X"]})
    assert sanitizer.shortest == 1
    assert sanitizer.redact("X") == ("[redacted:custom]", ["custom"])
    assert sanitizer.redact({"k": "X"}) == ({"k": "[redacted:custom]"}, ["custom"])


@pytest.mark.parametrize(
    "value",
    [
        "a@b.cd",
        ["a@b.cd"],
        {"k": "a@b.cd"},
        ["a@b.cd", "x"],
        [{"k": "x", "j": "a@b.cd"}, "y"],
    ],
)
def test_a_match_of_exactly_the_shortest_length_is_redacted(value: Any) -> None:
    cleaned, labels = redact(["email"], value)
    assert labels == ["email"]
    assert "a@b.cd" not in repr(cleaned)
    assert "[redacted:email]" in repr(cleaned)


@pytest.mark.parametrize(
    "value",
    [
        "no address here at all",
        {"a": "plain words that are long enough", "b": ["x", 1, None, {"c": "more words"}]},
        ["short", "another plain string of text"],
    ],
)
def test_arguments_with_nothing_to_redact_come_back_as_the_same_object(value: Any) -> None:
    cleaned, labels = redact(["email", "credit_card"], value)
    assert cleaned is value
    assert labels == []


def _lists(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def _dicts(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = {"k": leaf}
    return leaf


@pytest.mark.parametrize("nest", [_lists, _dicts])
def test_the_deepest_allowed_nesting_is_cleaned(nest: Any) -> None:
    value = nest(MAX_SANITIZE_DEPTH, "a@b.example")
    assert redact(["email"], value) == (nest(MAX_SANITIZE_DEPTH, "[redacted:email]"), ["email"])
    plain = nest(MAX_SANITIZE_DEPTH, "nothing to see")
    assert redact(["email"], plain)[0] is plain


@pytest.mark.parametrize("nest", [_lists, _dicts])
@pytest.mark.parametrize("leaf", ["a@b.example", "nothing to see", 5])
def test_one_level_deeper_fails_on_the_first_pass(nest: Any, leaf: Any) -> None:
    with pytest.raises(SanitizeFailed) as caught:
        redact(["email"], nest(MAX_SANITIZE_DEPTH + 1, leaf))
    assert str(caught.value) == DEEPER


@pytest.mark.parametrize("nest", [_lists, _dicts])
def test_one_level_deeper_fails_on_the_rewriting_pass(nest: Any) -> None:
    # The first pass finds the address (popped first) and stops; the rewrite then goes deep.
    fine = [nest(MAX_SANITIZE_DEPTH - 1, "c@d.example"), "a@b.example"]
    assert redact(["email"], fine) == (
        [nest(MAX_SANITIZE_DEPTH - 1, "[redacted:email]"), "[redacted:email]"],
        ["email"],
    )
    with pytest.raises(SanitizeFailed) as caught:
        redact(["email"], [nest(MAX_SANITIZE_DEPTH, "c@d.example"), "a@b.example"])
    assert str(caught.value) == DEEPER
