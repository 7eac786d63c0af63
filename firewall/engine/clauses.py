"""Argument clauses: checking a clause's shape and compiling it into a fast test.

A clause is `{"path": "$.command", "op": "regex", "value": "rm\\s+-rf"}`. What each operator
means (the actual value is what the path resolves to in the arguments):

- `eq`, `neq`: JSON equality (`true` is not `1`; `1` equals `1.0`);
- `in`, `not_in`: the value is an array; the actual value is (not) JSON-equal to an element;
- `contains`: a string contains the value as a substring (the value a string), or an array
  has an element JSON-equal to the value;
- `starts_with`, `ends_with`: both strings;
- `regex`: the actual string contains a match of the RE2 pattern (unanchored search);
- `cidr`: the actual string is an IP address (any spelling) inside the value's CIDR;
- `exists`: the value is `true` (the default) or `false`; the path resolves, or does not;
- `gt`, `gte`, `lt`, `lte`: both numbers (booleans are not numbers).

Fail closed, for the rule: when the path does not resolve (`neq` and `not_in` included), the
actual value has the wrong type, or the arguments are not an object, the clause is false and
the rule does not fire. A clause whose own shape is broken (found when a stored policy is
loaded leniently) is false too, and its problem is reported among the decision's errors.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import re2

from firewall.engine.addresses import ip_key, network_key, parse_network
from firewall.engine.errors import OperandInvalid
from firewall.engine.jsonpath import MISSING, parse_path, resolve
from firewall.engine.regexes import compile_re2, fast_search
from firewall.engine.values import is_number, json_equal, json_problem
from firewall.engine.vocabulary import CLAUSE_FIELDS, OPERATORS

Test = Callable[[Any], bool]

#: Longest regex the validator accepts.
MAX_REGEX_LENGTH = 1000

_STRING_VALUE_OPS = frozenset({"starts_with", "ends_with"})
_NUMBER_OPS = frozenset({"gt", "gte", "lt", "lte"})
_ARRAY_OPS = frozenset({"in", "not_in"})


_LETTER_ESCAPES = frozenset("dDsSwWbBAznrtfv")
_REPEAT = re2.compile(r"\{[0-9]+(?:,[0-9]*)?\}")


def required_literals(pattern: str) -> list[str]:
    """Substrings that every match of `pattern` must contain (empty when none can be proven).

    A conservative scan of the pattern's top level: runs of literal characters that are not
    followed by a quantifier. Anything it is unsure of (a top-level `|`, flags such as `(?i)`,
    escapes like `\\x41`, `\\pL` or `\\Q`) makes it give up, which only costs speed. The
    compiled engine checks these with `in` before calling RE2; the reference engine does not.
    """
    runs: list[str] = []
    current: list[str] = []
    depth = 0
    index = 0
    size = len(pattern)

    def close() -> None:
        if current:
            runs.append("".join(current))
            current.clear()

    while index < size:
        char = pattern[index]
        if char == "\\":
            if index + 1 >= size:
                return []
            following = pattern[index + 1]
            if following.isalnum():
                if following not in _LETTER_ESCAPES:
                    return []
                close()
            elif depth == 0:
                current.append(following)
            index += 2
            continue
        if char == "[":
            end = index + 1
            if end < size and pattern[end] == "^":
                end += 1
            if end < size and pattern[end] == "]":
                end += 1
            while end < size and pattern[end] != "]":
                if pattern[end] == "\\":
                    end += 1
                elif pattern.startswith("[:", end):
                    closing = pattern.find(":]", end + 2)
                    if closing == -1:
                        return []
                    end = closing + 1
                end += 1
            if end >= size:
                return []
            close()
            index = end + 1
            continue
        if char == "(":
            if pattern.startswith("(?", index) and not pattern.startswith(("(?:", "(?P<"), index):
                return []
            close()
            depth += 1
            index += 1
            continue
        if char == ")":
            close()
            depth -= 1
            index += 1
            continue
        if char == "|" and depth == 0:
            return []
        if char in "*?+{":
            repeat = _REPEAT.match(pattern[index:]) if char == "{" else None
            if char != "{" or repeat is not None:
                # the character before a quantifier is not a sure part of every match
                if current:
                    current.pop()
                close()
                index += len(repeat.group(0)) if repeat is not None else 1
                continue
            if depth == 0:
                current.append(char)
            index += 1
            continue
        if char in ".^$":
            close()
            index += 1
            continue
        if depth == 0:
            current.append(char)
        index += 1
    close()
    return runs


@lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> Any:
    """Compile an RE2 pattern, or raise `OperandInvalid` on `value` saying why it cannot be."""
    if len(pattern) > MAX_REGEX_LENGTH:
        raise OperandInvalid("value", f"is longer than {MAX_REGEX_LENGTH} characters")
    return compile_re2(pattern, "value")


def value_problem(op: str, value: Any) -> str | None:
    """Why `value` cannot be the operand of `op`, or None."""
    problem = json_problem(value)
    if problem:
        return problem
    if op in _ARRAY_OPS and not isinstance(value, list):
        return f"must be an array for `{op}`"
    if op in _STRING_VALUE_OPS and not isinstance(value, str):
        return f"must be a string for `{op}`"
    if op in _NUMBER_OPS and not is_number(value):
        return f"must be a number for `{op}`"
    if op == "exists" and not isinstance(value, bool):
        return "must be `true` or `false` for `exists`"
    if op == "regex":
        if not isinstance(value, str):
            return "must be a string for `regex`"
        try:
            compile_regex(value)
        except OperandInvalid as exc:
            return exc.message
    if op == "cidr":
        if not isinstance(value, str):
            return "must be a string for `cidr`"
        try:
            parse_network(value)
        except OperandInvalid as exc:
            return exc.message.replace(f"`{value}` is not a valid CIDR", "not a valid CIDR", 1)
    return None


def clause_problems(clause: object) -> list[tuple[str, str]]:
    """Every problem of one clause, as (field inside it, message) pairs."""
    if not isinstance(clause, dict):
        return [("", "must be an object with `path`, `op` and `value`")]
    problems: list[tuple[str, str]] = []
    for key in clause:
        if key not in CLAUSE_FIELDS:
            problems.append((str(key), "unknown field"))
    if "path" not in clause:
        problems.append(("path", "is required"))
    else:
        try:
            parse_path(clause["path"])
        except OperandInvalid as exc:
            problems.append((exc.field, exc.message))
    op = clause.get("op")
    if "op" not in clause:
        problems.append(("op", "is required"))
    elif not isinstance(op, str) or op not in OPERATORS:
        shown = op if isinstance(op, str) else repr(op)
        problems.append(("op", f"unknown operator `{shown}` (known: {', '.join(OPERATORS)})"))
    elif "value" not in clause:
        if op != "exists":
            problems.append(("value", f"is required for `{op}`"))
    else:
        problem = value_problem(op, clause["value"])
        if problem:
            problems.append(("value", problem))
    return problems


def _membership(values: list[Any]) -> Test:
    """A fast `in` over JSON values: strings and numbers by hash, the rest by JSON equality."""
    strings = frozenset(v for v in values if isinstance(v, str))
    numbers = frozenset(v for v in values if is_number(v))
    bools = frozenset(v for v in values if isinstance(v, bool))
    has_null = any(v is None for v in values)
    others = tuple(v for v in values if isinstance(v, list | dict))

    def test(actual: Any) -> bool:
        cls = actual.__class__
        if cls is str:
            return actual in strings
        if cls is bool:
            return actual in bools
        if cls is int or cls is float:
            return actual in numbers
        if actual is None:
            return has_null
        if isinstance(actual, str):
            return str(actual) in strings
        if is_number(actual):
            return actual in numbers
        return any(json_equal(actual, other) for other in others)

    return test


def _compile_operator(op: str, value: Any) -> Test:
    """The test `actual -> bool` for an operator and an operand already checked."""
    if op == "eq":
        if isinstance(value, str):
            return lambda actual: actual == value and isinstance(actual, str)
        return lambda actual: json_equal(actual, value)
    if op == "neq":
        if isinstance(value, str):
            return lambda actual: not (actual == value and isinstance(actual, str))
        return lambda actual: not json_equal(actual, value)
    if op == "in":
        return _membership(value)
    if op == "not_in":
        member = _membership(value)
        return lambda actual: not member(actual)
    if op == "contains":
        if isinstance(value, str):

            def contains(actual: Any) -> bool:
                if isinstance(actual, str):
                    return value in actual
                if isinstance(actual, list):
                    return any(json_equal(item, value) for item in actual)
                return False

            return contains
        return lambda actual: (
            isinstance(actual, list) and any(json_equal(item, value) for item in actual)
        )
    if op == "starts_with":
        return lambda actual: isinstance(actual, str) and actual.startswith(value)
    if op == "ends_with":
        return lambda actual: isinstance(actual, str) and actual.endswith(value)
    if op == "regex":
        return _regex_test(value)
    if op == "cidr":
        version, base, mask = network_key(parse_network(value))

        def in_network(actual: Any) -> bool:
            key = ip_key(actual) if isinstance(actual, str) else None
            return key is not None and key[0] == version and key[1] & mask == base

        return in_network
    if op == "gt":
        return lambda actual: is_number(actual) and actual > value
    if op == "gte":
        return lambda actual: is_number(actual) and actual >= value
    if op == "lt":
        return lambda actual: is_number(actual) and actual < value
    if op == "lte":
        return lambda actual: is_number(actual) and actual <= value
    raise AssertionError(f"operator `{op}` has no test")  # unreachable: op was checked


def _regex_test(pattern: str) -> Test:
    """Search with RE2, after checking (with `in`) the literals every match must contain."""
    search = fast_search(compile_regex(pattern))
    # RE2 reads a lone surrogate of the text as `?`: a literal holding `?` may be in what it reads
    # and not in the text, so only the others filter (the rest of the text reads the same)
    literals = [literal for literal in required_literals(pattern) if "?" not in literal]
    literals = sorted(literals, key=len, reverse=True)[:2]
    if not literals:
        return lambda actual: isinstance(actual, str) and search(actual)
    first, rest = literals[0], literals[1:]

    def regex_filtered(actual: Any) -> bool:
        if not isinstance(actual, str) or first not in actual:
            return False
        return all(literal in actual for literal in rest) and search(actual)

    return regex_filtered


def _number(actual: Any) -> bool:
    cls = actual.__class__
    return cls is int or cls is float or (cls is not bool and is_number(actual))


def _on_key(op: str, value: Any, key: str) -> Callable[[dict[str, Any]], bool] | None:
    """A one-call test for the commonest clauses on a top-level key, or None.

    A missing key reads as `None` here, which each of these operators rejects, exactly as it
    rejects a missing value; the generic path handles every other case.
    """
    if op == "eq" and isinstance(value, str):

        def eq_text(arguments: dict[str, Any]) -> bool:
            actual = arguments.get(key)
            return actual == value and isinstance(actual, str)

        return eq_text
    if op in _NUMBER_OPS:
        if op == "gt":

            def gt(arguments: dict[str, Any]) -> bool:
                actual = arguments.get(key)
                return _number(actual) and actual > value

            return gt
        if op == "gte":

            def gte(arguments: dict[str, Any]) -> bool:
                actual = arguments.get(key)
                return _number(actual) and actual >= value

            return gte
        if op == "lt":

            def lt(arguments: dict[str, Any]) -> bool:
                actual = arguments.get(key)
                return _number(actual) and actual < value

            return lt

        def lte(arguments: dict[str, Any]) -> bool:
            actual = arguments.get(key)
            return _number(actual) and actual <= value

        return lte
    if op == "starts_with":

        def starts(arguments: dict[str, Any]) -> bool:
            actual = arguments.get(key)
            return isinstance(actual, str) and actual.startswith(value)

        return starts
    if op == "ends_with":

        def ends(arguments: dict[str, Any]) -> bool:
            actual = arguments.get(key)
            return isinstance(actual, str) and actual.endswith(value)

        return ends
    if op == "contains" and isinstance(value, str):

        def contains_text(arguments: dict[str, Any]) -> bool:
            actual = arguments.get(key)
            if isinstance(actual, str):
                return value in actual
            if isinstance(actual, list):
                return any(json_equal(item, value) for item in actual)
            return False

        return contains_text
    if op == "regex":
        test = _regex_test(value)
        return lambda arguments: test(arguments.get(key))
    return None


def compile_clause(clause: object, *, checked: bool = False) -> Callable[[dict[str, Any]], bool]:
    """A test over the (object) arguments, or raise `OperandInvalid` with the first problem.

    `checked` says the caller has just found no problem in `clause` (`clause_problems`), so it
    is not looked for again.
    """
    if not checked:
        problems = clause_problems(clause)
        if problems:
            field, message = problems[0]
            raise OperandInvalid(field, message)
    assert isinstance(clause, dict)
    steps = parse_path(clause["path"])
    op = clause["op"]
    if op == "exists":
        wanted = clause.get("value", True)
        if wanted:
            return lambda arguments: resolve(steps, arguments) is not MISSING
        return lambda arguments: resolve(steps, arguments) is MISSING
    if len(steps) == 1 and steps[0].__class__ is str:
        fast = _on_key(op, clause["value"], steps[0])
        if fast is not None:
            return fast
    test = _compile_operator(op, clause["value"])
    if len(steps) == 1 and steps[0].__class__ is str:
        key = steps[0]

        def on_key(arguments: dict[str, Any]) -> bool:
            actual = arguments.get(key, MISSING)
            return actual is not MISSING and test(actual)

        return on_key

    def on_path(arguments: dict[str, Any]) -> bool:
        actual = resolve(steps, arguments)
        return actual is not MISSING and test(actual)

    return on_path
