"""A tool's own `checks` (step 7): conditions on arguments and earlier results, limits, spend.

Each item of a tool's `checks:` list is one of:

- an argument condition: `{argument: quantity, at_most: V}` (also `at_least`, `equals`, `one_of`),
  where V is a literal or a value an earlier tool returned, `{from: check_stock.in_stock, same:
  product_id}`: the field of that tool's most recent result in the session (with `same`, only a
  result of a call that had the same value of that argument counts);
- a requirement on an earlier result: `{require: {from: get_order.card, same: order_id}}`, true when
  the field is true, a non-zero number, or a non-empty text, list or mapping;
- a period limit: `{at_most: {count: 3, per: day}}`, against the number of calls the host counted;
- a spend limit: `{spend: {argument: amount, at_most: 500, per: day}}`, against what the host
  counted; with `per: run`, against the sum of that argument over this tool's calls in the run's
  verified history (nothing for the host to count);
- a run-cost cap: `{cap_cost: 500}`, in cents: the run's cost so far (the `cost` every entry of the
  verified history carries) plus this call's cost (the tool's `cost:`, or what the host reports,
  the larger) must not pass 500.

What the host counted comes as `usage={"count": {"day": 3}, "spend": {"day": 120.0}}` for the tool
being checked. Anything that cannot be known fails closed: a missing argument, result or field
(`condition_unknown`), a missing count (`usage_unknown`), a missing spend (`spend_unknown`), a cost
declared by an argument the call lacks (`cost_unknown`).

Caps hold "at most": spent + this call == cap runs, spent + this call > cap is refused
(`spend_exceeded`, `cost_exceeded`), the detail giving `spent`, `this_call` and `cap`. Amounts are
added as decimals, as written, so `0.1 + 0.2` is exactly `0.3`.

Not to be confused with the firewall's `cap_cost` *verdict* (a firewall rule's `cap_cost_cents`):
that is a rule of the firewall policy, matched on the call, whose cap the runtime holds with the same
figures through `ToolCheck.over_cost_cap`; this `cap_cost` is a check the catalogue gives a tool.
Both cap the same thing, the run's cost in cents.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from .errors import Issue
from .marks import MISSING_COST, as_number, cents, is_amount
from .refs import MISSING, parse_tool_reference, resolve, value_key

PERIODS = ("minute", "hour", "day", "week", "month")
# A spend may also be counted over the run (the verified history), with nothing for the host to count.
RUN = "run"
SPEND_PERIODS = (*PERIODS, RUN)
COMPARATORS = ("at_most", "at_least", "equals", "one_of")
# Every form a tool's check can take, as `CheckItem.form` names it (the README's table).
FORMS = ("condition", "require", "limit", "spend", "cap_cost")
# Every reason a tool's own checks refuse with.
REASONS = (
    "condition_failed",
    "condition_unknown",
    "usage_unknown",
    "limit_reached",
    "spend_unknown",
    "spend_exceeded",
    "cost_unknown",
    "cost_exceeded",
)


class ResultLookup(Protocol):
    def latest(
        self, tool: str, same: tuple[str, Any] | None = None
    ) -> Mapping[str, Any] | None: ...

    def total(self, tool: str, path: tuple[str, ...]) -> Decimal: ...


@dataclass(frozen=True)
class RunCost:
    """The run's cost so far and this call's cost, in cents (`MISSING_COST` where unknown)."""

    spent: Decimal
    this_call: Any
    argument: str | None = None


@dataclass(frozen=True)
class ValueFrom:
    """A value read from an earlier result: `{from: tool.field, same: argument}`."""

    tool: str
    path: tuple[str, ...]
    same: str | None
    text: str


@dataclass(frozen=True)
class CheckItem:
    """One parsed item of a tool's `checks`."""

    form: str  # condition, require, limit, spend, cap_cost
    argument: str | None = None
    comparator: str | None = None
    value: Any = None  # a literal, a tuple of literals for one_of, or a ValueFrom
    count: int | None = None
    per: str | None = None
    describe: str = ""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _parse_from(raw: Any, path: str, tools: Mapping[str, Any], parameters: tuple[str, ...]):
    issues: list[Issue] = []
    if not isinstance(raw, Mapping):
        return None, [Issue(path, "must be a mapping with `from`")]
    unknown = set(raw) - {"from", "same"}
    if unknown:
        issues.append(Issue(path, f"unknown key `{sorted(unknown)[0]}`"))
    reference = parse_tool_reference(raw.get("from"))
    if reference is None:
        issues.append(Issue(f"{path}.from", "must be `<tool>.<field>`"))
        return None, issues
    tool, field_path = reference
    if tool not in tools:
        issues.append(Issue(f"{path}.from", f"names a tool the catalogue does not have: `{tool}`"))
    same = raw.get("same")
    if same is not None and (not isinstance(same, str) or same not in parameters):
        issues.append(Issue(f"{path}.same", f"must name an argument of this tool, not `{same}`"))
    return ValueFrom(tool, field_path, same, str(raw.get("from"))), issues


def parse_checks(
    raw: Any, path: str, *, tools: Mapping[str, Any], parameters: tuple[str, ...]
) -> tuple[tuple[CheckItem, ...], list[Issue]]:
    """Read a tool's `checks:` list; every issue names its path (`tools[1].checks[0].at_most`)."""
    if raw is None:
        return (), []
    if not isinstance(raw, list):
        return (), [Issue(path, "must be a list of checks")]
    items: list[CheckItem] = []
    issues: list[Issue] = []
    for index, entry in enumerate(raw):
        where = f"{path}[{index}]"
        if not isinstance(entry, Mapping):
            issues.append(Issue(where, "must be a mapping"))
            continue
        item, found = _parse_item(entry, where, tools, parameters)
        issues.extend(found)
        if item is not None:
            items.append(item)
    return tuple(items), issues


def _parse_item(entry: Mapping[str, Any], where: str, tools, parameters):
    if "cap_cost" in entry:
        cap = entry["cap_cost"]
        if set(entry) != {"cap_cost"}:
            return None, [Issue(where, "`cap_cost` stands alone in its check")]
        if not is_amount(cap):
            return None, [Issue(f"{where}.cap_cost", "must be a number of cents, 0 or more")]
        return CheckItem(
            "cap_cost", comparator="at_most", value=cents(cap), describe=f"cap_cost {cap}"
        ), []
    if "spend" in entry:
        return _parse_spend(entry, where, parameters)
    if "require" in entry:
        if set(entry) != {"require"}:
            return None, [Issue(where, "`require` stands alone in its check")]
        value, issues = _parse_from(entry["require"], f"{where}.require", tools, parameters)
        return CheckItem(
            "require", value=value, describe=f"require {getattr(value, 'text', '')}"
        ), issues
    if "argument" not in entry:
        limit = entry.get("at_most")
        if set(entry) != {"at_most"} or not isinstance(limit, Mapping):
            return None, [
                Issue(
                    where,
                    "must be a condition on an argument, a limit, a spend, a cap_cost or a require",
                )
            ]
        return _parse_limit(limit, f"{where}.at_most")
    argument = entry["argument"]
    issues: list[Issue] = []
    if not isinstance(argument, str) or argument not in parameters:
        issues.append(
            Issue(f"{where}.argument", f"must name an argument of this tool, not `{argument}`")
        )
    comparators = [key for key in entry if key != "argument"]
    if len(comparators) != 1 or comparators[0] not in COMPARATORS:
        issues.append(Issue(where, "must have exactly one of at_most, at_least, equals, one_of"))
        return None, issues
    comparator = comparators[0]
    raw_value = entry[comparator]
    value: Any
    if isinstance(raw_value, Mapping):
        value, found = _parse_from(raw_value, f"{where}.{comparator}", tools, parameters)
        issues.extend(found)
    elif comparator == "one_of":
        if not isinstance(raw_value, list) or not raw_value:
            issues.append(Issue(f"{where}.one_of", "must be a non-empty list of values"))
            return None, issues
        value = tuple(raw_value)
    else:
        value = raw_value
        if comparator in ("at_most", "at_least") and not _number(value):
            issues.append(
                Issue(f"{where}.{comparator}", "must be a number or `{from: tool.field}`")
            )
    shown = value.text if isinstance(value, ValueFrom) else value
    return CheckItem(
        "condition", argument, comparator, value, describe=f"{argument} {comparator} {shown}"
    ), issues


def _parse_limit(limit: Mapping[str, Any], where: str):
    issues: list[Issue] = []
    count, per = limit.get("count"), limit.get("per")
    if set(limit) - {"count", "per"}:
        issues.append(Issue(where, "takes only `count` and `per`"))
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        issues.append(Issue(f"{where}.count", "must be a whole number, 0 or more"))
    if per not in PERIODS:
        issues.append(Issue(f"{where}.per", f"must be one of {', '.join(PERIODS)}, not `{per}`"))
    if issues:
        return None, issues
    return CheckItem("limit", count=count, per=per, describe=f"at_most {count} per {per}"), issues


def _parse_spend(entry: Mapping[str, Any], where: str, parameters):
    spend = entry["spend"]
    if set(entry) != {"spend"} or not isinstance(spend, Mapping):
        return None, [Issue(where, "`spend` stands alone and is a mapping")]
    issues: list[Issue] = []
    if set(spend) - {"argument", "at_most", "per"}:
        issues.append(Issue(f"{where}.spend", "takes only `argument`, `at_most` and `per`"))
    argument, limit, per = spend.get("argument"), spend.get("at_most"), spend.get("per")
    if not isinstance(argument, str) or argument not in parameters:
        issues.append(
            Issue(
                f"{where}.spend.argument", f"must name an argument of this tool, not `{argument}`"
            )
        )
    if not _number(limit) or limit < 0:
        issues.append(Issue(f"{where}.spend.at_most", "must be a number, 0 or more"))
    if per not in SPEND_PERIODS:
        issues.append(
            Issue(f"{where}.spend.per", f"must be one of {', '.join(SPEND_PERIODS)}, not `{per}`")
        )
    if issues:
        return None, issues
    return (
        CheckItem(
            "spend",
            argument,
            "at_most",
            limit,
            per=per,
            describe=f"spend {argument} at_most {limit} per {per}",
        ),
        issues,
    )


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if _number(value):
        return value != 0
    if isinstance(value, (str, list, dict)):
        return len(value) > 0
    return False


def _read(value: ValueFrom, arguments: Mapping[str, Any], history: ResultLookup) -> Any:
    same = None
    if value.same is not None:
        if value.same not in arguments:
            return MISSING
        same = (value.same, arguments[value.same])
    content = history.latest(value.tool, same)
    if content is None:
        return MISSING
    return resolve(content, value.path)


Failure = tuple[str, dict[str, Any]]


def evaluate(
    items: tuple[CheckItem, ...],
    arguments: Mapping[str, Any],
    history: ResultLookup,
    usage: Mapping[str, Any] | None,
    *,
    tool: str = "",
    cost: RunCost | None = None,
) -> Failure | None:
    """Run a tool's checks in order; the first that fails gives its reason and detail.

    `tool` is the checked tool's name (a spend `per: run` sums its calls); `cost` the run's cost
    and this call's (a `cap_cost` without it cannot be known, and refuses `cost_unknown`).
    """
    for index, item in enumerate(items):
        failure = _evaluate_one(item, arguments, history, usage, tool, cost)
        if failure is not None:
            reason, detail = failure
            return reason, {"index": index, "rule": item.describe, **detail}
    return None


def cap_failure(spent: Decimal, this_call: Any, cap: Decimal, **about: Any) -> Failure | None:
    """A run-cost cap: refused where spent + this call passes the cap (== the cap runs)."""
    if this_call is MISSING_COST:
        return "cost_unknown", about
    if spent + this_call > cap:
        return "cost_exceeded", {
            "spent": as_number(spent),
            "this_call": as_number(this_call),
            "cap": as_number(cap),
        }
    return None


def _evaluate_one(item: CheckItem, arguments, history, usage, tool, cost) -> Failure | None:
    if item.form == "limit":
        used = _usage(usage, "count", item.per)
        if used is None:
            return "usage_unknown", {"per": item.per}
        if used + 1 > item.count:
            return "limit_reached", {"per": item.per, "limit": item.count, "used": used}
        return None
    if item.form == "spend":
        if item.per == RUN:
            spent = history.total(tool, ("arguments", item.argument))
        else:
            reported = _usage(usage, "spend", item.per)
            spent = None if reported is None else cents(reported)
        amount = arguments.get(item.argument, MISSING)
        if spent is None or not _number(amount):
            return "spend_unknown", {"per": item.per, "argument": item.argument}
        cap = cents(item.value)
        if spent + cents(amount) > cap:
            return "spend_exceeded", {
                "per": item.per,
                "spent": as_number(spent),
                "this_call": amount,
                "cap": as_number(cap),
            }
        return None
    if item.form == "cap_cost":
        if cost is None:
            return "cost_unknown", {}
        about = {"argument": cost.argument} if cost.argument else {}
        return cap_failure(cost.spent, cost.this_call, item.value, **about)
    if item.form == "require":
        found = _read(item.value, arguments, history)
        if found is MISSING:
            return "condition_unknown", {"from": item.value.text}
        return None if _truthy(found) else ("condition_failed", {"from": item.value.text})
    actual = arguments.get(item.argument, MISSING)
    expected = item.value
    if isinstance(expected, ValueFrom):
        expected = _read(expected, arguments, history)
    if actual is MISSING or expected is MISSING:
        return "condition_unknown", {"argument": item.argument}
    holds = _compare(item.comparator, actual, expected)
    if holds is None:
        return "condition_unknown", {"argument": item.argument}
    return None if holds else ("condition_failed", {"argument": item.argument})


def _compare(comparator: str | None, actual: Any, expected: Any) -> bool | None:
    if comparator in ("at_most", "at_least"):
        if not (_number(actual) and _number(expected)):
            return None
        return actual <= expected if comparator == "at_most" else actual >= expected
    if comparator == "equals":
        return value_key(actual) == value_key(expected)
    if comparator == "one_of":
        options = expected if isinstance(expected, (tuple, list)) else (expected,)
        return value_key(actual) in {value_key(option) for option in options}
    return None


def _usage(usage: Mapping[str, Any] | None, kind: str, per: str | None) -> float | None:
    if not isinstance(usage, Mapping):
        return None
    table = usage.get(kind)
    if not isinstance(table, Mapping):
        return None
    value = table.get(per)
    if not _number(value) or value < 0:
        return None
    return value
