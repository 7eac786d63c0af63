"""The compiled record: its version, its canonical JSON, and the check that a record is one.

A record is plain JSON, the same for the three source formats::

    {
      "version": "stalwart-rulebook/1",
      "format": "colang-1.0" | "colang-2.x" | "rule-sheet",
      "filename": "policy.co",
      "policy_sha256": "<hex SHA-256 of the source bytes>",
      "imports": [{"path", "line"}],
      "user_intents": [{"name", "examples", "line"}],
      "bot_messages": [{"name", "texts", "line"}],
      "flows": [{"name", "line", "kind", "root", "modifiers", "decorators", "parameters",
                 "returns", "steps"}],
      "facts": ["order_paid", ...],                    # sorted
      "tools": {"<tool>": {"routes": [...], "rules": [...]}}   # sorted by tool
    }

A route (Colang) is one way a flow reaches the tool: `flow`, `line`, `via` (the call sites on
the way), `form`, `arguments` (`binds` / `equals` / `expression`) and `conditions`, each with
its `kind` (`if`, `elif`, `while`, or `when` for a dialogue event, which the gate leaves to the
conversation), `flow`, `line`, `condition` text, whether it `holds` on the route, its `test`
tree (see `expressions`) and what the flow answers `otherwise` (`{"bot": name}`,
`{"text": ...}`, `{"stop": true}`, `{"tool": name}` or null), with `otherwise_if` when later
`else if` branches answer differently. Routes share condition objects; treat a record as
read-only. A rule (rule sheet) is one row: `row`, `condition`, `test`, `decision`, `reason`,
`at_most`, `per`, `spend`, `amount`, `same`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

RECORD_VERSION = "stalwart-rulebook/1"
FORMATS = ("colang-1.0", "colang-2.x", "rule-sheet")
KEYS = (
    "version",
    "format",
    "filename",
    "policy_sha256",
    "imports",
    "user_intents",
    "bot_messages",
    "flows",
    "facts",
    "tools",
)
_SHA256 = re.compile(r"[0-9a-f]{64}")


def canonical_json(record: Mapping[str, Any]) -> str:
    """The record as canonical JSON text: sorted keys, two-space indent, a final newline."""
    return json.dumps(record, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def new_record(
    fmt: str,
    *,
    filename: str,
    policy_sha256: str,
    tools: dict[str, Any],
    facts: list[str],
    flows: list[dict[str, Any]] | None = None,
    user_intents: list[dict[str, Any]] | None = None,
    bot_messages: list[dict[str, Any]] | None = None,
    imports: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "version": RECORD_VERSION,
        "format": fmt,
        "filename": filename,
        "policy_sha256": policy_sha256,
        "imports": imports or [],
        "user_intents": user_intents or [],
        "bot_messages": bot_messages or [],
        "flows": flows or [],
        "facts": sorted(set(facts)),
        "tools": dict(sorted(tools.items())),
    }


def record_problems(record: Any) -> list[str]:
    """What makes `record` not a record of this version (empty when it is one)."""
    if not isinstance(record, Mapping):
        return ["a record is a JSON object"]
    problems: list[str] = []
    if record.get("version") != RECORD_VERSION:
        problems.append(f"`version` must be `{RECORD_VERSION}`")
    if record.get("format") not in FORMATS:
        problems.append("`format` must be one of " + ", ".join(f"`{f}`" for f in FORMATS))
    sha = record.get("policy_sha256")
    if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
        problems.append("`policy_sha256` must be 64 lowercase hex digits")
    for key in ("imports", "user_intents", "bot_messages", "flows", "facts"):
        if not isinstance(record.get(key), list):
            problems.append(f"`{key}` must be a list")
    tools = record.get("tools")
    if not isinstance(tools, Mapping):
        problems.append("`tools` must be an object")
        return problems
    for name, entry in tools.items():
        if not isinstance(entry, Mapping):
            problems.append(f"`tools.{name}` must be an object")
            continue
        for key in ("routes", "rules"):
            items = entry.get(key)
            if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
                problems.append(f"`tools.{name}.{key}` must be a list of objects")
    return problems
