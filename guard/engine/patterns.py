"""Regular expressions of catalogues on RE2: JSON Schema's `pattern` and `patternProperties`.

A catalogue's schemas come from whoever wrote the agent, and the strings they are matched against
come from the model or the person (argument values, argument names). `jsonschema` matches both
with Python's backtracking `re`, where `^(a+)+$` against thirty `a`s and a `!` runs for a minute.
RE2 matches in time linear in the text, so every pattern a tool's schema holds runs here instead:

- `RE2Validator` is Draft 2020-12 with `pattern`, `patternProperties`, `additionalProperties` and
  `unevaluatedProperties` on RE2 (the last two read `patternProperties` to know which names are
  already evaluated; `jsonschema`'s own versions call `re.search` for that);
- `pattern_issues` walks a schema, keyword by keyword, and names every pattern RE2 cannot run
  (back-references, look-around, ...) with its JSON path, so such a catalogue is refused when it
  is loaded rather than matched with a slow engine later.

RE2's syntax is close to the ECMA 262 one JSON Schema names; `\\d` and `\\w` are ASCII in both.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any

import re2
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError

from .errors import Issue

#: Longest pattern a schema may hold (characters); a longer one is refused at load.
MAX_SCHEMA_PATTERN_LENGTH = 1_000

# Keywords whose value is one subschema, a list of subschemas, or a mapping of name to subschema:
# the walk follows exactly these, so a property that happens to be called `pattern` is not read
# as the keyword.
_ONE = ("additionalProperties", "unevaluatedProperties", "items", "contains", "not", "if",
        "then", "else", "propertyNames", "unevaluatedItems", "contentSchema",
        "additionalItems")  # fmt: skip
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_NAMED = ("properties", "$defs", "definitions", "dependentSchemas")


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is reported to the author, not logged
    return options


_OPTIONS = _options()


@functools.lru_cache(maxsize=4096)
def compiled(pattern: str) -> Any:
    """`pattern` compiled on RE2 (cached: a catalogue's patterns are few and matched often)."""
    return re2.compile(pattern, _OPTIONS)


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches somewhere in `text`, as JSON Schema's `pattern` asks."""
    return compiled(pattern).search(text) is not None


def pattern_problem(pattern: Any) -> str | None:
    """Why RE2 cannot run `pattern` (one lowercase sentence), or None when it can."""
    if not isinstance(pattern, str):
        return "must be a string"
    if len(pattern) > MAX_SCHEMA_PATTERN_LENGTH:
        return f"is longer than {MAX_SCHEMA_PATTERN_LENGTH} characters"
    try:
        compiled(pattern)
    except re2.error as error:
        raw = error.args[0] if error.args else ""
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        text = text.strip().rstrip(".") or "rejected by RE2"
        return f"`{pattern}` is not a pattern RE2 can run: {text[:1].lower()}{text[1:]}"
    except (TypeError, UnicodeError):
        return f"`{pattern}` is not a pattern RE2 can run: not valid text"
    return None


def pattern_issues(schema: Any, path: str, depth: int = 0) -> Iterator[Issue]:
    """Every `pattern` and `patternProperties` key of `schema` that RE2 cannot run, by path."""
    if not isinstance(schema, dict) or depth > 64:
        return
    if "pattern" in schema:
        problem = pattern_problem(schema["pattern"])
        if problem:
            yield Issue(f"{path}.pattern", problem)
    named = schema.get("patternProperties")
    if isinstance(named, dict):
        for key, sub in named.items():
            problem = pattern_problem(key)
            if problem:
                yield Issue(f"{path}.patternProperties", problem)
            yield from pattern_issues(sub, f"{path}.patternProperties.{key}", depth + 1)
    for keyword in _ONE:
        yield from pattern_issues(schema.get(keyword), f"{path}.{keyword}", depth + 1)
    for keyword in _MANY:
        subs = schema.get(keyword)
        if isinstance(subs, list):
            for index, sub in enumerate(subs):
                yield from pattern_issues(sub, f"{path}.{keyword}[{index}]", depth + 1)
    for keyword in _NAMED:
        subs = schema.get(keyword)
        if isinstance(subs, dict):
            for name, sub in subs.items():
                yield from pattern_issues(sub, f"{path}.{keyword}.{name}", depth + 1)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"does not match {pattern!r}")


def _pattern_properties(validator: Any, named: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, sub in named.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, sub, path=key, schema_path=pattern)


def _by_patterns(schema: Any, key: str) -> bool:
    named = schema.get("patternProperties") if isinstance(schema, dict) else None
    return bool(named) and any(search(pattern, key) for pattern in named)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    extras = [key for key in instance if key not in declared and not _by_patterns(schema, key)]
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        names = ", ".join(repr(key) for key in sorted(extras, key=str))
        yield ValidationError(f"additional properties are not allowed ({names})")


def _valid(errors: Iterable[Any]) -> bool:
    return next(iter(errors), None) is None


def _evaluated(validator: Any, instance: dict[str, Any], schema: Any, depth: int = 0) -> set[str]:
    """The names of `instance` that `schema` evaluates (what `unevaluatedProperties` skips):
    by `properties`, `patternProperties`, `additionalProperties`, `unevaluatedProperties`, and
    through `$ref`, `$dynamicRef`, `dependentSchemas`, the valid branches of `allOf` / `anyOf` /
    `oneOf`, and `if` with its `then` or `else`."""
    if not isinstance(schema, dict) or depth > 64:
        return set()
    names: set[str] = set()
    for keyword in ("$ref", "$dynamicRef"):
        reference = schema.get(keyword)
        if reference is not None:
            resolved = validator._resolver.lookup(reference)
            there = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            names |= _evaluated(there, instance, resolved.contents, depth + 1)
    declared = schema.get("properties")
    if isinstance(declared, dict):
        names |= declared.keys() & instance.keys()
    names |= {key for key in instance if _by_patterns(schema, key)}
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        sub = schema.get(keyword)
        if sub is not None:
            names |= {
                key for key, value in instance.items() if _valid(validator.descend(value, sub))
            }
    for name, sub in (schema.get("dependentSchemas") or {}).items():
        if name in instance:
            names |= _evaluated(validator, instance, sub, depth + 1)
    for keyword in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(keyword) or ():
            if _valid(validator.descend(instance, sub)):
                names |= _evaluated(validator, instance, sub, depth + 1)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            names |= _evaluated(validator, instance, schema["if"], depth + 1)
            branch = schema.get("then")
        else:
            branch = schema.get("else")
        names |= _evaluated(validator, instance, branch, depth + 1)
    return names


def _unevaluated_properties(validator: Any, rest: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated(validator, instance, schema)
    failing = [
        key
        for key in instance
        if key not in evaluated
        and not _valid(validator.descend(instance[key], rest, path=key, schema_path=key))
    ]
    if failing:
        names = ", ".join(repr(key) for key in sorted(failing, key=str))
        yield ValidationError(f"unevaluated properties are not allowed ({names})")


#: Draft 2020-12 with every regular expression on RE2.
RE2Validator = validators.extend(
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "unevaluatedProperties": _unevaluated_properties,
    },
)
