"""Argument clauses: each operator, JSON equality, fail-closed paths, and the regex prefilter."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
import re2
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from firewall.engine import reference_evaluate
from firewall.engine.clauses import (
    clause_problems,
    compile_clause,
    fast_search,
    required_literals,
)
from firewall.engine.errors import OperandInvalid
from firewall.engine.values import json_equal


def holds(op: str, value: Any, arguments: Any, path: str = "$.x") -> bool:
    clause: dict[str, Any] = {"path": path, "op": op}
    if value is not ...:
        clause["value"] = value
    return compile_clause(clause)(arguments)


#: (op, operand, argument, whether the clause holds): each operator at its edges. The reference
#: evaluator's tests (test_reference_exact.py) run the same table.
OPERATOR_CASES: list[tuple[str, Any, Any, bool]] = [
    ("eq", "a", "a", True),
    ("eq", "a", "b", False),
    ("eq", 1, 1.0, True),
    ("eq", 1, True, False),
    ("eq", True, 1, False),
    ("eq", None, None, True),
    ("eq", {"a": [1]}, {"a": [1.0]}, True),
    ("eq", [1, 2], [2, 1], False),
    ("neq", "a", "b", True),
    ("neq", "a", "a", False),
    ("neq", 0, False, True),
    ("neq", 1, 1.0, False),
    ("neq", [1, "a"], [1, "a"], False),
    ("neq", None, None, False),
    ("in", ["a", 1], "a", True),
    ("in", ["a", 1], 1.0, True),
    ("in", [1], True, False),
    ("in", [True], 1, False),
    ("in", [None], None, True),
    ("in", [[1]], [1], True),
    ("in", [], "a", False),
    ("not_in", ["a"], "b", True),
    ("not_in", ["a"], "a", False),
    ("not_in", [0], False, True),
    ("contains", "rf", "rm -rf", True),
    ("contains", "x", "rm -rf", False),
    ("contains", "b", ["a", "b"], True),
    ("contains", 1, [True], False),
    ("contains", 1, [1.0], True),
    ("contains", "a", {"a": 1}, False),
    ("contains", "1", 123, False),
    ("starts_with", "rm", "rm -rf", True),
    ("starts_with", "rf", "rm -rf", False),
    ("starts_with", "1", 12, False),
    ("ends_with", "-rf", "rm -rf", True),
    ("ends_with", "rm", "rm -rf", False),
    ("regex", r"rm\s+-rf", "sudo rm   -rf /", True),
    ("regex", r"^rm", "sudo rm -rf", False),
    ("regex", r"\d+", 123, False),
    ("cidr", "10.0.0.0/8", "10.1.2.3", True),
    ("cidr", "10.0.0.0/8", "11.1.2.3", False),
    ("cidr", "169.254.169.254/32", "0xA9FEA9FE", True),
    ("cidr", "169.254.0.0/16", "::ffff:169.254.1.1", True),
    ("cidr", "fd00::/8", "fd12::1", True),
    ("cidr", "fd00::/8", "10.0.0.1", False),
    ("cidr", "10.0.0.0/8", "not an ip", False),
    ("cidr", "10.0.0.0/8", 167772161, False),
    ("gt", 5, 6, True),
    ("gt", 5, 5, False),
    ("gte", 5, 5.0, True),
    ("lt", 5, 4.5, True),
    ("lte", 5, 6, False),
    ("lt", 5, 5, False),
    ("lte", 5, 5, True),
    ("lte", 5, 4, True),
    ("gt", 5, 5.5, True),
    ("gt", 0, True, False),
    ("lt", 2, True, False),
    ("gte", 1, "2", False),
    ("lt", 10, None, False),
]


@pytest.mark.parametrize(("op", "value", "actual", "expected"), OPERATOR_CASES)
def test_operator_semantics(op: str, value: Any, actual: Any, expected: bool) -> None:
    # a top-level key takes the specialised tests, a nested path the generic ones
    assert holds(op, value, {"x": actual}) is expected
    assert holds(op, value, {"w": {"x": actual}}, path="$.w.x") is expected


def test_booleans_are_not_numbers_for_comparisons() -> None:
    assert not holds("gte", 1, {"x": True})
    assert not holds("lte", 0, {"x": False})
    assert holds("gte", 1, {"x": 1})


def test_exists_true_and_false() -> None:
    assert holds("exists", ..., {"x": None})
    assert holds("exists", True, {"x": 0})
    assert not holds("exists", True, {})
    assert holds("exists", False, {})
    assert not holds("exists", False, {"x": None})


@pytest.mark.parametrize("op", ["eq", "neq", "in", "not_in", "contains", "regex", "gt", "cidr"])
def test_a_path_that_does_not_resolve_makes_any_clause_false(op: str) -> None:
    value = {
        "eq": "a",
        "neq": "a",
        "in": ["a"],
        "not_in": ["a"],
        "contains": "a",
        "regex": "a",
        "gt": 1,
        "cidr": "10.0.0.0/8",
    }[op]
    assert not holds(op, value, {"y": "a"})
    assert not holds(op, value, {"x": {"deeper": 1}}, path="$.x.missing")


def test_nested_paths_and_indices_reach_their_value() -> None:
    arguments = {"steps": [{"cmd": "ls"}, {"cmd": "rm -rf /"}]}
    assert holds("contains", "rm", arguments, path="$.steps[1].cmd")
    assert not holds("contains", "rm", arguments, path="$.steps[0].cmd")
    assert holds("eq", arguments, arguments, path="$")


@pytest.mark.parametrize(
    ("clause", "field", "fragment"),
    [
        ({"path": "$.x", "op": "matches", "value": "a"}, "op", "unknown operator `matches`"),
        ({"path": "x", "op": "eq", "value": 1}, "path", "is not a path"),
        ({"path": "$.x", "op": "in", "value": "a"}, "value", "must be an array"),
        ({"path": "$.x", "op": "not_in", "value": {"a": 1}}, "value", "must be an array"),
        ({"path": "$.x", "op": "gt", "value": "5"}, "value", "must be a number"),
        ({"path": "$.x", "op": "lte", "value": True}, "value", "must be a number"),
        ({"path": "$.x", "op": "regex", "value": "(unclosed"}, "value", "not a valid RE2 regex"),
        ({"path": "$.x", "op": "regex", "value": r"(a)\1"}, "value", "not a valid RE2 regex"),
        ({"path": "$.x", "op": "cidr", "value": "10.0.0.0/33"}, "value", "not a valid CIDR"),
        ({"path": "$.x", "op": "cidr", "value": "nope"}, "value", "not a valid CIDR"),
        ({"path": "$.x", "op": "exists", "value": "yes"}, "value", "`true` or `false`"),
        ({"path": "$.x", "op": "starts_with", "value": 1}, "value", "must be a string"),
        ({"path": "$.x", "op": "eq"}, "value", "is required"),
        ({"path": "$.x", "op": "eq", "value": 1, "flags": "i"}, "flags", "unknown field"),
        ({"op": "eq", "value": 1}, "path", "is required"),
        ({"path": "$.x", "value": 1}, "op", "is required"),
        ({"path": "$.x", "op": "eq", "value": float("inf")}, "value", "finite"),
    ],
)
def test_clause_problems_name_the_field(clause: dict[str, Any], field: str, fragment: str) -> None:
    problems = clause_problems(clause)
    assert any(f == field and fragment in m for f, m in problems), problems
    with pytest.raises(OperandInvalid):
        compile_clause(clause)


def test_a_clause_that_is_not_an_object_is_a_problem() -> None:
    assert clause_problems("$.x == 1") == [("", "must be an object with `path`, `op` and `value`")]


def test_json_equality_distinguishes_bool_from_numbers() -> None:
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal(0, False)
    assert not json_equal(None, 0)
    assert not json_equal("1", 1)
    assert json_equal({"a": [True, None]}, {"a": [True, None]})
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})


def test_regex_with_a_lone_surrogate_in_the_argument_does_not_raise() -> None:
    assert holds("regex", "a", {"x": "a\ud800"})
    assert not holds("regex", "b", {"x": "a\ud800"})


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (r"rm\s+-rf", ["rm", "-rf"]),
        (r"ab*c", ["a", "c"]),
        (r"a|b", []),
        (r"(a|b)cd", ["cd"]),
        (r"\x41bc", []),
        (r"(?i)abc", []),
        (r"foo\.bar", ["foo.bar"]),
        (r"a{2}bc", ["bc"]),
        (r"[]a]b", ["b"]),
        (r"ab\.", ["ab."]),
        ("ab\\", []),
        # character classes: a leading `^` or `]`, escapes and named classes inside, unclosed
        (r"a[^]b]c", ["a", "c"]),
        (r"a[\]]b", ["a", "b"]),
        (r"k[]]m", ["k", "m"]),
        (r"a[^^]b", ["a", "b"]),
        (r"x[^a]y", ["x", "y"]),
        (r"ab[^\]c]de", ["ab", "de"]),
        (r"a[[:digit:]x]b", ["a", "b"]),
        (r"q[[:alpha:][:digit:]]r", ["q", "r"]),
        (r"a[b:]]c", ["a", "]c"]),
        (r"[a]", []),
        (r"ab[", []),
        (r"a[]b", []),
        (r"a[[:x]b", []),
        (r"a[[:digit:]]:]b", ["a", ":]b"]),
        (r"a[x[:alpha:]]b", ["a", "b"]),
        (r"a[[:alpha:]x", []),
        (r"zz[[:alpha:]]", ["zz"]),
        # groups: their insides are never required, flags make the scan give up
        (r"ab(?i)c", []),
        (r"(?P<n>ab)cd", ["cd"]),
        (r"ab(?:cd)e", ["ab", "e"]),
        (r"x(?:ab)+y", ["x", "y"]),
        (r"ab(cd)?e", ["ab", "e"]),
        (r"a(b|c)d", ["a", "d"]),
        (r"a{2,}b", ["b"]),
    ],
)
def test_required_literals_are_conservative(pattern: str, literals: list[str]) -> None:
    assert required_literals(pattern) == literals


_pattern_parts = st.sampled_from(
    [
        "a",
        "b",
        "ab",
        ".",
        "*",
        "+",
        "?",
        "|",
        "(",
        ")",
        "[ab]",
        "[^a]",
        "\\.",
        "\\s",
        "{2}",
        "{1,}",
        "(?:",
        "(?i)",
        "\\d",
        "x",
        "^",
        "$",
        "\\x61",
        "[[:alpha:]]",
        "{",
        "}",
        "\\\\",
    ]
)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_pattern_parts, max_size=8), text=st.text(alphabet="abx. \\{}1", max_size=12))
def test_required_literals_never_hide_a_match(parts: list[str], text: str) -> None:
    pattern = "".join(parts)
    try:
        compiled = re2.compile(pattern)
    except re2.error:
        assume(False)
        return
    if compiled.search(text) is not None:
        assert all(literal in text for literal in required_literals(pattern))
    assert fast_search(compiled)(text) == (compiled.search(text) is not None)


def test_a_regex_needing_a_question_mark_matches_where_a_lone_surrogate_reads_as_one() -> None:
    pattern = "h3\\.example/\\?"
    assert holds("regex", pattern, {"x": "https://h3.example/\ud800"})
    assert holds("regex", pattern, {"x": "https://h3.example/?"})
    assert not holds("regex", pattern, {"x": "https://h3.example/"})
    assert reference_holds(pattern, "https://h3.example/\ud800")


def reference_holds(pattern: str, text: str) -> bool:
    data = {
        "name": "p",
        "default_verdict": "allow",
        "rules": [
            {
                "name": "r",
                "priority": 1,
                "args_match": [{"path": "$.x", "op": "regex", "value": pattern}],
                "verdict": "deny",
            }
        ],
    }
    return reference_evaluate(data, {"tool": "t", "arguments": {"x": text}}).verdict == "deny"


KNOWN = (
    "eq, neq, in, not_in, contains, starts_with, ends_with, regex, cidr, exists, gt, gte, lt, lte"
)


@pytest.mark.parametrize(
    ("clause", "problems"),
    [
        (
            {"path": "$.x", "op": "matches", "value": "a"},
            [("op", f"unknown operator `matches` (known: {KNOWN})")],
        ),
        ({"path": "$.x", "op": 7, "value": 1}, [("op", f"unknown operator `7` (known: {KNOWN})")]),
        ({"path": "$.x", "op": "in", "value": "a"}, [("value", "must be an array for `in`")]),
        (
            {"path": "$.x", "op": "not_in", "value": {}},
            [("value", "must be an array for `not_in`")],
        ),
        ({"path": "$.x", "op": "gt", "value": "5"}, [("value", "must be a number for `gt`")]),
        ({"path": "$.x", "op": "regex", "value": 5}, [("value", "must be a string for `regex`")]),
        (
            {"path": "$.x", "op": "regex", "value": "(unclosed"},
            [("value", "not a valid RE2 regex: missing ): (unclosed")],
        ),
        (
            {"path": "$.x", "op": "regex", "value": "a" * 1001},
            [("value", "is longer than 1000 characters")],
        ),
        (
            {"path": "$.x", "op": "cidr", "value": "10.0.0.0/33"},
            [("value", "not a valid CIDR: prefix out of range")],
        ),
        ({"path": "$.x", "op": "cidr", "value": 5}, [("value", "must be a string for `cidr`")]),
        (
            {"path": "$.x", "op": "exists", "value": "yes"},
            [("value", "must be `true` or `false` for `exists`")],
        ),
        (
            {"path": "$.x", "op": "starts_with", "value": 1},
            [("value", "must be a string for `starts_with`")],
        ),
        (
            {"path": "$.x", "op": "ends_with", "value": 1},
            [("value", "must be a string for `ends_with`")],
        ),
        ({"path": "$.x", "op": "eq"}, [("value", "is required for `eq`")]),
        ({"path": "$.x", "op": "exists"}, []),
        (
            {"path": "$.x", "op": "eq", "value": float("nan")},
            [("value", "must be a finite number")],
        ),
        ({"path": 5, "op": "eq", "value": 1}, [("path", "must be a string")]),
        (
            {"path": "x", "flags": "i", "value": 1},
            [
                ("flags", "unknown field"),
                (
                    "path",
                    "`x` is not a path of the subset `$`, `$.key`, `$.key[0]` "
                    "(no wildcards, filters, slices or recursive descent)",
                ),
                ("op", "is required"),
            ],
        ),
        ({"op": "eq", "value": 1}, [("path", "is required")]),
    ],
)
def test_clause_problems_say_exactly_what_is_wrong_and_where(
    clause: dict[str, Any], problems: list[tuple[str, str]]
) -> None:
    # these messages are what an author reads beside the field in the console and the API
    assert clause_problems(clause) == problems
    if problems:
        with pytest.raises(OperandInvalid) as raised:
            compile_clause(clause)
        assert (raised.value.field, raised.value.message) == problems[0]
    else:
        assert compile_clause(clause)({"x": 1})


class Text(str):
    """A string of a subclass, as an enum member or a framework's safe string is."""


class Count(int):
    """An integer of a subclass, as an `IntEnum` member is."""


class Amount(float):
    """A float of a subclass, as a NumPy `float64` is."""


@pytest.mark.parametrize(
    ("op", "value", "actual", "expected"),
    [
        ("in", ["a", 1], Text("a"), True),
        ("in", ["b"], Text("a"), False),
        ("not_in", ["a"], Text("a"), False),
        ("in", [3], Count(3), True),
        ("in", [3.0], Count(3), True),
        ("in", [4], Count(3), False),
        ("in", [2.5], Amount(2.5), True),
        ("in", [True], True, True),
        ("in", [False, "a"], False, True),
        ("not_in", [True], True, False),
        ("gt", 2, Count(3), True),
        ("gte", 3, Count(3), True),
        ("lt", 3, Count(3), False),
        ("lte", 2.5, Amount(2.5), True),
        ("gt", 2, Amount(2.5), True),
        ("lt", 2, Amount(2.5), False),
        ("gt", 0, True, False),
    ],
)
def test_arguments_of_subclasses_compare_as_their_json_values(
    op: str, value: Any, actual: Any, expected: bool
) -> None:
    # a caller may hand over enum members or NumPy scalars: they are the strings and numbers
    # they stand for, on a top-level key and on a nested path alike
    assert holds(op, value, {"x": actual}) is expected
    assert holds(op, value, {"w": {"x": actual}}, path="$.w.x") is expected


@pytest.mark.parametrize("op", ["eq", "neq", "in", "starts_with", "regex", "gt"])
def test_an_index_path_never_reads_an_object_key(op: str) -> None:
    # `$[0]` is the first element of an array: an object (even a Python caller's dict with an
    # integer key) has none, so the clause is false, `neq` included
    value = {"eq": "x", "neq": "y", "in": ["x"], "starts_with": "x", "regex": "x", "gt": 0}[op]
    arguments = {0: "x" if op != "gt" else 1}
    assert not holds(op, value, arguments, path="$[0]")
    assert holds(op, value, {"list": [arguments[0]]}, path="$.list[0]")


def test_an_operator_that_is_not_text_is_shown_as_python_writes_it() -> None:
    # a Python caller's value that prints like an operator is not mistaken for one
    problems = clause_problems({"path": "$.x", "op": Decimal("1"), "value": 1})
    assert problems == [("op", f"unknown operator `Decimal('1')` (known: {KNOWN})")]
