"""The JSONPath subset: what parses, what resolves, and what is refused."""

from __future__ import annotations

import pytest

from firewall.engine.errors import OperandInvalid
from firewall.engine.jsonpath import MAX_PATH_LENGTH, MISSING, parse_path, resolve

ARGS = {"a": {"b": 1}, "arr": [{"k": "x"}, {"k": "y"}], "n": None, "s": "text"}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("$", ARGS),
        ("$.a", {"b": 1}),
        ("$.a.b", 1),
        ("$.arr[0]", {"k": "x"}),
        ("$.arr[1].k", "y"),
        ("$.n", None),
    ],
)
def test_paths_of_the_subset_resolve(path: str, expected: object) -> None:
    assert resolve(parse_path(path), ARGS) == expected


@pytest.mark.parametrize(
    "path", ["$.missing", "$.a.c", "$.arr[2]", "$.a[0]", "$.arr.k", "$.s.x", "$.s[0]", "$.n.x"]
)
def test_paths_that_do_not_apply_resolve_to_missing(path: str) -> None:
    assert resolve(parse_path(path), ARGS) is MISSING


@pytest.mark.parametrize(
    "path",
    [
        "",
        "a",
        "$.",
        "$..a",
        "$.*",
        "$[*]",
        "$.a[-1]",
        "$.a[01]",
        "$.a[0:2]",
        "$['a']",
        "$.a[?(@.b)]",
        "$ .a",
        "$.a b",
        "$.é",
    ],
)
def test_paths_outside_the_subset_are_refused(path: str) -> None:
    with pytest.raises(OperandInvalid) as caught:
        parse_path(path)
    assert caught.value.field == "path"


def test_a_path_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(OperandInvalid, match="must be a string"):
        parse_path(["$"])


def test_null_value_resolves_and_is_not_missing() -> None:
    assert resolve(parse_path("$.n"), ARGS) is None


def test_a_path_as_long_as_the_limit_parses_and_one_longer_is_refused() -> None:
    longest = "$." + "k" * (MAX_PATH_LENGTH - 2)
    assert parse_path(longest) == ("k" * (MAX_PATH_LENGTH - 2),)
    with pytest.raises(OperandInvalid) as caught:
        parse_path(longest + "k")
    assert (caught.value.field, caught.value.message) == (
        "path",
        f"is longer than {MAX_PATH_LENGTH} characters",
    )


def test_a_refused_path_is_quoted_with_the_subset_it_should_be_in() -> None:
    with pytest.raises(OperandInvalid) as caught:
        parse_path("$.a[*]")
    assert caught.value.message == (
        "`$.a[*]` is not a path of the subset `$`, `$.key`, `$.key[0]` "
        "(no wildcards, filters, slices or recursive descent)"
    )


def test_keys_and_indices_parse_into_their_steps() -> None:
    assert parse_path("$") == ()
    assert parse_path("$.a-b_1[0].c[123456789]") == ("a-b_1", 0, "c", 123456789)
    with pytest.raises(OperandInvalid):
        parse_path("$.a[1234567890]")


def test_missing_shows_itself_by_name() -> None:
    # what a failed assertion or a debugger prints for an unresolved path
    assert repr(MISSING) == "MISSING"
