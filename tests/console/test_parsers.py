"""The API's JSON edge (console/api/parsers.py): a body whose text has no `\\u` escape that could
write a NUL or a lone surrogate, and that nests within the bound, is taken without walking every
string; every other body gets the full walk that names the field. Both answer as the full walk
alone would (a property test holds them to it)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.api.parsers import MalformedBody, first_problem, parse_json_object, too_deep

DEPTH = 8  # the tests' bound (STALWART_API_MAX_JSON_DEPTH is read from the settings)


@pytest.fixture(autouse=True)
def _bound(settings):
    settings.STALWART_API_MAX_JSON_DEPTH = DEPTH


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ('{"a": "x\\u0000y"}', "a", "a NUL character is not allowed"),
        ('{"a": ["ok", "\\u0000"]}', "a[1]", "a NUL character is not allowed"),
        ('{"k\\u0000": 1}', "k\\u0000", "the key: a NUL character is not allowed"),
        ('{"a": "\\ud800"}', "a", "a lone surrogate is not allowed"),
        ('{"a": "\\uDC00 after"}', "a", "a lone surrogate is not allowed"),
        ('{"a": {"b": "\\uDbFf"}}', "a.b", "a lone surrogate is not allowed"),
    ],
)
def test_a_nul_or_a_lone_surrogate_is_refused_naming_its_field(text, field, problem):
    with pytest.raises(MalformedBody) as refused:
        parse_json_object(text.encode())
    assert (refused.value.field, refused.value.problem) == (field, problem)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": "\\ud83d\\ude80"}', "\U0001f680"),  # a pair is one character
        ('{"a": "\\\\u0000"}', "\\u0000"),  # an escaped backslash: the six characters
        ('{"a": "\\u00e9t\\u00e9"}', "été"),
        ('{"a": "caf\u00e9"}', "café"),
    ],
)
def test_escapes_that_write_neither_are_taken(text, value):
    assert parse_json_object(text.encode("utf-8"))["a"] == value


def _nested(depth: int) -> dict:
    body: dict = {}
    for _ in range(depth - 1):
        body = {"n": body}
    return body


def test_nesting_at_the_bound_is_taken_and_past_it_refused_naming_where():
    assert parse_json_object(json.dumps(_nested(DEPTH)).encode())
    with pytest.raises(MalformedBody) as refused:
        parse_json_object(json.dumps(_nested(DEPTH + 1)).encode())
    assert refused.value.field == ".".join(["n"] * DEPTH)  # the container one level too deep
    assert refused.value.problem == f"nests deeper than {DEPTH} levels"


def test_too_deep_counts_lists_and_dicts_alike():
    assert not too_deep([[[]]], 3)
    assert too_deep([[[[]]]], 3)
    assert too_deep({"a": [{"b": []}]}, 3)
    assert not too_deep({"a": "deep text is no level", "b": 1}, 1)


_text = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(["\x00", "\ud800", "é"]))
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_text, _json, max_size=4), st.booleans())
def test_the_edge_answers_as_the_full_walk(body, ascii_only):
    text = json.dumps(body, ensure_ascii=ascii_only)
    expected = first_problem(body, max_depth=DEPTH)
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        return  # a lone surrogate written raw is not UTF-8: refused before any walk
    if expected is None:
        assert parse_json_object(raw) == body
    else:
        with pytest.raises(MalformedBody) as refused:
            parse_json_object(raw)
        assert (refused.value.field, refused.value.problem) == expected
