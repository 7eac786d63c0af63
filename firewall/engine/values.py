"""JSON value helpers shared by the operators: equality, numbers and JSON-ness.

Equality is JSON equality, not Python equality: `true` is not `1`, `1` equals `1.0`, objects
compare by keys and values, arrays element by element.
"""

from __future__ import annotations

import math
from typing import Any

#: How deep a rule's own values may nest; arguments are never walked recursively with this.
MAX_VALUE_DEPTH = 32


def utf8_safe(text: str) -> str:
    """`text` with lone surrogates (which UTF-8 cannot carry, nor RE2 read) replaced by `?`."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def is_number(value: object) -> bool:
    """A JSON number: an int or float that is not a bool."""
    cls = value.__class__
    if cls is int or cls is float:
        return True
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: bools are never numbers, numbers compare by value."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) or is_number(b):
        return is_number(a) and is_number(b) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return False


def json_problem(value: Any, depth: int = 0) -> str | None:
    """Why `value` is not a plain JSON value (as a rule may hold one), or None."""
    if depth > MAX_VALUE_DEPTH:
        return f"nests deeper than {MAX_VALUE_DEPTH} levels"
    if value is None or isinstance(value, bool | str):
        return None
    if is_number(value):
        if isinstance(value, float) and not math.isfinite(value):
            return "must be a finite number"
        return None
    if isinstance(value, list):
        for item in value:
            problem = json_problem(item, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return "has an object key that is not a string"
            problem = json_problem(item, depth + 1)
            if problem:
                return problem
        return None
    return "is not a JSON value"
