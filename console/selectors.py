"""Reads of the console's own app: the audit rows and the events an organisation's people may browse,
and the settings the engines read."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncHour
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from console.models import (
    AuditRow,
    Decision,
    Event,
    Organisation,
    OrganisationSettings,
)


def said_modes(organisation_id: int) -> dict[str, str]:
    """The modes of the checks of what was said for an organisation, as its Settings page says.

    `{"grounded": "off|confirm", "s1_veto": "off|refuse|confirm", "s2_veto": ...,
    "confirm_read": ...}`: the `modes` of `router.engine.said_checks` and the `said` setting of a
    runtime session. An organisation whose settings were never saved has the defaults (`confirm`
    for each), the same values a first save would store.
    """
    found = OrganisationSettings.objects.filter(organisation_id=organisation_id).first()
    if found is None:
        found = OrganisationSettings()
    return found.said_modes()


class FilterError(ValueError):
    """A filter value that cannot be read; carries the parameter's name."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


#: A text filter longer than this matches nothing stored (the longest of those columns is 200).
MAX_FILTER_LENGTH = 200
#: The pieces of text between a tool glob's `*`: each is a clause of the query, and SQLite refuses
#: a query nested too deep (`a*` 2,000 times was a 500).
MAX_GLOB_PIECES = 16


def filter_text(params, field: str) -> str:  # noqa: ANN001
    """A text filter, stripped; a long one or one with a NUL (PostgreSQL cannot compare it) is refused."""
    value = (params.get(field) or "").strip()
    if len(value) > MAX_FILTER_LENGTH:
        raise FilterError(field, f"a filter has at most {MAX_FILTER_LENGTH} characters")
    if "\x00" in value:
        raise FilterError(field, "a NUL character is not allowed")
    return value


def parse_moment(field: str, raw: str, *, end: bool = False) -> dt.datetime | None:
    """A date or date-time from a filter; a bare date at the end of a range means its whole day.

    One that is shaped right but is no moment (`2024-13-45`, `T25:00`, an offset of `+99:00`, a
    day at the calendar's edge that an offset or the whole day pushes past it) is refused too."""
    raw = (raw or "").strip()
    if not raw:
        return None
    refused = FilterError(field, f"`{raw[:64]}` is not a date or a date and time")
    try:
        moment = parse_datetime(raw)
        if moment is None:
            day = parse_date(raw) if len(raw) == 10 else None
            if day is None:
                raise refused
            moment = dt.datetime.combine(day, dt.time.min)
            if end:
                moment += dt.timedelta(days=1)
        if timezone.is_naive(moment):
            moment = timezone.make_aware(moment, dt.UTC)
        return moment.astimezone(dt.UTC)
    except (ValueError, OverflowError) as exc:
        if exc is refused:
            raise
        raise refused from exc


@dataclass(frozen=True)
class EventFilters:
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    agent: str = ""
    session: str = ""
    tool: str = ""
    decision: str = ""
    verdict: str = ""
    rule: str = ""
    alerts: bool = False
    after: int | None = None
    run: str = ""  # the framework's run id
    thread: str = ""  # the framework's thread id

    @classmethod
    def from_params(cls, params) -> EventFilters:  # noqa: ANN001
        decision = (params.get("decision") or "").strip()
        if decision and decision not in Decision.values:
            raise FilterError("decision", f"`{decision}` is not one of allow, confirm, refuse")
        after_text = (params.get("after") or "").strip()
        if after_text and not (
            after_text.isascii() and after_text.isdigit() and len(after_text) < 19
        ):
            raise FilterError("after", f"`{after_text[:64]}` is not an event id")
        alerts_text = (params.get("alerts") or "").strip().lower()
        if alerts_text not in ("", "0", "1", "true", "false", "on", "off"):
            raise FilterError("alerts", f"`{alerts_text}` is not yes or no")
        since = parse_moment("since", params.get("since", ""))
        until = parse_moment("until", params.get("until", ""), end=True)
        if since and until and since >= until:
            raise FilterError("until", "the end of the range must come after its start")
        tool = filter_text(params, "tool")
        if len([piece for piece in tool.split("*") if piece]) > MAX_GLOB_PIECES:
            raise FilterError(
                "tool", f"a glob has at most {MAX_GLOB_PIECES} pieces between its `*`"
            )
        framework = {}
        for name in ("run", "thread"):
            value = filter_text(params, name)
            if len(value) > 128:
                raise FilterError(name, "a framework id has at most 128 characters")
            framework[name] = value
        return cls(
            since=since,
            until=until,
            **framework,
            agent=filter_text(params, "agent"),
            session=filter_text(params, "session"),
            tool=tool,
            decision=decision,
            verdict=filter_text(params, "verdict"),
            rule=filter_text(params, "rule"),
            alerts=alerts_text in ("1", "true", "on"),
            after=int(after_text) if after_text else None,
        )


def event_list(*, organisation: Organisation, filters: EventFilters) -> QuerySet[Event]:
    qs = Event.objects.filter(organisation=organisation)
    if filters.since:
        qs = qs.filter(at__gte=filters.since)
    if filters.until:
        qs = qs.filter(at__lt=filters.until)
    for name in ("agent", "session", "decision", "verdict", "rule"):
        value = getattr(filters, name)
        if value:
            qs = qs.filter(**{name: value})
    if filters.run:
        qs = qs.filter(run_id=filters.run)
    if filters.thread:
        qs = qs.filter(thread_id=filters.thread)
    if filters.tool:
        qs = qs.filter(tool_matches(filters.tool))
    if filters.alerts:
        qs = qs.filter(is_alert=True)
    if filters.after is not None:
        qs = qs.filter(id__gt=filters.after)
    return qs.order_by("-at", "-id")


def tool_matches(pattern: str) -> Q:
    """The tool filter: a glob (`crm.*`, `*.export`) when it has a `*`, else part of the name."""
    if "*" not in pattern:
        return Q(tool__icontains=pattern)
    parts = pattern.split("*")
    q = Q()
    if parts[0]:
        q &= Q(tool__istartswith=parts[0])
    if parts[-1]:
        q &= Q(tool__iendswith=parts[-1])
    for middle in parts[1:-1]:
        if middle:
            q &= Q(tool__icontains=middle)
    return q


# The chart's series: the three answers; a firewall's deny is a refusal like any other.
CHART_SERIES = ("allow", "confirm", "refuse")


def decisions_per_hour(
    *,
    organisation: Organisation,
    filters: EventFilters,
    hours: int = 24,
    now: dt.datetime | None = None,
) -> list[dict]:
    """Counts per clock hour of the last `hours`, oldest first: allow, confirm, refuse, deny."""
    now = now or timezone.now()
    end = now.replace(minute=0, second=0, microsecond=0) + dt.timedelta(hours=1)
    start = end - dt.timedelta(hours=hours)
    buckets = [
        {"hour": start + dt.timedelta(hours=i), **dict.fromkeys(CHART_SERIES, 0)}
        for i in range(hours)
    ]
    # Counted by the database, a row per hour, decision and verdict: the page and its poll draw
    # the chart, and a day of events read one by one kept a web worker busy as long as it was big.
    rows = (
        event_list(organisation=organisation, filters=filters)
        .filter(at__gte=start, at__lt=end)
        .annotate(hour=TruncHour("at", tzinfo=dt.UTC))
        .order_by()
        .values("hour", "decision", "verdict")
        .annotate(n=Count("id"))
    )
    for row in rows:
        index = int((row["hour"] - start).total_seconds() // 3600)
        series = "refuse" if row["verdict"] == "deny" else row["decision"]
        if 0 <= index < hours and series in CHART_SERIES:
            buckets[index][series] += row["n"]
    return buckets


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
            actor=filter_text(params, "actor"),
            action=filter_text(params, "action"),
            object_type=filter_text(params, "object_type"),
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


def dashboard_panels(*, actor: Any, now: dt.datetime | None = None) -> dict[str, Any]:
    """What each role's dashboard shows beyond the counts: the work waiting for that role.

    Approvers see the approvals waiting and the oldest one's age; auditors the alerts and the feed's
    last hour; editors the rules that fired today and what shadow rules would have decided.
    """
    from django.db.models import Min, Sum

    from firewall.models import RuleMatchCount
    from guard.models import ApprovalRequest

    now = now or timezone.now()
    org = actor.organisation
    out: dict[str, Any] = {}
    if actor.can("approvals.read"):
        pending = ApprovalRequest.objects.filter(
            organisation=org, status=ApprovalRequest.Status.PENDING, expires_at__gt=now
        )
        oldest = pending.aggregate(at=Min("created_at"))["at"]
        out["approvals"] = {
            "waiting": pending.count(),
            "oldest_minutes": int((now - oldest).total_seconds() // 60) if oldest else None,
        }
    if actor.can("events.read"):
        events = Event.objects.filter(organisation=org)
        out["alerts"] = list(
            events.filter(is_alert=True, at__gte=now - dt.timedelta(hours=24)).order_by("-at")[:5]
        )
        out["last_hour"] = events.filter(at__gte=now - dt.timedelta(hours=1)).count()
    if actor.can("firewall.write"):
        day = now.replace(minute=0, second=0, microsecond=0) - dt.timedelta(hours=23)
        fired = (
            RuleMatchCount.objects.filter(rule__policy__organisation=org, hour__gte=day)
            .values("rule_id", "rule__name", "rule__policy_id", "mode")
            .annotate(n=Sum("count"))
            .order_by("-n")
        )
        out["fired"] = [r for r in fired if r["mode"] == "enforce"][:5]
        out["shadow"] = [r for r in fired if r["mode"] == "shadow"][:5]
    return out
