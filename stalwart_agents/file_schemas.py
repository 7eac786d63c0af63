"""JSON Schemas for the files a team writes beside agent.yaml: the firewall policy and a rule sheet.

Both are built here from the engines' own vocabularies and limits (the firewall's stages, verdicts,
operators, fields and `MAX_*` sizes; the rule sheet's columns, decisions and periods), and shipped
as `stalwart_agents/schemas/firewall-policy.schema.json` and `rule-sheet.schema.json`, which
`tests/stalwart_agents/test_file_schemas.py` holds equal to what this module builds. They are for
editors (completion, a first check as you type): the engines' validators stay the judges, and say
more (a glob that does not parse, an RE2 pattern, an egress list a verdict needs).

`python -m stalwart_agents.file_schemas` writes both files again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMAS = Path(__file__).resolve().parent / "schemas"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _strings(limit: int, *, description: str = "") -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "maxLength": limit}
    if description:
        schema["description"] = description
    return schema


def firewall_policy_schema() -> dict[str, Any]:
    """The firewall policy file (`firewall: ./firewall.json`, the console's export and import)."""
    from firewall.engine import validator as v
    from firewall.engine import vocabulary as words
    from firewall.engine.sanitize import SANITIZE_PRESETS
    from firewall.engine.sequences import MAX_WINDOW_SECONDS

    glob = _strings(v.MAX_NAME_LENGTH, description="a glob over names: `*`, `?`, `[abc]`")
    clause = {
        "type": "object",
        "description": "one condition on an argument: every clause of a rule must hold",
        "properties": {
            "path": _strings(v.MAX_NAME_LENGTH, description="a JSONPath from `$`, e.g. `$.url`"),
            "op": {"enum": list(words.OPERATORS)},
            "value": {
                "description": "the operand (a list for `in`, `not_in`; a CIDR for `cidr`; an "
                "RE2 pattern for `regex`; none for `exists`)",
                "maxItems": v.MAX_CLAUSE_VALUES,
            },
        },
        "required": ["path", "op"],
        "additionalProperties": False,
    }
    entries = {
        "type": "array",
        "maxItems": v.MAX_EGRESS_ENTRIES,
        "items": {"type": "string", "description": "a CIDR, an IP address or a host name"},
    }
    step = {
        "type": "object",
        "properties": {
            "tool_glob": {**glob, "minLength": 1},
            "min_count": {"type": "integer", "minimum": 1},
            "egress": {"type": "boolean"},
        },
        "required": ["tool_glob"],
        "additionalProperties": False,
    }
    rule = {
        "type": "object",
        "properties": {
            "id": {
                "oneOf": [
                    {"type": "integer", "minimum": 0},
                    {"type": "string", "minLength": 1, "maxLength": v.MAX_ID_LENGTH},
                ]
            },
            "priority": {"type": "integer", "minimum": v.PRIORITY_MIN, "maximum": v.PRIORITY_MAX},
            "name": {**_strings(v.MAX_NAME_LENGTH), "minLength": 1},
            "enabled": {"type": "boolean"},
            "mode": {"enum": list(words.MODES)},
            "stage": {"enum": ["", *words.STAGES], "description": "empty: every stage"},
            "tool_name_glob": glob,
            "skill_glob": glob,
            "args_match": {"type": "array", "maxItems": v.MAX_CLAUSES_PER_RULE, "items": clause},
            "verdict": {"enum": list(words.VERDICTS)},
            "sanitize": {
                "type": "object",
                "properties": {
                    "presets": {"type": "array", "items": {"enum": list(SANITIZE_PRESETS)}},
                    "patterns": {
                        "type": "array",
                        "maxItems": v.MAX_SANITIZE_PATTERNS,
                        "items": _strings(v.MAX_PATTERN_LENGTH, description="an RE2 pattern"),
                    },
                },
                "additionalProperties": False,
            },
            "egress": {
                "type": "object",
                "properties": {"allow": entries, "deny": entries},
                "additionalProperties": False,
            },
            "cap_cost_cents": {"type": "integer", "minimum": 1, "maximum": v.PRIORITY_MAX},
            "sequence": {
                "type": "object",
                "properties": {
                    "steps": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": v.MAX_SEQUENCE_STEPS,
                        "items": step,
                    },
                    "window_seconds": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": MAX_WINDOW_SECONDS,
                    },
                    "on_match": {
                        "type": "array",
                        "uniqueItems": True,
                        "items": {"enum": list(words.SEQUENCE_ACTIONS)},
                    },
                },
                "required": ["steps"],
                "additionalProperties": False,
            },
            "notes": {"type": ["string", "null"], "maxLength": v.MAX_NOTES_LENGTH},
        },
        "required": ["name", "priority", "verdict"],
        "additionalProperties": False,
        "allOf": [
            {
                "if": {"properties": {"verdict": {"const": "sanitize"}}},
                "then": {"required": ["sanitize"]},
            },
            {
                "if": {"properties": {"verdict": {"const": "cap_cost"}}},
                "then": {"required": ["cap_cost_cents"]},
            },
        ],
    }
    return {
        "$schema": DRAFT,
        "$id": "stalwart-firewall-policy/1",
        "title": "Stalwart firewall policy",
        "description": "A security team's rules, matched against every call at the `inbound`, "
        "`tool_call` and `egress` stages; the first rule by priority that matches decides.",
        "type": "object",
        "properties": {
            "name": {**_strings(v.MAX_NAME_LENGTH), "minLength": 1},
            "default_verdict": {"enum": list(words.DEFAULT_VERDICTS)},
            "rules": {"type": "array", "maxItems": v.MAX_RULES_PER_POLICY, "items": rule},
        },
        "required": ["name", "default_verdict", "rules"],
        "additionalProperties": False,
    }


def rule_sheet_schema() -> dict[str, Any]:
    """One row of a rule sheet, keyed by the column's name (English or Portuguese, any case)."""
    from rulebooks.compiler import rule_sheet as sheet
    from rulebooks.compiler.limits import MAX_CELL_LENGTH

    cell = _strings(MAX_CELL_LENGTH)
    columns: dict[str, Any] = {
        "tool": {**cell, "minLength": 1, "description": "the tool the row governs"},
        "condition": {**cell, "description": "when the row applies (empty: always)"},
        "decision": {"enum": ["", *sheet.DECISIONS]},
        "reason": {**cell, "description": "the reason the gate gives"},
        "at_most": {
            "type": ["integer", "string"],
            "description": "a limit: at most this many calls per period",
        },
        "per": {"enum": ["", *sheet.PERIODS]},
        "spend": {
            "type": ["number", "string"],
            "description": "a limit: at most this much spent per period",
        },
        "amount": {**cell, "description": "the argument a spend limit adds up"},
        "same": {**cell, "description": "arguments binding `results.<tool>` to the call"},
        "notes": {**cell, "description": "ignored: for the people who read the sheet"},
    }
    properties: dict[str, Any] = {}
    for name, aliases in sheet.COLUMNS.items():
        for alias in aliases:
            properties[alias] = columns[name] if alias == name else {"$ref": f"#/properties/{name}"}
    return {
        "$schema": DRAFT,
        "$id": "stalwart-rule-sheet/1",
        "title": "Stalwart rule sheet row",
        "description": "One row of a rule sheet (CSV or XLSX), its header's column names as keys "
        "(Portuguese names are the same columns; the compiler also reads them in any case and "
        "without accents). At most "
        f"{sheet.MAX_ROWS} rows and {sheet.MAX_COLUMNS} columns.",
        "type": "object",
        "properties": properties,
        "anyOf": [{"required": [alias]} for alias in sheet.COLUMNS["tool"]],
        "additionalProperties": False,
    }


BUILT = {
    "firewall-policy.schema.json": firewall_policy_schema,
    "rule-sheet.schema.json": rule_sheet_schema,
}


def text_of(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    for name, build in BUILT.items():
        (SCHEMAS / name).write_text(text_of(build()), encoding="utf-8")


if __name__ == "__main__":
    main()
