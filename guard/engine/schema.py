"""Arguments against a tool's JSON Schema (2020-12): strict loading, validation, pointers.

An argument the schema does not declare is refused even where the schema leaves out
`additionalProperties: false`: at load time every object that lists `properties` (the root, and
objects nested under `properties`, `items`, `prefixItems` and `additionalProperties`) and says
nothing about extra properties gets `unevaluatedProperties: false`, which, unlike
`additionalProperties`, counts the properties that `allOf` / `$ref` branches declare. A schema that
explicitly allows extra properties (`additionalProperties` other than false, or `patternProperties`)
keeps them, and those arguments count as partially described (`schema_partial`), like a declared
argument whose schema constrains nothing (`{}` or `true`).

Every `pattern` and `patternProperties` runs on RE2 (`patterns.py`); a schema holding one RE2
cannot run is refused at load, naming the pattern's path.

Validity is answered first by `fastschema` where the schema is plain enough, else (and for every
call the fast path rejects, so that each problem gets its pointer) by `jsonschema`.

Messages are built from the keyword that failed, never from the value, so a secret argument never
shows up in a refusal. Remote references are refused at load: the engine does no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError

from .addresses import argument_is_host
from .errors import Issue
from .fastschema import Validator, compile_fast
from .patterns import RE2Validator, pattern_issues

_CONSTRAINING = frozenset(
    {"type", "enum", "const", "$ref", "anyOf", "oneOf", "allOf", "not", "pattern", "format"}
)
_EXTRA_KEYWORDS = ("additionalProperties", "unevaluatedProperties", "patternProperties")
_FORMAT_CHECKER = Draft202012Validator.FORMAT_CHECKER


@dataclass(frozen=True)
class ArgumentSchema:
    """A tool's parameters, ready to validate calls."""

    declared: tuple[str, ...]
    open: bool
    partial: frozenset[str]
    host_arguments: frozenset[str]
    validator: RE2Validator | None
    fast: Validator | None = None

    def undeclared(self, arguments: Mapping[str, Any]) -> list[str]:
        """The arguments the schema does not declare (none where the schema allows extra ones)."""
        if self.open:
            return []
        declared = self.declared
        return [name for name in arguments if name not in declared]

    def partial_arguments(self, arguments: Mapping[str, Any]) -> list[str]:
        """The arguments of a call that the schema describes only partly or not at all."""
        declared = self.declared
        return [name for name in arguments if name in self.partial or name not in declared]


def pointer(parts: Iterable[Any]) -> str:
    """A JSON pointer (RFC 6901) from path parts."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def _remote_references(schema: Any, path: str) -> Iterable[Issue]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if (
                key in ("$ref", "$dynamicRef")
                and isinstance(value, str)
                and not value.startswith("#")
            ):
                yield Issue(
                    f"{path}.{key}", f"a reference outside the schema is not allowed: `{value}`"
                )
            else:
                yield from _remote_references(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from _remote_references(item, f"{path}[{index}]")


def _close(node: Any) -> None:
    """Add `unevaluatedProperties: false` to objects that list properties but not extras."""
    if not isinstance(node, dict):
        return
    if "properties" in node and not any(keyword in node for keyword in _EXTRA_KEYWORDS):
        node["unevaluatedProperties"] = False
    for child in (node.get("properties") or {}).values():
        _close(child)
    for key in ("items", "additionalProperties"):
        _close(node.get(key))
    for child in node.get("prefixItems") or ():
        _close(child)


def _declared_names(node: Any, root: Any, depth: int = 0) -> dict[str, Any]:
    """The argument names an object schema declares, with their schemas: its own `properties` and
    those of its `allOf` / `anyOf` / `oneOf` / `then` / `else` branches and local `$ref`s."""
    if not isinstance(node, dict) or depth > 16:
        return {}
    names: dict[str, Any] = {}
    for key in ("allOf", "anyOf", "oneOf"):
        for branch in node.get(key) or ():
            names.update(_declared_names(branch, root, depth + 1))
    for key in ("then", "else"):
        names.update(_declared_names(node.get(key), root, depth + 1))
    reference = node.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/"):
        target: Any = root
        for part in reference[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        names.update(_declared_names(target, root, depth + 1))
    properties = node.get("properties")
    if isinstance(properties, dict):
        names.update(properties)
    return names


def declared_names(schema: Any) -> dict[str, Any]:
    """The top-level arguments a tool's `parameters` declares, each with its own schema."""
    return _declared_names(schema, schema)


def _constrains(schema: Any) -> bool:
    if schema is False:
        return True
    return isinstance(schema, dict) and bool(_CONSTRAINING & schema.keys())


def compile_parameters(schema: Any, path: str) -> tuple[ArgumentSchema | None, list[Issue]]:
    """Check a tool's `parameters` schema and build its validator; issues name their path."""
    if schema is None:
        return ArgumentSchema((), False, frozenset(), frozenset(), None), []
    if not isinstance(schema, dict):
        return None, [Issue(path, "must be a JSON Schema object")]
    issues = list(_remote_references(schema, path))
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.path)
        issues.append(Issue(path + where, f"is not a valid JSON Schema: {error.message}"))
    else:
        issues.extend(pattern_issues(schema, path))
    root_type = schema.get("type")
    if root_type is not None and root_type != "object":
        issues.append(Issue(f"{path}.type", "must be `object`: a tool takes named arguments"))
    properties = schema.get("properties")
    if properties is not None and not isinstance(properties, dict):
        issues.append(Issue(f"{path}.properties", "must be a mapping of argument name to schema"))
    if issues:
        return None, issues
    properties = _declared_names(schema, schema)
    tightened = copy.deepcopy(schema)
    if not any(keyword in tightened for keyword in _EXTRA_KEYWORDS):
        tightened["unevaluatedProperties"] = False
    _close(tightened)
    extra = schema.get("additionalProperties", None)
    open_schema = "patternProperties" in schema or (
        "additionalProperties" in schema and extra is not False
    )
    if "unevaluatedProperties" in schema and schema["unevaluatedProperties"] is not False:
        open_schema = True
    partial = frozenset(name for name, sub in properties.items() if not _constrains(sub))
    hosts = frozenset(name for name, sub in properties.items() if argument_is_host(name, sub))
    validator = RE2Validator(tightened, format_checker=_FORMAT_CHECKER)
    fast = compile_fast(tightened)
    return ArgumentSchema(tuple(properties), open_schema, partial, hosts, validator, fast), []


def _message(error: ValidationError) -> str:
    keyword = error.validator
    value = error.validator_value
    if keyword == "type":
        names = value if isinstance(value, list) else [value]
        return "must be of type " + " or ".join(f"`{name}`" for name in names)
    if keyword in ("enum", "const"):
        return "must be one of the values the tool allows"
    if keyword in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        words = {
            "minimum": "at least",
            "exclusiveMinimum": "more than",
            "maximum": "at most",
            "exclusiveMaximum": "less than",
        }
        return f"must be {words[keyword]} `{value}`"
    if keyword in ("minLength", "maxLength"):
        return f"must be {'at least' if keyword == 'minLength' else 'at most'} {value} characters"
    if keyword in ("minItems", "maxItems"):
        return f"must have {'at least' if keyword == 'minItems' else 'at most'} {value} items"
    if keyword == "pattern":
        return f"must match the pattern `{value}`"
    if keyword == "format":
        return f"must be a valid `{value}`"
    if keyword in ("anyOf", "oneOf"):
        return "must match one of the shapes the tool allows"
    return f"fails `{keyword}`"


def validate_arguments(
    schema: ArgumentSchema, arguments: Mapping[str, Any]
) -> list[dict[str, str]]:
    """Every problem with a call's arguments, sorted by pointer: `{pointer, keyword, message}`.

    The fast validator answers for the calls it accepts; any other call goes to `jsonschema`.
    """
    if schema.fast is not None and schema.fast(arguments):
        return []
    problems = [
        {
            "pointer": pointer([name]),
            "keyword": "undeclared",
            "message": "is not declared by the tool",
        }
        for name in schema.undeclared(arguments)
    ]
    if problems or schema.validator is None:
        return sorted(problems, key=lambda problem: problem["pointer"])
    for error in schema.validator.iter_errors(arguments):
        base = list(error.absolute_path)
        if error.validator == "required":
            present = error.instance if isinstance(error.instance, dict) else {}
            for name in error.validator_value:
                if name not in present:
                    problems.append(
                        {
                            "pointer": pointer([*base, name]),
                            "keyword": "required",
                            "message": "is required",
                        }
                    )
        elif error.validator in ("unevaluatedProperties", "additionalProperties"):
            if not isinstance(error.schema, dict):
                declared: Mapping[str, Any] = {}
            elif error.validator == "unevaluatedProperties":
                # Names that `allOf` / `$ref` branches declare are evaluated, so not extra.
                declared = _declared_names(error.schema, schema.validator.schema)
            else:
                declared = error.schema.get("properties", {})
            extras = [key for key in error.instance if key not in declared] or [""]
            for name in extras:
                problems.append(
                    {
                        "pointer": pointer([*base, name]) if name else pointer(base),
                        "keyword": "undeclared",
                        "message": "is not declared by the tool",
                    }
                )
        else:
            problems.append(
                {
                    "pointer": pointer(base),
                    "keyword": str(error.validator),
                    "message": _message(error),
                }
            )
    return sorted(problems, key=lambda problem: (problem["pointer"], problem["keyword"]))
