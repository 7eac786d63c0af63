"""What `/metrics` adds to the executor's counters: decisions, alerts, the outbox and the approvals queue.

Everything is read from the database when Prometheus scrapes, for the key's organisation only, so
the figures are the same whichever web process answers and survive restarts. Decisions and alerts
are counted from the event rows (a recorded decision is an event), by source, decision and rule.
"""

from __future__ import annotations

from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from console.models import Event, MatchState, Organisation


def _age(oldest) -> float:  # noqa: ANN001
    return (timezone.now() - oldest).total_seconds() if oldest is not None else 0.0


class ConsoleCollector:
    def __init__(self, organisation: Organisation) -> None:
        self.organisation = organisation

    def collect(self):  # noqa: ANN201
        from guard.models import ApprovalRequest

        org = self.organisation
        slug = org.slug
        events = Event.objects.filter(organisation=org)
        decisions = CounterMetricFamily(
            "stalwart_decisions",
            "Decisions recorded in the event feed, by source, decision and rule.",
            labels=["organisation", "source", "decision", "rule"],
        )
        for row in (
            events.filter(is_alert=False)
            .values("source", "decision", "rule")
            .annotate(n=Count("id"))
            .order_by("source", "decision", "rule")
        ):
            decisions.add_metric([slug, row["source"], row["decision"], row["rule"]], row["n"])
        yield decisions
        alerts = CounterMetricFamily(
            "stalwart_alerts",
            "Alerts raised by sequence rules, by rule.",
            labels=["organisation", "rule"],
        )
        for row in (
            events.filter(is_alert=True).values("rule").annotate(n=Count("id")).order_by("rule")
        ):
            alerts.add_metric([slug, row["rule"]], row["n"])
        yield alerts
        yield from _queue(
            slug,
            events.filter(match_state=MatchState.PENDING),
            "at",
            ("stalwart_outbox_pending", "Events waiting for a worker's sequence matching."),
            (
                "stalwart_outbox_oldest_seconds",
                "How long the oldest event waiting for a worker has waited (0 when none waits).",
            ),
        )
        yield from _queue(
            slug,
            ApprovalRequest.objects.filter(
                organisation=org,
                status=ApprovalRequest.Status.PENDING,
                expires_at__gt=timezone.now(),
            ),
            "created_at",
            ("stalwart_approvals_waiting", "Confirm prompts waiting for a person."),
            (
                "stalwart_approvals_oldest_seconds",
                "How long the oldest confirm prompt has waited (0 when none waits).",
            ),
        )


def _queue(slug: str, rows, at: str, depth: tuple[str, str], age: tuple[str, str]):  # noqa: ANN001, ANN202
    """Two gauges of a queue: how many rows wait, and how long the oldest has waited."""
    figures = rows.aggregate(n=Count("id"), oldest=Min(at))
    for (name, help_), value in ((depth, figures["n"]), (age, _age(figures["oldest"]))):
        family = GaugeMetricFamily(name, help_, labels=["organisation"])
        family.add_metric([slug], value)
        yield family
