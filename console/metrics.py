"""What `/metrics` adds to the executor's counters: decisions, alerts, the outbox and the approvals queue.

Counts are read from the database when Prometheus scrapes, for the key's organisation only, so
the figures are the same whichever web process answers and survive restarts. Decisions and alerts
are counted from the event rows (a recorded decision is an event), by source, decision and rule.
How long deciding takes (`stalwart_decision_seconds`) is measured in the process that decides: with
several gunicorn processes, set `PROMETHEUS_MULTIPROC_DIR` (an empty folder) so that a scrape reads
every process's figures (prometheus-client's multiprocess mode; console/gunicorn.py tidies up after
a process that exits).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client import CollectorRegistry, Histogram, multiprocess
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from console.models import Event, MatchState, Organisation

DECISION_SECONDS = Histogram(
    "stalwart_decision_seconds",
    "How long a decision took, from the request to the answer, by source.",
    ["organisation", "source"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)


def observe_decision(organisation: str, source: str, started: float) -> None:
    """Record a decision that began at `started` (`time.perf_counter()`)."""
    DECISION_SECONDS.labels(organisation, source).observe(time.perf_counter() - started)


def _latency(slug: str) -> Iterator[Metric]:
    """This organisation's decision-latency histogram, from every process when multiprocess."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        families = registry.collect()
    else:
        families = DECISION_SECONDS.collect()
    for family in families:
        if family.name != "stalwart_decision_seconds":
            continue
        kept = Metric(family.name, family.documentation, family.type)
        kept.samples = [s for s in family.samples if s.labels.get("organisation") == slug]
        yield kept


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
        yield from _latency(slug)
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
