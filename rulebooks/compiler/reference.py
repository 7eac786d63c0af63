"""The reference gate: the same decisions as `gate.gate`, by reading the record directly.

No compilation, no cache, no closures: it walks the record's JSON for every call and evaluates
condition trees with `evaluate.evaluate`. It is slow and obvious on purpose; the property tests
check that the fast gate agrees with it on random calls (two engines, one answer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .evaluate import Env, evaluate
from .gate import STRICTNESS, GateAnswer, otherwise_reason
from .values import UNKNOWN, equals, is_number, truth


def _route_failure(route: Mapping[str, Any], env: Env) -> tuple | None:
    flow = route["flow"]
    for name, spec in sorted(route.get("arguments", {}).items()):
        detail = {"flow": flow, "line": route["line"], "argument": name}
        if "equals" in spec:
            if not (name in env.arguments and equals(env.arguments[name], spec["equals"])):
                return ("refuse", [f"rulebook: {flow}"], detail)
        elif "expression" in spec:
            detail = {**detail, "expression": spec["expression"]}
            want = evaluate(spec["test"], env)
            if want is UNKNOWN:
                return ("refuse", ["condition_unknown"], detail)
            if not (name in env.arguments and equals(env.arguments[name], want)):
                return ("refuse", [f"rulebook: {flow}"], detail)
    for cond in route.get("conditions", ()):
        if "test" not in cond:
            continue
        detail = {
            "flow": cond["flow"],
            "line": cond["line"],
            "condition": cond.get("condition", ""),
            "holds": bool(cond["holds"]),
            "otherwise": cond.get("otherwise"),
            "tool_flow": route["flow"],
            "tool_line": route["line"],
        }
        t = truth(evaluate(cond["test"], env))
        if t is UNKNOWN:
            return ("refuse", ["condition_unknown"], detail)
        if t != bool(cond["holds"]):
            for after in cond.get("otherwise_if", ()):
                if truth(evaluate(after["test"], env)) is True:
                    chosen = {
                        **detail,
                        "otherwise": after.get("otherwise"),
                        "otherwise_line": after["line"],
                    }
                    reason = otherwise_reason(after.get("otherwise"), cond["flow"])
                    return ("refuse", [reason], chosen)
            return ("refuse", [otherwise_reason(cond.get("otherwise"), cond["flow"])], detail)
    return None


def _count(usage: Any, kind: str, per: str) -> Any:
    try:
        value = usage[kind][per]
    except (KeyError, TypeError, IndexError):
        return UNKNOWN
    return value if is_number(value) and value >= 0 and value == value else UNKNOWN


def _rules(rules: Sequence[Mapping[str, Any]], env: Env, usage: Any) -> GateAnswer | None:
    fired = []
    for rule in rules:
        decision = rule["decision"]
        reason = rule.get("reason") or ""
        entry = {"row": rule.get("row"), "decision": decision, "reason": reason}
        if rule.get("test") is not None:
            t = truth(evaluate(rule["test"], env))
            if t is UNKNOWN:
                if decision != "allow":
                    fired.append((decision, "condition_unknown", entry, {}))
                continue
            if t is False:
                continue
        per = rule.get("per")
        if rule.get("at_most") is not None:
            count = _count(usage, "count", per)
            if count is UNKNOWN:
                fired.append(("refuse", "usage_unknown", entry, {"per": per}))
            elif count + 1 > rule["at_most"]:
                extra = {"count": count, "at_most": rule["at_most"], "per": per}
                fired.append((decision, reason or "limit_reached", entry, extra))
        elif rule.get("spend") is not None:
            spent = _count(usage, "spend", per)
            amount = env.arguments.get(rule.get("amount") or "amount", UNKNOWN)
            if spent is UNKNOWN or not is_number(amount) or not amount >= 0:
                fired.append(("refuse", "spend_unknown", entry, {"per": per}))
            elif spent + amount > rule["spend"]:
                extra = {"spent": spent, "amount": amount, "spend": rule["spend"], "per": per}
                fired.append((decision, reason or "spend_exceeded", entry, extra))
        else:
            fired.append((decision, reason, entry, {}))
    if not fired:
        return None
    best = max(STRICTNESS[f[0]] for f in fired)
    chosen = [f for f in fired if STRICTNESS[f[0]] == best]
    reasons: list[str] = []
    for f in chosen:
        if f[1] not in reasons:
            reasons.append(f[1])
    entries = [{**f[2], "reason": f[1], **f[3]} for f in chosen]
    return GateAnswer(chosen[0][0], reasons, {"row": entries[0]["row"], "rules": entries})


def reference_gate(
    record: Mapping[str, Any],
    *,
    tool: str,
    arguments: Mapping[str, Any],
    facts: Mapping[str, bool],
    results: Sequence[Mapping[str, Any]] = (),
    usage: Mapping[str, Any] | None = None,
) -> GateAnswer | None:
    entry = record["tools"].get(tool)
    if entry is None:
        return None
    env = Env(arguments, facts, results)
    routes = entry.get("routes", [])
    rules = entry.get("rules", [])
    if not routes and not rules:
        return GateAnswer(
            "refuse",
            ["rulebook: unreachable"],
            {"tool": tool, "why": "the rulebook names this tool, but no flow reaches it"},
        )
    passed: GateAnswer | None = None
    if routes:
        failures = [_route_failure(route, env) for route in routes]
        for route, failure in zip(routes, failures, strict=True):
            if failure is None:
                via = [dict(v) for v in route.get("via", ())]
                passed = GateAnswer(
                    "pass", [], {"flow": route["flow"], "line": route["line"], "via": via}
                )
                break
        if passed is None:
            decision, reasons, detail = failures[0]
            return GateAnswer(decision, list(reasons), dict(detail))
    sheet = _rules(rules, env, usage) if rules else None
    return sheet or passed or GateAnswer("pass", [], {})
