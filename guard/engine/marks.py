"""A tool's marks about its arguments and its price: free text, what a read fetches, its cost.

Three marks, each read strictly when the catalogue loads (every issue names its path):

- **Free text** (`"free_text": true` inside an argument's JSON Schema property): the model is
  expected to write this argument (a message body, a note's text), so the value-origin reason
  (`argument_origin`, step 11) does not ask about it. Nothing else changes: a write is still
  confirmed for `write` unless something allows it, its destinations are still read (step 4), the
  address check still reads it. The mark is refused on an argument that is, or may be, a query or a
  destination: one whose schema declares code, a command, SQL, a query, a path, a URL or a template
  (`format` / `contentMediaType`, the tables below, which the proof's QG017 / QG018 read too), one
  the tool check reads as a host (its name or `format`: `url`, `webhook`, ...), a recipient (`to`,
  `cc`, `channel`, ...), or an argument the tool fetches. `free_text` is an annotation: JSON Schema
  ignores it, and it may stand only on a top-level argument (`properties.<name>`), as `true` or
  `false`.
- **Fetches** (`fetches: [url]` on the tool): the arguments that are addresses a read fetches
  (`fetch_page(url)`, `search_emails(sender)`). Step 4 (`undeclared_destination`) does not refuse
  a destination in them, while the `address` check is on; the address check holds them more
  strictly than other arguments (each is read as a host, and a host is also read from a value with
  no scheme, `169.254.169.254/latest`, or with too many slashes, `http:///127.0.0.1`). Only a read
  may fetch: the loader refuses `fetches` on a tool whose kind is `write` or `sends_out`.
- **Cost** (`cost:` on the tool): what one call costs the run, in cents. `cost: 5` is a fixed price
  per call; `cost: {argument: price}` says the call costs the value of its argument `price` (in
  cents). The host may report a call's cost too (`ToolCheck.check(..., cost=)` and
  `ToolCheck.record(..., cost=)`); the larger of the two counts, so a host can raise a call's cost
  but never lower it below what the catalogue declares. A tool that declares no cost and whose
  cost no host reports costs nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .addresses import argument_is_host
from .errors import Issue
from .kinds import READ, RECIPIENT_ARGUMENTS

# The kinds an argument's schema declares, by its `format` (the proof's QG017 / QG018 read these).
FORMAT_KINDS = {
    "code": "code",
    "python": "code",
    "javascript": "code",
    "js": "code",
    "shell": "shell",
    "bash": "shell",
    "sh": "shell",
    "command": "shell",
    "shell-command": "shell",
    "sql": "sql",
    "query": "query",
    "path": "path",
    "file-path": "path",
    "filepath": "path",
    "uri": "url",
    "uri-reference": "url",
    "iri": "url",
    "iri-reference": "url",
    "url": "url",
    "hostname": "url",
    "idn-hostname": "url",
    "uri-template": "template",
    "template": "template",
    "jinja": "template",
    "jinja2": "template",
}
# ... and by its `contentMediaType`.
MEDIA_KINDS = {
    "text/x-python": "code",
    "application/x-python-code": "code",
    "application/javascript": "code",
    "text/javascript": "code",
    "application/x-sh": "shell",
    "text/x-shellscript": "shell",
    "application/x-shellscript": "shell",
    "application/sql": "sql",
    "text/x-sql": "sql",
}

FREE_TEXT = "free_text"


def declared_kind(schema: Any) -> str | None:
    """The kind an argument's schema declares (`code`, `shell`, `sql`, `query`, `path`, `url`,
    `template`), or None."""
    if not isinstance(schema, Mapping):
        return None
    kind = FORMAT_KINDS.get(str(schema.get("format", "")).lower())
    return kind or MEDIA_KINDS.get(str(schema.get("contentMediaType", "")).lower())


def argument_kinds(parameters: Any) -> dict[str, str]:
    """Each top-level argument whose schema declares what it holds (`declared_kind`): the one
    reading the catalogue keeps (`Tool.argument_kinds`) and the proof's QG017 / QG018 read."""
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    if not isinstance(properties, Mapping):
        return {}
    found = {str(name): declared_kind(schema) for name, schema in properties.items()}
    return {name: kind for name, kind in found.items() if kind is not None}


_NAME_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
_DATA = frozenset({"enum", "const", "default", "examples", "required", "dependentRequired"})


def _walk(node: Any, path: str):
    """Every schema (a mapping) inside a schema, with its path, depth first; values that are data
    (`enum`, `default`, ...) and the names of `properties` are not schemas."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _walk(item, f"{path}[{index}]")
        return
    if not isinstance(node, Mapping):
        return
    yield node, path
    for key, value in node.items():
        if key in _DATA:
            continue
        if key in _NAME_MAPS and isinstance(value, Mapping):
            for name, schema in value.items():
                yield from _walk(schema, f"{path}.{key}.{name}")
        else:
            yield from _walk(value, f"{path}.{key}")


def free_text_arguments(
    parameters: Any, declared: Mapping[str, Any], where: str, fetches: tuple[str, ...]
) -> tuple[frozenset[str], list[Issue]]:
    """The arguments marked `free_text: true`, and every misplaced or forbidden mark.

    `declared` maps each top-level argument to its schema (as `schema._declared_names` reads it).
    """
    if not isinstance(parameters, Mapping):
        return frozenset(), []
    own = {id(schema): name for name, schema in declared.items() if isinstance(schema, Mapping)}
    marked: set[str] = set()
    issues: list[Issue] = []
    for node, path in _walk(parameters, f"{where}.parameters"):
        if FREE_TEXT not in node:
            continue
        mark_path = f"{path}.{FREE_TEXT}"
        name = own.get(id(node))
        if name is None:
            issues.append(
                Issue(mark_path, "marks an argument: put it on a top-level `properties.<name>`")
            )
            continue
        value = node[FREE_TEXT]
        if not isinstance(value, bool):
            issues.append(Issue(mark_path, f"must be true or false, not `{value}`"))
            continue
        if not value:
            continue
        problem = _not_free_text(name, node, fetches)
        if problem is not None:
            issues.append(Issue(mark_path, f"cannot mark `{name}` as free text: {problem}"))
            continue
        marked.add(name)
    return frozenset(marked), issues


def _not_free_text(name: str, schema: Mapping[str, Any], fetches: tuple[str, ...]) -> str | None:
    kind = declared_kind(schema)
    if kind is not None:
        return (
            f"its schema declares it `{kind}` (a query or a destination the model must not write "
            "unasked)"
        )
    if argument_is_host(name, dict(schema)):
        return "the tool check reads it as a host (by its name or its `format`)"
    if name.lower() in RECIPIENT_ARGUMENTS:
        return "it names a recipient"
    if name in fetches:
        return "the tool fetches it (`fetches`)"
    return None


def parse_fetches(
    raw: Any, where: str, kind: str, parameters: tuple[str, ...]
) -> tuple[tuple[str, ...], list[Issue]]:
    """Read `fetches: [argument, ...]`: top-level arguments of a read, each named once."""
    if raw is None:
        return (), []
    path = f"{where}.fetches"
    if not isinstance(raw, list) or not raw or not all(isinstance(item, str) for item in raw):
        return (), [Issue(path, "must be a non-empty list of argument names")]
    issues: list[Issue] = []
    if kind != READ:
        issues.append(
            Issue(
                path,
                f"only a read may fetch: this tool is a `{kind}` (a write or a send keeps step 4: "
                "declare it `sends_out` to send to an address)",
            )
        )
    for index, name in enumerate(raw):
        if name not in parameters:
            issues.append(
                Issue(f"{path}[{index}]", f"names an argument the tool does not declare: `{name}`")
            )
        elif raw.index(name) != index:
            issues.append(Issue(f"{path}[{index}]", f"names `{name}` twice"))
    return (tuple(raw) if not issues else ()), issues


@dataclass(frozen=True)
class Cost:
    """What one call of a tool costs the run, in cents: a fixed price, or an argument's value."""

    cents: Decimal | None = None
    argument: str | None = None

    @property
    def text(self) -> str:
        return f"{self.argument}" if self.argument is not None else f"{as_number(self.cents)}"


def is_amount(value: Any) -> bool:
    """A cost or an amount of cents: a finite number, 0 or more (never a boolean)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def cents(value: Any) -> Decimal:
    """A number of cents as a decimal, exactly as written (`0.1 + 0.2` is `0.3`)."""
    return Decimal(value) if isinstance(value, int) else Decimal(repr(float(value)))


def as_number(value: Decimal | None) -> int | float | None:
    """A decimal of cents as JSON shows it: a whole number where it is one."""
    if value is None:
        return None
    return int(value) if value == value.to_integral_value() else float(value)


def parse_cost(
    raw: Any, where: str, parameters: tuple[str, ...]
) -> tuple[Cost | None, list[Issue]]:
    """Read `cost: <cents>` or `cost: {argument: <name>}`."""
    if raw is None:
        return None, []
    path = f"{where}.cost"
    if is_amount(raw):
        return Cost(cents=cents(raw)), []
    if isinstance(raw, Mapping):
        if set(raw) != {"argument"}:
            return None, [Issue(path, "takes only `argument`: `cost: {argument: <name>}`")]
        name = raw["argument"]
        if not isinstance(name, str) or name not in parameters:
            return None, [
                Issue(f"{path}.argument", f"must name an argument of this tool, not `{name}`")
            ]
        return Cost(argument=name), []
    return None, [
        Issue(path, f"must be a number of cents, 0 or more, or `{{argument: <name>}}`, not `{raw}`")
    ]


MISSING_COST = object()


def declared_cost(cost: Cost | None, arguments: Mapping[str, Any]) -> Any:
    """What the catalogue says this call costs (a decimal), or `MISSING_COST` where it names an
    argument the call lacks or that is not an amount."""
    if cost is None:
        return Decimal(0)
    if cost.argument is None:
        return cost.cents
    value = arguments.get(cost.argument)
    if not is_amount(value):
        return MISSING_COST
    return cents(value)
