"""Canonical JSON: the one byte form history signatures and confirmation tokens are made over.

Sorted keys, no spaces, UTF-8, no NaN or infinity, string keys only. A float with an integral value
is written as an integer (`40.0` and `40` are the same JSON number and sign the same), so a value
that went through another JSON library still matches; any other float is written with Python's
shortest round-trip form. Anything that is not JSON (a set, bytes, an object) is refused with
`NotJSON`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from .errors import GuardError

# Integral floats beyond this are not exactly representable as integers on every JSON reader.
_MAX_SAFE_INTEGER = 2**53


class NotJSON(GuardError):
    """A value that has no canonical JSON form."""


def _normalise(value: Any, depth: int = 0) -> Any:
    if depth > 64:
        raise NotJSON("the value is nested more than 64 levels deep")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotJSON("a number is not finite")
        if value.is_integer() and abs(value) <= _MAX_SAFE_INTEGER:
            return int(value)
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotJSON(f"a key is not a string: `{key!r}`")
            out[key] = _normalise(item, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_normalise(item, depth + 1) for item in value]
    raise NotJSON(f"a value of type `{type(value).__name__}` is not JSON")


def canonical_json(value: Any) -> str:
    """Return the canonical JSON text of `value`, or raise `NotJSON`."""
    return json.dumps(
        _normalise(value),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def canonical_bytes(value: Any) -> bytes:
    """Return the canonical JSON of `value` as UTF-8 bytes, or raise `NotJSON`."""
    return canonical_json(value).encode("utf-8")


def is_json(value: Any, depth: int = 0) -> bool:
    """Say whether `value` has a canonical JSON form (without building it)."""
    # The depth is checked first, as `_normalise` does, so both agree on a scalar at depth 65.
    if depth > 64:
        return False
    if value is None or isinstance(value, (bool, str, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, Mapping):
        return all(isinstance(key, str) and is_json(item, depth + 1) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return all(is_json(item, depth + 1) for item in value)
    return False
