"""The rule editor's form: a rule's JSON to the structured form's fields and back.

The form is not a second validator: it only turns what a person typed into a rule's JSON (lists
from lines, numbers from digits, a clause value from its JSON spelling) and the engine's validator
then judges the whole rule, its errors keyed by JSON path.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from firewall import engine
from firewall.engine.vocabulary import SEQUENCE_ACTIONS

EMPTY_CLAUSE = {"path": "$.", "op": "eq", "value": ""}
EMPTY_STEP = {"tool_glob": "", "min_count": "1", "egress": False}
_INDEXED = re.compile(r"^((?:sequence\.)?[a-z_]+\[\d+\])")
_CLAUSE = re.compile(r"^args_match\[(\d+)\](?:\.(path|op|value))?")
_STEP = re.compile(r"^sequence\.steps\[(\d+)\](?:\.(tool_glob|min_count|egress))?")
#: A section's path and the control of the form that holds it.
_SECTIONS = {
    "egress.allow": "egress_allow",
    "egress": "egress_deny",
    "sanitize.presets": "sanitize_presets",
    "sanitize": "sanitize_patterns",
    "sequence.window_seconds": "window_seconds",
    "sequence.on_match": "on_match",
    "sequence": "step-0-tool_glob",
}


def _control_of(path: str) -> str:
    """The name of the control a validator's path is about."""
    clause = _CLAUSE.match(path)
    if clause:
        return f"clause-{clause.group(1)}-{clause.group(2) or 'value'}"
    step = _STEP.match(path)
    if step:
        return f"step-{step.group(1)}-{step.group(2) or 'tool_glob'}"
    for prefix, name in _SECTIONS.items():
        if path == prefix or path.startswith((prefix + ".", prefix + "[")):
            return name
    return path.split(".")[0].split("[")[0]


def _lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def parse_value(text: str) -> Any:
    """A clause value: its JSON reading when it has one (`10`, `true`, `["a", "b"]`, `"10"`), else the text."""
    text = (text or "").strip()
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON, an integer past 4,300 digits, too deep
        return text


def show_value(value: Any) -> str:
    return value if isinstance(value, str) and parse_value(value) == value else json.dumps(value)


def _int_or_text(text: str) -> Any:
    text = (text or "").strip()
    # ASCII digits, and few enough for int(): anything else is left for the validator to name
    return int(text) if re.fullmatch(r"-?[0-9]{1,18}", text) else text


@dataclass
class RuleForm:
    """What the editor shows: field values as typed, and the errors of the last check."""

    values: dict[str, Any]
    clauses: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    errors: dict[str, list[str]] = field(default_factory=dict)

    def invalid_names(self) -> list[str]:
        """The form's controls its errors name (`args_match[0].value` is `clause-0-value`), for
        `aria-invalid` and the first error's focus; a path naming no control names none."""
        names: list[str] = []
        for path in self.errors:
            names.append(_control_of(path))
        return [n for n in dict.fromkeys(names) if n]

    def field_errors(self) -> dict[str, list[str]]:
        """Errors grouped by what the form shows: a field, a clause row, a step row, a section."""
        grouped: dict[str, list[str]] = {}
        for path, messages in self.errors.items():
            match = _INDEXED.match(path)
            key = match.group(1) if match else path.split(".")[0].split("[")[0]
            grouped.setdefault(key, []).extend(f"{path}: {m}" for m in messages)
        return grouped

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> RuleForm:
        sanitize = spec.get("sanitize") or {}
        egress = spec.get("egress") or {}
        sequence = spec.get("sequence") or {}
        values = {
            "name": spec.get("name", ""),
            "priority": "" if spec.get("priority") is None else str(spec["priority"]),
            "enabled": spec.get("enabled", True),
            "mode": spec.get("mode", "enforce"),
            "stage": spec.get("stage", ""),
            "tool_name_glob": spec.get("tool_name_glob", ""),
            "skill_glob": spec.get("skill_glob", ""),
            "verdict": spec.get("verdict", "deny"),
            "notes": spec.get("notes", ""),
            "sanitize_presets": list(sanitize.get("presets", [])),
            "sanitize_patterns": "\n".join(sanitize.get("patterns", [])),
            "egress_allow": "\n".join(egress.get("allow", [])),
            "egress_deny": "\n".join(egress.get("deny", [])),
            "cap_cost_cents": ""
            if spec.get("cap_cost_cents") is None
            else str(spec["cap_cost_cents"]),
            "window_seconds": str(sequence.get("window_seconds", "")) if sequence else "",
            "on_match": list(sequence.get("on_match", [])) if sequence else [],
        }
        clauses = [
            {
                "path": c.get("path", ""),
                "op": c.get("op", ""),
                "value": show_value(c.get("value", "")),
            }
            for c in spec.get("args_match", [])
        ]
        steps = [
            {
                "tool_glob": s.get("tool_glob", ""),
                "min_count": str(s.get("min_count", 1)),
                "egress": bool(s.get("egress", False)),
            }
            for s in sequence.get("steps", [])
        ]
        return cls(values=values, clauses=clauses, steps=steps)

    @classmethod
    def from_post(cls, post) -> RuleForm:  # noqa: ANN001
        values = {
            "name": post.get("name", "").strip(),
            "priority": post.get("priority", "").strip(),
            "enabled": post.get("enabled") == "on",
            "mode": post.get("mode", "enforce"),
            "stage": post.get("stage", ""),
            "tool_name_glob": post.get("tool_name_glob", "").strip(),
            "skill_glob": post.get("skill_glob", "").strip(),
            "verdict": post.get("verdict", "deny"),
            "notes": post.get("notes", "").strip(),
            "sanitize_presets": post.getlist("sanitize_presets"),
            "sanitize_patterns": post.get("sanitize_patterns", ""),
            "egress_allow": post.get("egress_allow", ""),
            "egress_deny": post.get("egress_deny", ""),
            "cap_cost_cents": post.get("cap_cost_cents", "").strip(),
            "window_seconds": post.get("window_seconds", "").strip(),
            "on_match": post.getlist("on_match"),
        }
        clauses = [
            {name: post.get(f"clause-{i}-{name}", "") for name in ("path", "op", "value")}
            for i in range(_count(post, "clause_count"))
        ]
        steps = [
            {
                "tool_glob": post.get(f"step-{i}-tool_glob", "").strip(),
                "min_count": post.get(f"step-{i}-min_count", "1").strip(),
                "egress": post.get(f"step-{i}-egress") == "on",
            }
            for i in range(_count(post, "step_count"))
        ]
        # Buttons that change the form's rows without saving: add_clause, remove_clause:<i>, ...
        action, _, index = post.get("action", "").partition(":")
        rows = {"clause": (clauses, EMPTY_CLAUSE), "step": (steps, EMPTY_STEP)}
        verb, _, kind = action.partition("_")
        if kind in rows:
            items, empty = rows[kind]
            if verb == "add":
                items.append(dict(empty))
            elif (
                verb == "remove" and re.fullmatch(r"[0-9]{1,3}", index) and int(index) < len(items)
            ):
                del items[int(index)]
        return cls(values=values, clauses=clauses, steps=steps)

    @staticmethod
    def is_edit_only(post) -> bool:  # noqa: ANN001
        """True when the button pressed changes the form's rows or fields, not the stored rule."""
        return post.get("action", "") not in ("", "save")

    def to_spec(self) -> dict[str, Any]:
        """The rule's JSON, with only the fields its verdict and stage use."""
        v = self.values
        spec: dict[str, Any] = {
            "name": v["name"],
            "enabled": bool(v["enabled"]),
            "mode": v["mode"],
            "tool_name_glob": v["tool_name_glob"],
            "verdict": v["verdict"],
        }
        if v["priority"] != "":
            spec["priority"] = _int_or_text(v["priority"])
        if v["stage"]:
            spec["stage"] = v["stage"]
        if v["skill_glob"]:
            spec["skill_glob"] = v["skill_glob"]
        if v["notes"]:
            spec["notes"] = v["notes"]
        if self.clauses:
            spec["args_match"] = [
                {"path": c["path"].strip(), "op": c["op"], "value": parse_value(c["value"])}
                for c in self.clauses
            ]
        if v["verdict"] == "sanitize":
            spec["sanitize"] = {
                "presets": list(v["sanitize_presets"]),
                "patterns": _lines(v["sanitize_patterns"]),
            }
        if v["stage"] == "egress":
            spec["egress"] = {"allow": _lines(v["egress_allow"]), "deny": _lines(v["egress_deny"])}
        if v["verdict"] == "cap_cost":
            spec["cap_cost_cents"] = _int_or_text(v["cap_cost_cents"])
        if self.steps:
            spec["sequence"] = {
                "steps": [
                    {
                        "tool_glob": s["tool_glob"],
                        "min_count": _int_or_text(s["min_count"]),
                        **({"egress": True} if s["egress"] else {}),
                    }
                    for s in self.steps
                ],
                "window_seconds": _int_or_text(v["window_seconds"] or "0"),
            }
            if v["on_match"]:
                spec["sequence"]["on_match"] = list(v["on_match"])
        return spec


def _count(post, name: str) -> int:  # noqa: ANN001
    try:
        return max(0, min(int(post.get(name, "0")), 100))
    except ValueError:
        return 0


CHOICES = {
    "stages": [("", "any stage")] + [(s, s) for s in engine.STAGES],
    "verdicts": list(engine.VERDICTS),
    "operators": list(engine.OPERATORS),
    "modes": ["enforce", "shadow"],
    "sanitize_presets": list(engine.SANITIZE_PRESETS),
    "sequence_actions": list(SEQUENCE_ACTIONS),
}
