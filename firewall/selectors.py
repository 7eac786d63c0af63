"""Reads of the firewall app: policies of an organisation and how often each rule matched."""

from __future__ import annotations

import datetime as dt

from django.db.models import Sum
from django.utils import timezone

from firewall.models import Policy, RuleMatchCount


def policy_list(*, organisation):  # noqa: ANN001, ANN201
    return Policy.objects.filter(organisation=organisation).order_by("-active", "name")


def match_counts(*, policy: Policy, now: dt.datetime | None = None) -> dict[int, dict[str, int]]:
    """For each rule id: matches over the last hour and day, enforcing and in shadow.

    Counts are kept per clock hour: "the last hour" is the current clock hour, and "the last day"
    the current hour and the 23 before it.
    """
    now = now or timezone.now()
    hour_start = now.replace(minute=0, second=0, microsecond=0)
    day_start = hour_start - dt.timedelta(hours=23)
    out: dict[int, dict[str, int]] = {}
    for bucket, since in (("hour", hour_start), ("day", day_start)):
        rows = (
            RuleMatchCount.objects.filter(rule__policy=policy, hour__gte=since)
            .values("rule_id", "mode")
            .annotate(n=Sum("count"))
        )
        for row in rows:
            entry = out.setdefault(
                row["rule_id"],
                {"enforce_hour": 0, "enforce_day": 0, "shadow_hour": 0, "shadow_day": 0},
            )
            entry[f"{row['mode']}_{bucket}"] = row["n"]
    return out
