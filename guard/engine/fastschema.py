"""A fast yes/no validator for plain tool schemas; `jsonschema` stays the judge.

Most tool schemas are a flat object of typed arguments with `required`, `enum`, bounds and patterns.
Validating those with `jsonschema` costs tens of microseconds a call; this module compiles such a
schema once into nested closures that answer only "valid or not" in a few. The check uses it like
this: a call the fast validator accepts is valid; a call it rejects, or a schema it cannot compile,
goes to `jsonschema`, which gives the errors and their pointers. So the fast path can never make a
refusal lose its detail, and it never decides alone that something invalid is valid *as long as both
agree on what they accept* -- which a property test checks on random schemas and values.

Compiled keywords: `type` (one or a list), `properties`, `required`, `additionalProperties: false`,
`unevaluatedProperties: false` (only where no sibling keyword can evaluate properties), `enum`,
`const`, `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `minLength`, `maxLength`,
`pattern` (on RE2, as the slow path matches it too), `items` (one schema), `minItems`, `maxItems`,
and the annotations `title`, `description`, `default`, `examples`, `$schema`, `$comment`,
`free_text`. Anything
else (`format`, `$ref`, `allOf`, `patternProperties`, ...) makes `compile_fast` return None: that schema is always left to
`jsonschema`. Equality for `enum` / `const` follows JSON Schema (1 equals 1.0, true never equals 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import re2

from .patterns import compiled

Validator = Callable[[Any], bool]

# `free_text` is the catalogue's own annotation on an argument (`marks.py`): JSON Schema ignores it.
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$schema", "$comment", "free_text"}
)
_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "unevaluatedProperties", "enum",
        "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
        "maxLength", "pattern", "items", "minItems", "maxItems",
    }
) | _ANNOTATIONS  # fmt: skip


class _Unsupported(Exception):
    """A schema this module leaves to `jsonschema`."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda value: isinstance(value, str),
    "number": _is_number,
    "integer": lambda value: (
        (isinstance(value, int) and not isinstance(value, bool))
        or (isinstance(value, float) and value.is_integer())
    ),
    "boolean": lambda value: isinstance(value, bool),
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "null": lambda value: value is None,
}


def _json_key(value: Any) -> Any:
    """A key under which JSON-equal values meet: numbers by value, booleans apart from numbers."""
    if isinstance(value, bool):
        return ("b", value)
    if _is_number(value):
        return ("n", float(value)) if math.isfinite(value) else ("x", repr(value))
    if isinstance(value, str):
        return ("s", value)
    if value is None:
        return ("z", None)
    if isinstance(value, list):
        return ("l", tuple(_json_key(item) for item in value))
    if isinstance(value, dict):
        return ("d", tuple(sorted((key, _json_key(item)) for key, item in value.items())))
    raise _Unsupported


def _length(text: str) -> int:
    """String length in code points, as JSON Schema counts it."""
    return len(text)


def _compile(schema: Any, depth: int = 0) -> Validator:
    if depth > 32:
        raise _Unsupported
    if schema is True or schema == {}:
        return lambda value: True
    if schema is False:
        return lambda value: False
    if not isinstance(schema, dict) or not _KEYWORDS.issuperset(schema):
        raise _Unsupported
    checks: list[Validator] = []
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not kinds or not all(isinstance(name, str) and name in _TYPES for name in kinds):
            raise _Unsupported
        tests = [_TYPES[name] for name in kinds]
        checks.append(
            tests[0] if len(tests) == 1 else lambda value: any(test(value) for test in tests)
        )
    if "enum" in schema:
        if not isinstance(schema["enum"], list):
            raise _Unsupported
        allowed = {_json_key(item) for item in schema["enum"]}
        checks.append(lambda value: _safe_key(value) in allowed)
    if "const" in schema:
        wanted = _json_key(schema["const"])
        checks.append(lambda value: _safe_key(value) == wanted)
    checks.extend(_numbers(schema))
    checks.extend(_strings(schema))
    checks.extend(_arrays(schema, depth))
    checks.extend(_objects(schema, depth))
    return _all_of(checks)


def _all_of(checks: list[Validator]) -> Validator:
    """One validator that holds when every check holds (unrolled for the usual short lists)."""
    if not checks:
        return lambda value: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)
    if len(checks) == 3:
        first, second, third = checks
        return lambda value: first(value) and second(value) and third(value)
    frozen = tuple(checks)

    def every(value: Any) -> bool:
        for check in frozen:
            if not check(value):
                return False
        return True

    return every


def _safe_key(value: Any) -> Any:
    try:
        return _json_key(value)
    except _Unsupported:
        return object()


def _bound(schema: dict[str, Any], name: str) -> float | None:
    value = schema.get(name)
    if value is None:
        return None
    if not _is_number(value):
        raise _Unsupported
    return value


def _numbers(schema: dict[str, Any]) -> list[Validator]:
    checks: list[Validator] = []
    for name, holds in (
        ("minimum", lambda value, bound: value >= bound),
        ("maximum", lambda value, bound: value <= bound),
        ("exclusiveMinimum", lambda value, bound: value > bound),
        ("exclusiveMaximum", lambda value, bound: value < bound),
    ):
        bound = _bound(schema, name)
        if bound is not None:
            checks.append(
                lambda value, bound=bound, holds=holds: not _is_number(value) or holds(value, bound)
            )
    return checks


def _strings(schema: dict[str, Any]) -> list[Validator]:
    checks: list[Validator] = []
    shortest, longest = schema.get("minLength"), schema.get("maxLength")
    for limit in (shortest, longest):
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
            raise _Unsupported
    if shortest is not None:
        checks.append(lambda value: not isinstance(value, str) or _length(value) >= shortest)
    if longest is not None:
        checks.append(lambda value: not isinstance(value, str) or _length(value) <= longest)
    if "pattern" in schema:
        try:
            pattern = compiled(schema["pattern"])
        except (re2.error, TypeError, UnicodeError):
            raise _Unsupported from None
        checks.append(lambda value: not isinstance(value, str) or pattern.search(value) is not None)
    return checks


def _arrays(schema: dict[str, Any], depth: int) -> list[Validator]:
    checks: list[Validator] = []
    if "items" in schema:
        item = _compile(schema["items"], depth + 1)
        checks.append(lambda value: not isinstance(value, list) or all(item(x) for x in value))
    fewest, most = schema.get("minItems"), schema.get("maxItems")
    for limit in (fewest, most):
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
            raise _Unsupported
    if fewest is not None:
        checks.append(lambda value: not isinstance(value, list) or len(value) >= fewest)
    if most is not None:
        checks.append(lambda value: not isinstance(value, list) or len(value) <= most)
    return checks


def _objects(schema: dict[str, Any], depth: int) -> list[Validator]:
    checks: list[Validator] = []
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise _Unsupported
    compiled = {name: _compile(sub, depth + 1) for name, sub in properties.items()}
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        raise _Unsupported
    closed = False
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if keyword in schema:
            if schema[keyword] is not False:
                raise _Unsupported
            closed = True
    items = tuple(compiled.items())
    needed = tuple(required)

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        for name in needed:
            if name not in value:
                return False
        for name, validate in items:
            if name in value and not validate(value[name]):
                return False
        return not closed or all(name in compiled for name in value)

    if compiled or needed or closed:
        checks.append(check)
    return checks


def compile_fast(schema: Any) -> Validator | None:
    """A fast yes/no validator for `schema`, or None if it uses a keyword left to `jsonschema`."""
    try:
        return _compile(schema)
    except _Unsupported:
        return None
