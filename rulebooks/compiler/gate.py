"""The rulebook's gate: how a compiled record decides one tool call (step 8 of the tool check).

`gate(record, tool=..., arguments=..., facts=..., results=..., usage=...)` returns None when the
record governs no such tool (no opinion: the rest of the tool check decides), else a
`GateAnswer` whose `decision` is

- `refuse` -- the rulebook refuses; `reasons` holds its rule (the bot message the flow answers
  with, `stop`, `rulebook: <flow>` when the flow just does not reach the tool, the rule
  sheet's reason, or `condition_unknown`, `usage_unknown`, `limit_reached`, `spend_unknown`,
  `spend_exceeded`), and `detail` where it is (`flow`, `line`, or `row`);
- `confirm` -- a rule sheet asks for a person, with its reasons;
- `allow` -- a rule sheet explicitly lets the call run without a person (it never overrides an
  earlier step of the tool check);
- `pass` -- governed, and its conditions hold: no opinion on confirmation (a Colang flow that
  lets the tool run; a write is still confirmed by the tool check).

Colang routes: the call passes when *any* route to the tool holds -- every argument it fixes
matches and every condition is as the route needs it (`when` events are dialogue, decided by
the conversation, not here). Otherwise the first route in file order names the refusal: its
first condition that failed and what the flow does otherwise. A condition the gate cannot
evaluate (a result not there yet, a variable the model writes) fails closed with
`condition_unknown`. A fact nobody reports is false.

Rule sheets: every row whose condition holds fires; the strictest decision wins (refuse, then
confirm, then allow) with the reasons of its rows, in row order. A row's condition the gate
cannot evaluate fires as `condition_unknown` when the row refuses or confirms, and does not
fire when it allows. A limit row (`at_most` per period, or `spend` per period) fires when this
call would pass the limit; without the count or spend it needs, it refuses with `usage_unknown`
or `spend_unknown`.

`usage` is what the host counted for this tool, by period::

    {"count": {"day": 3, "hour": 1}, "spend": {"day": 120.0}}

`count` is how many calls of the tool already ran in the period, `spend` how much they spent
(the rule sheet's `amount` argument, `amount` by default, is what this call adds).

Speed: the first time the gate sees a record it compiles it -- tools indexed by name, every
condition turned into closures (`evaluate.compile_node`) -- and caches that by the record's
identity; the record must not be changed in place afterwards. Deciding is then a dictionary
lookup and a few closure calls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import RECORD_INVALID, RulebookNotHeld
from .evaluate import Env, compile_node
from .record import record_problems
from .values import UNKNOWN, equals, fact_value, is_number, truth

DECISIONS = ("refuse", "confirm", "allow", "pass")
STRICTNESS = {"refuse": 3, "confirm": 2, "allow": 1, "pass": 0}
_CACHE_SIZE = 64


@dataclass(frozen=True)
class GateAnswer:
    """What the rulebook says about one call."""

    decision: str
    reasons: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"decision": self.decision, "reasons": list(self.reasons), "detail": self.detail}


_new = object.__new__
_PLAIN_RESULTS = (list, tuple)


def _copy(value: Any) -> Any:
    """A copy of plain data (dicts and lists all the way down); scalars are shared."""
    kind = type(value)
    if kind is dict:
        out = dict(value)
        for key, item in out.items():
            if type(item) is dict or type(item) is list:
                out[key] = _copy(item)
        return out
    if kind is list:
        return [_copy(v) if type(v) is dict or type(v) is list else v for v in value]
    return value


def _answer(decision: str, reasons: list[str], detail: dict[str, Any]) -> GateAnswer:
    """A `GateAnswer` with its own copies of `reasons` and `detail` (a caller that changes them
    changes nothing else, not the record), built without the frozen dataclass's `__setattr__`
    round trips (this is on every decision's path)."""
    answer = _new(GateAnswer)
    answer.__dict__.update(decision=decision, reasons=list(reasons), detail=_copy(detail))
    return answer


def otherwise_reason(otherwise: Mapping[str, Any] | None, flow: str) -> str:
    """The reason a refusal gives for what the flow does instead of calling the tool."""
    if otherwise:
        if otherwise.get("bot"):
            return str(otherwise["bot"])
        if "text" in otherwise:
            return str(otherwise["text"])
        if otherwise.get("stop"):
            return "stop"
        if otherwise.get("abort"):
            return "abort"
    return f"rulebook: {flow}"


# -- Colang routes --------------------------------------------------------------------------

Check = Callable[[Env], "tuple[str, list[str], dict[str, Any]] | None"]


def _argument_check(name: str, spec: Mapping[str, Any], route: Mapping[str, Any]) -> Check | None:
    flow = route["flow"]
    detail = {"flow": flow, "line": route["line"], "argument": name}
    reasons = [f"rulebook: {flow}"]
    if "equals" in spec:
        want = spec["equals"]

        def fixed(env: Env) -> tuple[str, list[str], dict[str, Any]] | None:
            args = env.arguments
            if name in args and equals(args[name], want):
                return None
            return ("refuse", reasons, detail)

        return fixed
    if "expression" in spec:
        value = compile_node(spec["test"])
        unknown = {**detail, "expression": spec["expression"]}

        def computed(env: Env) -> tuple[str, list[str], dict[str, Any]] | None:
            want = value(env)
            if want is UNKNOWN:
                return ("refuse", ["condition_unknown"], unknown)
            args = env.arguments
            if name in args and equals(args[name], want):
                return None
            return ("refuse", reasons, unknown)

        return computed
    return None


def _condition_check(cond: Mapping[str, Any], route: Mapping[str, Any]) -> Check | None:
    if "test" not in cond:
        return None  # a `when` event: dialogue, not decided by the gate
    value = compile_node(cond["test"])
    holds = bool(cond["holds"])
    detail = {
        "flow": cond["flow"],
        "line": cond["line"],
        "condition": cond.get("condition", ""),
        "holds": holds,
        "otherwise": cond.get("otherwise"),
        "tool_flow": route["flow"],
        "tool_line": route["line"],
    }
    failed = ("refuse", [otherwise_reason(cond.get("otherwise"), cond["flow"])], detail)
    unknown = ("refuse", ["condition_unknown"], detail)
    later = [
        (
            compile_node(after["test"]),
            (
                "refuse",
                [otherwise_reason(after.get("otherwise"), cond["flow"])],
                {**detail, "otherwise": after.get("otherwise"), "otherwise_line": after["line"]},
            ),
        )
        for after in cond.get("otherwise_if", ())
    ]

    def fail(env: Env) -> tuple[str, list[str], dict[str, Any]]:
        for test, answer in later:
            if truth(test(env)) is True:
                return answer
        return failed

    fact, negated = _plain_fact(cond["test"])
    if fact is not None:
        # The common case, `if $fact` / `if not $fact`: read the fact, nothing else.
        want = holds != negated

        def fact_check(env: Env) -> tuple[str, list[str], dict[str, Any]] | None:
            found = env.facts.get(fact, False)
            if found is not True and found is not False:
                found = fact_value(found)
            return None if found is want else fail(env)

        return fact_check

    def check(env: Env) -> tuple[str, list[str], dict[str, Any]] | None:
        t = value(env)
        if t is not True and t is not False:
            t = truth(t)
        if t is UNKNOWN:
            return unknown
        if t == holds:
            return None
        return fail(env)

    return check


def _plain_fact(test: Any) -> tuple[str | None, bool]:
    """`{"fact": n}` -> (n, False); `not {"fact": n}` -> (n, True); anything else (None, _)."""
    if isinstance(test, Mapping):
        if set(test) == {"fact"} and isinstance(test["fact"], str):
            return test["fact"], False
        if test.get("op") == "not" and len(test.get("args", ())) == 1:
            inner, negated = _plain_fact(test["args"][0])
            if inner is not None:
                return inner, not negated
    return None, False


class _Route:
    __slots__ = ("checks", "detail", "flow", "line", "via")

    def __init__(self, route: Mapping[str, Any]) -> None:
        checks: list[Check] = []
        for name, spec in sorted(route.get("arguments", {}).items()):
            check = _argument_check(name, spec, route)
            if check is not None:
                checks.append(check)
        for cond in route.get("conditions", ()):
            check = _condition_check(cond, route)
            if check is not None:
                checks.append(check)
        self.checks = tuple(checks)
        self.flow = route["flow"]
        self.line = route["line"]
        self.via = tuple(dict(v) for v in route.get("via", ()))

    def passed(self) -> GateAnswer:
        answer = _new(GateAnswer)
        detail = {"flow": self.flow, "line": self.line, "via": [dict(v) for v in self.via]}
        answer.__dict__.update(decision="pass", reasons=[], detail=detail)
        return answer


# -- rule sheets ----------------------------------------------------------------------------


class _Rule:
    __slots__ = ("test", "decision", "reason", "row", "at_most", "per", "spend", "amount", "entry")

    def __init__(self, rule: Mapping[str, Any]) -> None:
        test = rule.get("test")
        self.test = compile_node(test) if test is not None else None
        self.decision = rule["decision"]
        if self.decision not in ("refuse", "confirm", "allow"):
            raise ValueError(f"a rule's decision cannot be `{self.decision}`")
        self.reason = rule.get("reason") or ""
        self.row = rule.get("row")
        self.at_most = rule.get("at_most")
        self.per = rule.get("per")
        self.spend = rule.get("spend")
        self.amount = rule.get("amount") or "amount"
        self.entry = {"row": self.row, "decision": self.decision, "reason": self.reason}


def _usage(usage: Any, kind: str, per: str) -> Any:
    if type(usage) is not dict and not isinstance(usage, Mapping):
        return UNKNOWN
    table = usage.get(kind)
    if type(table) is not dict and not isinstance(table, Mapping):
        return UNKNOWN
    value = table.get(per, UNKNOWN)
    if not is_number(value) or value < 0 or value != value:
        return UNKNOWN
    return value


def _decide_rules(rules: Sequence[_Rule], env: Env, usage: Any) -> GateAnswer | None:
    fired: list[tuple[str, str, _Rule, dict[str, Any]]] = []
    for rule in rules:
        if rule.test is not None:
            t = rule.test(env)
            if t is not True and t is not False:
                t = truth(t)
            if t is UNKNOWN:
                if rule.decision != "allow":
                    fired.append((rule.decision, "condition_unknown", rule, {}))
                continue
            if not t:
                continue
        if rule.at_most is not None:
            count = _usage(usage, "count", rule.per)
            if count is UNKNOWN:
                fired.append(("refuse", "usage_unknown", rule, {"per": rule.per}))
            elif count + 1 > rule.at_most:
                extra = {"count": count, "at_most": rule.at_most, "per": rule.per}
                fired.append((rule.decision, rule.reason or "limit_reached", rule, extra))
            continue
        if rule.spend is not None:
            spent = _usage(usage, "spend", rule.per)
            amount = env.arguments.get(rule.amount, UNKNOWN)
            if spent is UNKNOWN or not is_number(amount) or not amount >= 0:
                fired.append(("refuse", "spend_unknown", rule, {"per": rule.per}))
            elif spent + amount > rule.spend:
                extra = {"spent": spent, "amount": amount, "spend": rule.spend, "per": rule.per}
                fired.append((rule.decision, rule.reason or "spend_exceeded", rule, extra))
            continue
        fired.append((rule.decision, rule.reason, rule, {}))
    if not fired:
        return None
    decision = max((f[0] for f in fired), key=STRICTNESS.__getitem__)
    reasons: list[str] = []
    entries: list[dict[str, Any]] = []
    for d, reason, rule, extra in fired:
        if d != decision:
            continue
        if reason not in reasons:
            reasons.append(reason)
        entries.append({**rule.entry, "reason": reason, **extra})
    return _answer(decision, reasons, {"row": entries[0]["row"], "rules": entries})


# -- compiled tools -------------------------------------------------------------------------


class _Tool:
    __slots__ = ("name", "routes", "rules", "unreachable")

    def __init__(self, name: str, entry: Mapping[str, Any]) -> None:
        self.name = name
        self.routes = tuple(_Route(r) for r in entry.get("routes", ()))
        self.rules = tuple(_Rule(r) for r in entry.get("rules", ()))
        self.unreachable = not self.routes and not self.rules

    def decide(
        self,
        arguments: Mapping[str, Any],
        facts: Mapping[str, Any],
        results: Sequence[Any],
        usage: Any,
    ) -> GateAnswer:
        if type(arguments) is dict and type(facts) is dict and type(results) in _PLAIN_RESULTS:
            env = _new(Env)  # the common case, without `Env.__init__`'s type checks
            env.arguments, env.facts, env.results, env._cache = arguments, facts, results, None
        else:
            env = Env(arguments, facts, results)
        if self.unreachable:
            return _answer(
                "refuse",
                ["rulebook: unreachable"],
                {"tool": self.name, "why": "the rulebook names this tool, but no flow reaches it"},
            )
        colang: GateAnswer | None = None
        if self.routes:
            first = None
            for route in self.routes:
                failure = None
                for check in route.checks:
                    failure = check(env)
                    if failure is not None:
                        break
                if failure is None:
                    colang = route.passed()
                    break
                if first is None:
                    first = failure
            if colang is None and first is not None:
                return _answer(*first)
        sheet = _decide_rules(self.rules, env, usage) if self.rules else None
        if sheet is not None:
            return sheet
        return colang or _answer("pass", [], {})


_cache: dict[int, tuple[Mapping[str, Any], dict[str, _Tool]]] = {}
_lock = threading.Lock()


def compile_record(record: Mapping[str, Any]) -> dict[str, _Tool]:
    """The gate's compiled form of a record (raises `RulebookNotHeld` for a malformed one)."""
    problems = record_problems(record)
    if problems:
        raise RulebookNotHeld(
            "the rulebook record is not valid: " + "; ".join(problems), reason=RECORD_INVALID
        )
    try:
        return {str(name): _Tool(str(name), entry) for name, entry in record["tools"].items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise RulebookNotHeld(
            f"the rulebook record is not valid: {exc}", reason=RECORD_INVALID
        ) from None


def _compiled(record: Mapping[str, Any]) -> dict[str, _Tool]:
    hit = _cache.get(id(record))
    if hit is not None and hit[0] is record:
        return hit[1]
    tools = compile_record(record)
    with _lock:
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        _cache[id(record)] = (record, tools)
    return tools


def gate(
    record: Mapping[str, Any],
    *,
    tool: str,
    arguments: Mapping[str, Any],
    facts: Mapping[str, bool],
    results: Sequence[Mapping[str, Any]] = (),
    usage: Mapping[str, Any] | None = None,
) -> GateAnswer | None:
    """Decide one call under a compiled rulebook record (see the module docstring)."""
    compiled = _compiled(record)
    entry = compiled.get(tool) if type(tool) is str else None
    if entry is None:
        return None
    return entry.decide(arguments, facts, results, usage)
