"""The executor's panel: counters per organisation and tool, kept in the decision's transaction."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F

from console.models import Organisation
from guard.engine.execution import COUNTERS
from guard.models import ToolCounter


def count(organisation: Organisation, tool: str, name: str, by: int = 1) -> None:
    """Add `by` to one counter (created on first use)."""
    if name not in COUNTERS:
        raise ValueError(f"unknown counter `{name}`")
    rows = ToolCounter.objects.filter(organisation=organisation, tool=tool[:200], name=name)
    if rows.update(value=F("value") + by):
        return
    try:
        with transaction.atomic():
            ToolCounter.objects.create(
                organisation=organisation, tool=tool[:200], name=name, value=by
            )
    except IntegrityError:  # created by a concurrent transaction since the update
        rows.update(value=F("value") + by)


def counters(organisation: Organisation) -> dict[str, dict[str, int]]:
    """Every tool's counters, each with all seven names (zero when never counted)."""
    table: dict[str, dict[str, int]] = {}
    for tool, name, value in ToolCounter.objects.filter(organisation=organisation).values_list(
        "tool", "name", "value"
    ):
        table.setdefault(tool, dict.fromkeys(COUNTERS, 0))[name] = value
    return dict(sorted(table.items()))
