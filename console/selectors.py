"""Reads of the console's own app: the audit rows and the events an organisation's people may browse."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from console.models import AuditRow, Decision, Event, Organisation


class FilterError(ValueError):
    """A filter value that cannot be read; carries the parameter's name."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def parse_moment(field: str, raw: str, *, end: bool = False) -> dt.datetime | None:
    """A date or date-time from a filter; a bare date at the end of a range means its whole day."""
    raw = (raw or "").strip()
    if not raw:
        return None
    moment = parse_datetime(raw)
    if moment is None:
        day = parse_date(raw) if len(raw) == 10 else None
        if day is None:
            raise FilterError(field, f"`{raw}` is not a date or a date and time")
        moment = dt.datetime.combine(day, dt.time.min)
        if end:
            moment += dt.timedelta(days=1)
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, dt.UTC)
    return moment


@dataclass(frozen=True)
class EventFilters:
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    agent: str = ""
    session: str = ""
    tool: str = ""
    decision: str = ""
    rule: str = ""

    @classmethod
    def from_params(cls, params) -> EventFilters:  # noqa: ANN001
        decision = (params.get("decision") or "").strip()
        if decision and decision not in Decision.values:
            raise FilterError("decision", f"`{decision}` is not one of allow, confirm, refuse")
        since = parse_moment("since", params.get("since", ""))
        until = parse_moment("until", params.get("until", ""), end=True)
        if since and until and since >= until:
            raise FilterError("until", "the end of the range must come after its start")
        return cls(
            since=since,
            until=until,
            agent=(params.get("agent") or "").strip(),
            session=(params.get("session") or "").strip(),
            tool=(params.get("tool") or "").strip(),
            decision=decision,
            rule=(params.get("rule") or "").strip(),
        )


def event_list(*, organisation: Organisation, filters: EventFilters) -> QuerySet[Event]:
    qs = Event.objects.filter(organisation=organisation)
    if filters.since:
        qs = qs.filter(at__gte=filters.since)
    if filters.until:
        qs = qs.filter(at__lt=filters.until)
    for name in ("agent", "session", "tool", "decision", "rule"):
        value = getattr(filters, name)
        if value:
            qs = qs.filter(**{name: value})
    return qs.order_by("-at", "-id")


@dataclass(frozen=True)
class AuditFilters:
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    actor: str = ""
    action: str = ""
    object_type: str = ""

    @classmethod
    def from_params(cls, params) -> AuditFilters:  # noqa: ANN001
        since = parse_moment("since", params.get("since", ""))
        until = parse_moment("until", params.get("until", ""), end=True)
        if since and until and since >= until:
            raise FilterError("until", "the end of the range must come after its start")
        return cls(
            since=since,
            until=until,
            actor=(params.get("actor") or "").strip(),
            action=(params.get("action") or "").strip(),
            object_type=(params.get("object_type") or "").strip(),
        )


def audit_list(*, organisation: Organisation, filters: AuditFilters) -> QuerySet[AuditRow]:
    qs = AuditRow.objects.filter(organisation=organisation)
    if filters.since:
        qs = qs.filter(at__gte=filters.since)
    if filters.until:
        qs = qs.filter(at__lt=filters.until)
    if filters.actor:
        qs = qs.filter(actor__icontains=filters.actor)
    if filters.action:
        qs = qs.filter(action__startswith=filters.action)
    if filters.object_type:
        qs = qs.filter(object_type=filters.object_type)
    return qs.order_by("-seq")
