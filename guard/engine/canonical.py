"""Canonical JSON: the one byte form history MACs, confirmation tokens and ledger keys are made over.

The form is RFC 8785, the JSON Canonicalization Scheme (JCS), written by the `rfc8785` package:
object keys sorted by their UTF-16 code units, no whitespace, strings with only the escapes JSON
requires, numbers written as ECMAScript writes an IEEE 754 double (`1e16` is `10000000000000000`,
`1e-7` is `1e-7`, `40.0` is `40`). It is a contract another SDK can verify byte for byte: the RFC's
own examples are the test vectors (`tests/security/data/rfc8785_vectors.json`).

What has no canonical form is refused with `NotJSON`: NaN and infinities, keys that are not text,
text that is not Unicode (a lone surrogate), an integer that stands for no IEEE 754 double
(`2**53 + 1`: another reader would round it), a value nested more than 64 levels, and anything that is not JSON (a
set, bytes, an object).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import rfc8785

from .errors import GuardError

# The integers an IEEE 754 double holds exactly: RFC 8785 writes every number as one.
MAX_SAFE_INTEGER = 2**53 - 1
MAX_DEPTH = 64
# Floats both Python's `repr` and ECMAScript write in fixed notation, and the first surrogate:
# keys below it sort alike by code point and by UTF-16 code unit.
_FIXED_LOW, _FIXED_HIGH = 1e-4, 1e16
_SURROGATES = "\ud800"


class NotJSON(GuardError):
    """A value that has no canonical JSON form."""


def _normalise(value: Any, plain: list[bool], depth: int = 0) -> Any:
    """The value as plain JSON data (dicts, lists, scalars), or `NotJSON` saying what is wrong.

    `plain[0]` is cleared where the value holds something `json.dumps` would write otherwise than
    RFC 8785 (see `canonical_bytes`); an integral float comes back as an int, as RFC 8785 writes it.
    """
    if depth > MAX_DEPTH:
        raise NotJSON(f"the value is nested more than {MAX_DEPTH} levels deep")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if abs(value) <= MAX_SAFE_INTEGER:
            return value
        as_double = _double(value)
        if as_double is None:
            raise NotJSON(
                f"the integer `{value}` is not exactly a JSON number (an IEEE 754 double)"
            )
        plain[0] = False
        return as_double
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotJSON("a number is not finite")
        if value.is_integer():
            if abs(value) <= MAX_SAFE_INTEGER:
                return int(value)
            plain[0] = False  # `json` would write `9007199254740992.0`
        elif not _FIXED_LOW <= abs(value) < _FIXED_HIGH:
            plain[0] = False
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotJSON(f"a key is not a string: `{key!r}`")
            if not key.isascii() and max(key) >= _SURROGATES:
                plain[0] = False
            out[key] = _normalise(item, plain, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_normalise(item, plain, depth + 1) for item in value]
    raise NotJSON(f"a value of type `{type(value).__name__}` is not JSON")


def _double(value: int) -> float | None:
    """A large integer as the double it stands for, or None where a reader would round it.

    RFC 8785 reads every number as a double. An integer beyond ±(2**53 - 1) keeps its meaning when
    it is that double exactly (`2**60`) or is how RFC 8785 writes that double
    (`69816157980327940`, which JSON written from a double holds); `2**53 + 1` is neither.
    """
    try:
        as_double = float(value)
    except OverflowError:
        return None
    if int(as_double) == value or rfc8785.dumps(as_double) == str(value).encode("ascii"):
        return as_double
    return None


def canonical_bytes(value: Any) -> bytes:
    """Return the RFC 8785 canonical JSON of `value` as UTF-8 bytes, or raise `NotJSON`.

    Where the value holds nothing the two forms write differently, the C `json` encoder writes it
    (three to four times faster than the pure-Python `rfc8785`): its escapes are the RFC's, its
    integers too, a float in [1e-4, 1e16) is written in both as its shortest round-trip digits
    without an exponent, and keys with no character at or above U+D800 sort alike by code point
    and by UTF-16 code unit. Anything else (another float, such a key) goes to `rfc8785`. A test
    holds the two to one answer on random values.
    """
    plain = [True]
    normalised = _normalise(value, plain)
    try:
        if plain[0]:
            return json.dumps(
                normalised, sort_keys=True, separators=(",", ":"), ensure_ascii=False
            ).encode("utf-8")
        return rfc8785.dumps(normalised)
    except (UnicodeEncodeError, rfc8785.CanonicalizationError) as error:
        # What `_normalise` lets through and neither writes: text that is not Unicode.
        raise NotJSON(f"the value has no canonical form: {error}") from None


def canonical_json(value: Any) -> str:
    """Return the RFC 8785 canonical JSON text of `value`, or raise `NotJSON`."""
    return canonical_bytes(value).decode("utf-8")


def _text_ok(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_json(value: Any, depth: int = 0) -> bool:
    """Say whether `value` has a canonical JSON form (without building it)."""
    # The depth is checked first, as `_normalise` does, so both agree on a scalar at depth 65.
    if depth > MAX_DEPTH:
        return False
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, str):
        return _text_ok(value)
    if isinstance(value, int):
        return abs(value) <= MAX_SAFE_INTEGER or _double(value) is not None
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, Mapping):
        return all(
            isinstance(key, str) and _text_ok(key) and is_json(item, depth + 1)
            for key, item in value.items()
        )
    if isinstance(value, (list, tuple)):
        return all(is_json(item, depth + 1) for item in value)
    return False
