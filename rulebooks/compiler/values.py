"""What the condition language's values mean: truth, equality, order and the operators.

Three-valued: a value the gate cannot know (an argument the call lacks, a tool that has not
answered, a variable the model writes) is `UNKNOWN`, and every operator propagates it; `and`
and `or` follow Kleene's logic (`False and UNKNOWN` is False). A type mismatch (`"a" < 3`) is
`UNKNOWN` too, never an exception. Booleans are not numbers (`True == 1` is False), so a fact
never compares equal to a count by accident.

This module is shared by the fast evaluator (`evaluate.compile_node`) and the plain reference
one (`evaluate.evaluate`), so the two can only disagree on structure, not on meaning.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        raise TypeError("UNKNOWN has no truth value")


UNKNOWN: Any = _Unknown()


_NUMBERS = (int, float)


def is_number(value: Any) -> bool:
    kind = type(value)
    if kind is int or kind is float:
        return True
    return isinstance(value, _NUMBERS) and not isinstance(value, bool)


def truth(value: Any) -> Any:
    """True, False or UNKNOWN: true is a true boolean, a non-zero number, a non-empty text,
    list or mapping."""
    if value is True or value is False:
        return value
    if value is UNKNOWN:
        return UNKNOWN
    if value is None:
        return False
    if isinstance(value, bool):
        return bool(value)
    if is_number(value):
        return value == value and value != 0
    if isinstance(value, str | list | tuple | Mapping):
        return len(value) > 0
    return UNKNOWN


def fact_value(value: Any) -> bool:
    """A reported fact as a boolean; anything that is not true (or cannot be read) is false."""
    if value is True or value is False:
        return value
    result = truth(value)
    return result is True


def equals(a: Any, b: Any) -> bool:
    kind = type(a)
    if kind is type(b) and (kind is str or kind is int or kind is bool):
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return len(a) == len(b) and all(k in b and equals(v, b[k]) for k, v in a.items())
    if _is_list(a) and _is_list(b):
        return len(a) == len(b) and all(equals(x, y) for x, y in zip(a, b, strict=True))
    return False


def _is_list(value: Any) -> bool:
    return isinstance(value, list | tuple)


def _order(a: Any, b: Any) -> bool:
    return (is_number(a) and is_number(b)) or (isinstance(a, str) and isinstance(b, str))


def compare(op: str, a: Any, b: Any) -> Any:
    if a is UNKNOWN or b is UNKNOWN:
        return UNKNOWN
    if op == "==":
        return equals(a, b)
    if op == "!=":
        return not equals(a, b)
    if op in ("<", "<=", ">", ">="):
        if not _order(a, b):
            return UNKNOWN
        if isinstance(a, float) and math.isnan(a) or isinstance(b, float) and math.isnan(b):
            return UNKNOWN
        if op == "<":
            return a < b
        if op == "<=":
            return a <= b
        if op == ">":
            return a > b
        return a >= b
    if op in ("in", "not in"):
        found = contains(b, a)
        if found is UNKNOWN:
            return UNKNOWN
        return found if op == "in" else not found
    if op == "is":
        return equals(a, b)
    if op == "is not":
        return not equals(a, b)
    raise ValueError(f"unknown comparison `{op}`")


def contains(container: Any, item: Any) -> Any:
    if _is_list(container):
        return any(equals(item, x) for x in container)
    if isinstance(container, str):
        return item in container if isinstance(item, str) else UNKNOWN
    if isinstance(container, Mapping):
        return item in container if isinstance(item, str) else UNKNOWN
    return UNKNOWN


def arithmetic(op: str, a: Any, b: Any) -> Any:
    if a is UNKNOWN or b is UNKNOWN:
        return UNKNOWN
    if op == "+":
        if is_number(a) and is_number(b):
            return a + b
        if isinstance(a, str) and isinstance(b, str):
            return a + b
        if _is_list(a) and _is_list(b):
            return [*a, *b]
        return UNKNOWN
    if not (is_number(a) and is_number(b)):
        return UNKNOWN
    try:
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return a / b
        if op == "//":
            return a // b
        if op == "%":
            return a % b
    except (ZeroDivisionError, OverflowError):
        return UNKNOWN
    raise ValueError(f"unknown operator `{op}`")


def unary(op: str, a: Any) -> Any:
    if op == "not":
        t = truth(a)
        return UNKNOWN if t is UNKNOWN else not t
    if not is_number(a):
        return UNKNOWN
    return -a if op == "neg" else a


def get(base: Any, key: Any) -> Any:
    if type(base) is dict and type(key) is str:
        return base.get(key, UNKNOWN)
    if base is UNKNOWN or key is UNKNOWN:
        return UNKNOWN
    if isinstance(base, Mapping):
        if isinstance(key, str | int | float | bool) or key is None:
            try:
                return base[key] if key in base else UNKNOWN
            except TypeError:
                return UNKNOWN
        return UNKNOWN
    if _is_list(base) and isinstance(key, int) and not isinstance(key, bool):
        if -len(base) <= key < len(base):
            return base[key]
        return UNKNOWN
    return UNKNOWN


def call(name: str, args: Sequence[Any]) -> Any:
    if any(a is UNKNOWN for a in args):
        return UNKNOWN
    if name == "len":
        (a,) = args
        return len(a) if isinstance(a, str | list | tuple | Mapping) else UNKNOWN
    if name == "abs":
        (a,) = args
        return abs(a) if is_number(a) else UNKNOWN
    if name in ("min", "max"):
        items = list(args[0]) if len(args) == 1 and _is_list(args[0]) else list(args)
        if not items:
            return UNKNOWN
        if all(is_number(x) for x in items) or all(isinstance(x, str) for x in items):
            return min(items) if name == "min" else max(items)
        return UNKNOWN
    if name == "str":
        (a,) = args
        if isinstance(a, str | bool) or is_number(a) or a is None:
            return str(a)
        return UNKNOWN
    if name in ("int", "float"):
        (a,) = args
        try:
            if is_number(a):
                return int(a) if name == "int" else float(a)
            if isinstance(a, str):
                return int(a.strip()) if name == "int" else float(a.strip())
        except (ValueError, OverflowError):
            return UNKNOWN
        return UNKNOWN
    if name == "bool":
        (a,) = args
        return truth(a)
    raise ValueError(f"unknown function `{name}`")


def method(name: str, args: Sequence[Any]) -> Any:
    """A pure method of a value: `get`, `join`, `lower`, `upper`, `strip`, `startswith`,
    `endswith`."""
    base, *rest = args
    if base is UNKNOWN or any(a is UNKNOWN for a in rest):
        return UNKNOWN
    if name == "get":
        if not isinstance(base, Mapping):
            return UNKNOWN
        key = rest[0]
        if not (isinstance(key, str | int | float | bool) or key is None):
            return UNKNOWN
        return base[key] if key in base else (rest[1] if len(rest) > 1 else None)
    if not isinstance(base, str):
        return UNKNOWN
    if name == "join":
        items = rest[0]
        if _is_list(items) and all(isinstance(x, str) for x in items):
            return base.join(items)
        return UNKNOWN
    if name in ("lower", "upper", "strip"):
        return getattr(base, name)()
    if name in ("startswith", "endswith"):
        return getattr(base, name)(rest[0]) if isinstance(rest[0], str) else UNKNOWN
    raise ValueError(f"unknown method `{name}`")


def kleene_and(values: Sequence[Any]) -> Any:
    unknown = False
    for value in values:
        t = truth(value)
        if t is False:
            return False
        if t is UNKNOWN:
            unknown = True
    return UNKNOWN if unknown else True


def kleene_or(values: Sequence[Any]) -> Any:
    unknown = False
    for value in values:
        t = truth(value)
        if t is True:
            return True
        if t is UNKNOWN:
            unknown = True
    return UNKNOWN if unknown else False


def freeze(value: Any) -> Any:
    """A literal list or dict built from evaluated parts; UNKNOWN anywhere makes it UNKNOWN."""
    if isinstance(value, list):
        return UNKNOWN if any(v is UNKNOWN for v in value) else value
    return value
