"""The same rule set as Cedar policies, for `cedarpy`: one Cedar policy per firewall rule.

Mapping: the principal is the agent (unconstrained), the action `Action::"call"`, the resource
`Tool::"<name>"`. An exact tool glob becomes `resource == Tool::"<name>"`; prefix, suffix and
infix globs become `context.tool like "srv3.*"` (Cedar's `like` lets `*` match the empty string,
a small difference that does not change the work), and a skill glob `context.skill like ...`. Clauses become `when` conditions on
`context.args`, each guarded by `has`: `eq`, `in` (`[..].contains(..)`), `gte`, `cidr`
(`ip(..).isInRange(ip(..))`), `contains`/`starts_with` (`like`), `exists` (`has`); `regex` has
no Cedar counterpart and becomes `like` on its literal parts. `deny` and `require_approval`
rules become `forbid`, the others `permit`, and a `permit` for everything stands for the
default verdict. Cedar has no first-match order: it evaluates every policy on every request,
which is the work this comparison measures.
"""

from __future__ import annotations

import json
from typing import Any

import cedarpy

from firewall.engine.clauses import required_literals
from firewall.engine.globs import ANY, EXACT, classify


def _string(text: str) -> str:
    return json.dumps(text)


def _like(text: str) -> str:
    return _string(text.replace("\\", "\\\\").replace("*", "\\*"))[1:-1]


def _attribute(path: str) -> tuple[str, str]:
    keys = path[2:].split(".")
    guards = []
    expression = "context.args"
    for key in keys:
        guards.append(
            f'{expression} has "{key}"' if not key.isidentifier() else f"{expression} has {key}"
        )
        expression = f"{expression}.{key}" if key.isidentifier() else f'{expression}["{key}"]'
    return " && ".join(guards), expression


def _condition(clause: dict[str, Any]) -> str:
    guard, value = _attribute(clause["path"])
    op, operand = clause["op"], clause.get("value")
    if op == "exists":
        return guard
    if op == "eq":
        test = f"{value} == {json.dumps(operand)}"
    elif op == "in":
        test = f"{json.dumps(operand)}.contains({value})"
    elif op == "gte":
        test = f"{value} >= {int(operand)}"
    elif op == "cidr":
        test = f'ip({value}).isInRange(ip("{operand}"))'
    elif op == "contains":
        test = f'{value} like "*{_like(operand)}*"'
    elif op == "starts_with":
        test = f'{value} like "{_like(operand)}*"'
    elif op == "regex":
        pattern = "*".join(_like(part) for part in required_literals(operand))
        test = f'{value} like "*{pattern}*"'
    else:
        raise ValueError(f"no Cedar mapping for `{op}`")
    return f"{guard} && {test}"


def to_cedar(policy: dict[str, Any]) -> str:
    """The policy set text, one Cedar policy per rule, plus the default."""
    texts = []
    for rule in policy["rules"]:
        effect = "forbid" if rule["verdict"] in ("deny", "require_approval") else "permit"
        kind, key = classify(rule.get("tool_name_glob", ""))
        scope = 'principal, action == Action::"call", resource'
        conditions = []
        if kind == EXACT:
            scope += f" == Tool::{_string(key)}"
        elif kind != ANY:
            conditions.append(
                f'context.tool like "{_like(rule["tool_name_glob"]).replace(chr(92) + "*", "*")}"'
            )
        skill = rule.get("skill_glob")
        if skill:
            conditions.append(
                f'context has skill && context.skill like "{_like(skill).replace(chr(92) + "*", "*")}"'
            )
        conditions.extend(_condition(clause) for clause in rule.get("args_match", []))
        when = f" when {{ {' && '.join(conditions)} }}" if conditions else ""
        texts.append(f"{effect} ({scope}){when};")
    if policy["default_verdict"] != "deny":
        texts.append('permit (principal, action == Action::"call", resource);')
    return "\n".join(texts)


class CedarEngine:
    """A parsed Cedar policy set and the request shape for a call."""

    def __init__(self, policy: dict[str, Any]) -> None:
        self.text = to_cedar(policy)
        self.policies = cedarpy.PolicySet.from_str(self.text)
        self.entities = cedarpy.Entities.from_json_str("[]")
        self.errors = 0

    def request(self, call: dict[str, Any]) -> dict[str, Any]:
        context = {"tool": call["tool"], "args": call["arguments"]}
        if call.get("skill"):
            context["skill"] = call["skill"]
        return {
            "principal": 'Agent::"bench"',
            "action": 'Action::"call"',
            "resource": {"type": "Tool", "id": call["tool"]},
            "context": context,
        }

    def decide(self, request: dict[str, Any]) -> bool:
        result = cedarpy.is_authorized(request, self.policies, self.entities)
        if result.diagnostics.errors:
            self.errors += 1
        return result.allowed
