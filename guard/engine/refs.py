"""References to values of earlier calls: `result.order_id`, `arguments.order_id`, `get_order.card`.

A *source* names a value in one earlier call of the session: `arguments.<field>` is an argument it
was called with, `result.<field>` a field of what it returned, and a bare `<field>` means
`result.<field>` (the common case: `after: [{tool: get_order, bind: {order_id: order_id}}]` reads
the order id that `get_order` returned). Fields may be dotted (`result.customer.id`).

A *tool reference* (`check_stock.in_stock`) names a field of a tool's most recent result.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .canonical import NotJSON, canonical_json

MISSING: Any = object()
_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


def parse_source(text: Any) -> tuple[str, ...] | None:
    """Read a source into a path within a call (`("result", "order_id")`), or None if malformed."""
    if not isinstance(text, str) or not text:
        return None
    parts = text.split(".")
    if not all(_FIELD.match(part) for part in parts):
        return None
    if parts[0] in ("result", "arguments") and len(parts) > 1:
        return tuple(parts)
    return ("result", *parts)


def parse_tool_reference(text: Any) -> tuple[str, tuple[str, ...]] | None:
    """Read `tool.field[.field...]` into the tool and the path in its result, or None."""
    if not isinstance(text, str) or "." not in text:
        return None
    tool, _, rest = text.partition(".")
    path = parse_source(rest)
    if path is None or not _FIELD.match(tool):
        return None
    return tool, path


def resolve(content: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """Follow a path into a recorded call (`{"arguments", "result"}`); MISSING if absent."""
    value: Any = content
    for part in path:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return MISSING
    return value


def value_key(value: Any) -> tuple[str, Any]:
    """A hashable key under which equal JSON values meet (`40` and `40.0` alike, `"40"` apart)."""
    if isinstance(value, str):
        return ("s", value)
    try:
        return ("j", canonical_json(value))
    except NotJSON:
        return ("x", id(value))


def source_text(path: tuple[str, ...]) -> str:
    """Write a source path back as text: `result.order_id`."""
    return ".".join(path)
