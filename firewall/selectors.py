"""Reads of the firewall app: policies, their versions and diffs, a draft replayed, and matches."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db.models import Sum
from django.utils import timezone

from console.models import Event
from firewall import engine
from firewall.diff import policy_diff
from firewall.models import Policy, PolicyVersion, RuleMatchCount
from firewall.runtime import draft_rules, policy_json, version_json


def policy_list(*, organisation):  # noqa: ANN001, ANN201
    return (
        Policy.objects.filter(organisation=organisation)
        .select_related("published")
        .order_by("-active", "name")
    )


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


def version_list(*, policy: Policy) -> list[PolicyVersion]:
    """The policy's published versions, newest first."""
    return list(policy.versions.order_by("-number"))


DRAFT = "draft"


def content_of(*, policy: Policy, ref: str | int) -> tuple[str, list[dict[str, Any]]]:
    """The default verdict and rules of a version (`ref` its number) or of the draft (`draft`).

    Raises `LookupError` naming the ref when the policy has no such version.
    """
    if ref == DRAFT:
        return policy.default_verdict, draft_rules(policy)
    version = policy.versions.filter(number=ref).first()
    if version is None:
        raise LookupError(f"the policy has no version {ref}")
    return version.default_verdict, version.rules


def read_ref(text: Any) -> str | int:
    """A version as a page or the API names it: its number, or `draft`; `ValueError` otherwise."""
    if isinstance(text, int) and not isinstance(text, bool) and text >= 1:
        return text
    if isinstance(text, str):
        text = text.strip()
        if text == DRAFT:
            return DRAFT
        # ASCII digits, few enough for int(): Python's own messages are no answer to a person
        if text.isascii() and text.isdigit() and len(text) <= 10 and 1 <= int(text) < 2**31:
            return int(text)
    raise ValueError("a version's number, or `draft`")


def version_diff(*, policy: Policy, old: str | int, new: str | int) -> dict[str, Any]:
    """Rules added, removed and changed from `old` to `new` (numbers, or `draft`)."""
    old_default, old_rules = content_of(policy=policy, ref=old)
    new_default, new_rules = content_of(policy=policy, ref=new)
    return {"old": old, "new": new, **policy_diff(old_default, old_rules, new_default, new_rules)}


#: How many recorded calls a replay reads at most, newest first.
REPLAY_LIMIT = 1000
REPLAY_SHOWN = 50


def _no_lookup(host: str) -> tuple[str, ...]:
    return ()


def draft_replay(
    *, policy: Policy, hours: int = 24, limit: int = REPLAY_LIMIT, now: dt.datetime | None = None
) -> dict[str, Any]:
    """The draft decided on the calls the firewall recorded in the last `hours`, beside the
    published version, both by the engine alone: what publishing would change.

    Sound for what it reads, and it says what it does not: a plain allow is recorded only when the
    policy has sequence rules, so the calls read are the ones the firewall recorded (its events),
    at most `limit` of them, newest first; host names are not resolved (both sides alike), and
    tool switches, holds and approvals, which are not the policy's, are left out. Nothing is
    written.
    """
    now = now or timezone.now()
    published = policy.published
    if published is None:
        return {"available": False, "why": "nothing is published yet: every call is refused"}
    live = engine.compile_policy(
        version_json(published, policy.name), strict=False, resolver=_no_lookup
    )
    draft = engine.compile_policy(policy_json(policy), strict=False, resolver=_no_lookup)
    events = (
        Event.objects.filter(
            organisation=policy.organisation,
            source="firewall",
            at__gte=now - dt.timedelta(hours=hours),
        )
        .order_by("-at", "-id")
        .only("id", "at", "tool", "agent", "detail")[:limit]
    )
    read, changes, count = 0, [], 0
    for event in events:
        call = event.detail.get("call") if isinstance(event.detail, dict) else None
        if not isinstance(call, dict):
            continue
        read += 1
        before, after = live.evaluate(call).to_dict(), draft.evaluate(call).to_dict()
        if (before["verdict"], before["rule"]) == (after["verdict"], after["rule"]):
            continue
        count += 1
        if len(changes) < REPLAY_SHOWN:
            changes.append({"event": event, "before": before, "after": after})
    return {
        "available": True,
        "version": published.number,
        "hours": hours,
        "read": read,
        "limit": limit,
        "changed": count,
        "changes": changes,
    }


def draft_in_shadow(*, policy: Policy, shown: int = REPLAY_SHOWN) -> dict[str, Any] | None:
    """The live decisions the current draft, in shadow beside them, would have decided otherwise:
    recorded since the draft last changed (its `draft_key`), never enforced. None without a draft."""
    if policy.draft_key is None or policy.published_id is None:
        return None
    rows = Event.objects.filter(
        organisation=policy.organisation,
        source="firewall",
        detail__draft__key=str(policy.draft_key),
    )
    return {
        "count": rows.count(),
        "events": list(
            rows.order_by("-at", "-id").only("id", "at", "tool", "verdict", "rule", "detail")[
                :shown
            ]
        ),
    }
