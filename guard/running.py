"""The writes of a session still in flight, and the run's limits counted with them.

A write is in flight from the moment it may have its effect until its result is reported: begun
by the executor (an `Effect` still `claimed`) or allowed by `/check` to a host that runs the tool
itself (a `CheckedWrite`, until `/record` reports it or it expires). A call decided meanwhile is
decided as if each of them had run, so calls sent at once cannot pass a tool's `at_most`, a
`spend` over the run or the run's `cap_cost` between them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from django.db.models import BooleanField, Value

from guard import engine
from guard.engine import tool_checks
from guard.engine.check import _order_refusal, _refuse
from guard.engine.marks import MISSING_COST, cents, declared_cost, is_amount
from guard.engine.refs import resolve
from guard.models import CheckedWrite, Effect, GuardSession


@dataclass(frozen=True)
class Running:
    """One write in flight: its tool, its (redacted) arguments, its intent's key, and whether a
    `/check` allowed it (else the executor began it)."""

    tool: str
    arguments: Any
    key: str
    checked: bool


def counted_checks(known: Any, call: Mapping[str, Any]) -> tuple[Any, ...]:
    """The checks of step 7 that count the run: none for an undo, as the check skips them."""
    if call.get("compensation_of") is not None:
        return ()
    return tuple(
        item
        for item in known.checks
        if item.form == "cap_cost" or (item.form == "spend" and item.per == tool_checks.RUN)
    )


def counts_running(known: Any, call: Mapping[str, Any]) -> bool:
    """Whether the writes in flight bear on this call: a write with an `at_most` or a check that
    counts the run."""
    return known.kind != "read" and (known.at_most is not None or bool(counted_checks(known, call)))


def in_flight(session: GuardSession, *, now: dt.datetime) -> list[Running]:
    """The session's writes in flight, in one statement: the executor's claimed ledger rows and
    the writes `/check` allowed that are neither reported nor expired."""
    begun = Effect.objects.filter(session=session, status=Effect.Status.CLAIMED).values_list(
        "tool", "arguments", "key", Value(False, output_field=BooleanField())
    )
    checked = CheckedWrite.objects.filter(session=session, expires_at__gt=now).values_list(
        "tool", "arguments", "intent", Value(True, output_field=BooleanField())
    )
    return [Running(*row) for row in begun.union(checked, all=True)]


def let_expired_go(*, now: dt.datetime, batch: int = 1_000) -> int:
    """Delete the writes `/check` allowed whose time passed (they count no more: `in_flight`
    skips them), `batch` rows a statement, so that a session whose host never reports its calls
    does not keep them for ever; how many went."""
    gone = 0
    while True:
        expired = CheckedWrite.objects.filter(expires_at__lte=now).order_by("expires_at")
        deleted, _ = CheckedWrite.objects.filter(
            pk__in=list(expired.values_list("pk", flat=True)[:batch])
        ).delete()
        gone += deleted
        if deleted < batch:
            return gone


class _WithRunning:
    """The session's history as the run's limits read it, with the writes in flight (`entries`)
    counted as if they had run."""

    def __init__(self, history: engine.History, entries: list[Running]) -> None:
        self.history, self.entries = history, entries

    def latest(self, tool: str, same: tuple[str, Any] | None = None) -> Mapping[str, Any] | None:
        return self.history.latest(tool, same)

    def total(self, tool: str, path: tuple[str, ...]) -> Decimal:
        running = (
            resolve({"tool": entry.tool, "arguments": entry.arguments}, path)
            for entry in self.entries
            if entry.tool == tool
        )
        return self.history.total(tool, path) + sum(
            (cents(value) if is_amount(value) else Decimal(0) for value in running), Decimal(0)
        )


def limits_with_running(
    check: engine.ToolCheck,
    known: Any,
    call: Mapping[str, Any],
    history: engine.History,
    decision: dict[str, Any],
    running: list[Running],
    *,
    cost: Any = None,
) -> dict[str, Any]:
    """The tool's `at_most`, its spend over the run and the run's cost cap, counting the writes in
    flight (`running`) as the check counts those that ran (one in flight costs what the catalogue
    declares); `decision` when they hold, else the refusal the check gives. `cost`: what the host
    says this call costs."""
    counted = counted_checks(known, call)
    if not running or not counts_running(known, call):
        return decision
    ran = history.count(known.name)
    of_tool = sum(1 for entry in running if entry.tool == known.name)
    if known.at_most is not None and ran + of_tool >= known.at_most:
        return _order_refusal(f"at_most {known.at_most}", None, ran=ran, running=of_tool).to_dict()
    arguments = call.get("arguments") or {}
    # The check's own figures for the cost cap, the writes in flight added to what was spent.
    run_cost = (
        check.run_cost_of(known, arguments, history, cost if is_amount(cost) else None)
        if counted
        else None
    )
    if run_cost is not None:
        costs = (
            declared_cost(
                getattr(check.catalogue.tools.get(entry.tool), "cost", None),
                entry.arguments if isinstance(entry.arguments, dict) else {},
            )
            for entry in running
        )
        running_cost = sum((c for c in costs if c is not MISSING_COST), Decimal(0))
        run_cost = replace(run_cost, spent=run_cost.spent + running_cost)
    lookup = _WithRunning(history, running)
    for item in counted:
        failure = tool_checks.evaluate(
            (item,), arguments, lookup, None, tool=known.name, cost=run_cost
        )
        if failure is not None:
            reason, detail = failure
            rule = detail.pop("rule")
            detail["index"] = known.checks.index(item)
            return _refuse(reason, 7, "your_rules", rule=rule, **detail).to_dict()
    return decision
