r"""A rule said in one line, for the rules table and the read-only rule page.

`shell.* where $.command ~ rm\s+-rf → deny`: the tool glob, the skill, the stage, every clause, the
egress lists or the sequence, then the verdict. It reads a rule's stored spec (the policy format of
the specification) and never fails: a part it does not know is shown as it is stored.
"""

from __future__ import annotations

import json
from typing import Any

OPERATORS = {
    "eq": "=",
    "neq": "≠",
    "in": "in",
    "not_in": "not in",
    "contains": "contains",
    "starts_with": "starts with",
    "ends_with": "ends with",
    "regex": "~",
    "cidr": "in",
    "gt": ">",
    "gte": "≥",
    "lt": "<",
    "lte": "≤",
}


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def clause_text(clause: dict[str, Any]) -> str:
    path, op = clause.get("path", "$"), clause.get("op", "")
    if op == "exists":
        return f"{path} exists"
    return f"{path} {OPERATORS.get(op, op)} {_value(clause.get('value'))}"


def _sequence_text(sequence: dict[str, Any]) -> str:
    steps = []
    for step in sequence.get("steps") or []:
        text = step.get("tool_glob") or "*"
        if (step.get("min_count") or 1) > 1:
            text += f" ×{step['min_count']}"
        if step.get("egress"):
            text += " (egress)"
        steps.append(text)
    text = "sequence " + " then ".join(steps)
    if sequence.get("window_seconds"):
        text += f" within {sequence['window_seconds']} s"
    return text


def _verdict_text(spec: dict[str, Any]) -> str:
    verdict = spec.get("verdict", "")
    if verdict == "cap_cost" and spec.get("cap_cost_cents") is not None:
        return f"cap_cost {spec['cap_cost_cents']}¢"
    if verdict == "sanitize":
        sanitize = spec.get("sanitize") or {}
        what = list(sanitize.get("presets") or []) + [
            f"/{p}/" for p in sanitize.get("patterns") or []
        ]
        return "sanitize " + ", ".join(what) if what else "sanitize"
    actions = (spec.get("sequence") or {}).get("on_match") or []
    return verdict + (f" + {', '.join(actions)}" if actions else "")


def rule_text(spec: dict[str, Any]) -> str:
    """The rule's conditions and verdict in one line."""
    parts = [spec.get("tool_name_glob") or "any tool"]
    if spec.get("skill_glob"):
        parts.append(f"of {spec['skill_glob']}")
    if spec.get("stage"):
        parts.append(f"at {spec['stage']}")
    clauses = [clause_text(c) for c in spec.get("args_match") or []]
    if clauses:
        parts.append("where " + " and ".join(clauses))
    egress = spec.get("egress") or {}
    # An allow verdict's scope is its allow list; an enforcing verdict's is its deny list.
    scope, carve = ("allow", "deny") if spec.get("verdict") == "allow" else ("deny", "allow")
    if egress.get(scope):
        parts.append("to " + ", ".join(egress[scope]))
    if egress.get(carve):
        parts.append("except " + ", ".join(egress[carve]))
    if spec.get("sequence"):
        parts = [_sequence_text(spec["sequence"])]
    return " ".join(parts) + " → " + _verdict_text(spec)
