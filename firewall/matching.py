"""Sequence rules matched on workers, from the events table: the transactional outbox.

Every recorded event starts `pending` in one of `SHARDS` shards (by organisation, agent and
session, so one session's events stay in one shard, in id order). A worker drains a shard in
batches; each batch is one transaction that locks the shard's row, advances every sequence rule
the batch's events touch, stores the rules' per-session states, writes the alerts and their
follow-up actions, and marks the events `matched`. A worker killed mid-batch therefore leaves the
whole batch pending for the next one, and an alert is unique per rule, session and completing
event, so a chain raises one alert however often it is retried.
"""

from __future__ import annotations

import logging
import threading
import zlib
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from console.controls import holds_in_force, switches_in_force
from console.models import (
    SHARDS,
    Event,
    MatchState,
    Notification,
    OrganisationSettings,
    SessionHold,
    ToolSwitch,
)
from firewall import engine
from firewall.engine.globs import compile_glob
from firewall.engine.names import name_key
from firewall.engine.vocabulary import DECISION_OF_VERDICT
from firewall.models import (
    MatcherShard,
    Policy,
    Rule,
    RuleMatchCount,
    SequenceAlert,
    SequenceState,
)

log = logging.getLogger(__name__)

ACTIONS = ("hold_session", "disable_tool", "notify")


def shard_of(organisation_id: int, agent: str, session: str) -> int:
    return zlib.crc32(f"{organisation_id}:{agent}:{session}".encode()) % SHARDS


@dataclass(frozen=True)
class SequenceRule:
    id: int
    name: str
    verdict: str
    shadow: bool
    steps: list[dict[str, Any]]
    window_seconds: float
    on_match: tuple[str, ...]
    # (matches the tool, egress only) per step
    step_tests: tuple[tuple[Any, bool], ...]
    compiled: Any
    # the number of the published version the rule was read from
    version: int | None = None

    def touches(self, tool: str, is_egress: bool) -> bool:
        """Whether any step could take the event."""
        return any(m(tool) and (is_egress or not e) for m, e in self.step_tests)

    def starts(self, tool: str, is_egress: bool) -> bool:
        """Whether the first step could take the event (else, with no progress, it is a no-op)."""
        matches, egress_only = self.step_tests[0]
        return matches(tool) and (is_egress or not egress_only)


class RuleSet(list):
    """An organisation's sequence rules, with the rules each tool touches remembered per tool.

    Tools repeat far more than they vary, so after the first event of a tool the candidates are
    one dictionary lookup, whatever the number of rules.
    """

    MEMO_LIMIT = 10_000

    def __init__(self, rules: list[SequenceRule], *, version: int | None = None) -> None:
        super().__init__(rules)
        self.version = version
        self._memo: dict[tuple[str, bool], tuple[SequenceRule, ...]] = {}

    def touching(self, tool: str, is_egress: bool) -> tuple[SequenceRule, ...]:
        key = (tool, is_egress)
        hit = self._memo.get(key)
        if hit is None:
            hit = tuple(rule for rule in self if rule.touches(tool, is_egress))
            if len(self._memo) >= self.MEMO_LIMIT:
                self._memo.clear()
            self._memo[key] = hit
        return hit


_rules_cache: dict[str, RuleSet] = {}
_rules_lock = threading.Lock()
_NO_RULES = RuleSet([])


def sequence_rules(organisation_id: int) -> RuleSet:
    """The enabled sequence rules of the published version of the organisation's active policy."""
    row = (
        Policy.objects.filter(organisation_id=organisation_id, active=True)
        .values_list("published__key", "published__number")
        .first()
    )
    if row is None or row[0] is None:
        return _NO_RULES
    return sequence_rules_of((row[0], row[1]))


def sequence_rules_of(published: tuple[Any, int] | None) -> RuleSet:
    """The enabled sequence rules of the published version with this key and number.

    A version never changes, so its key keys the cache exactly.
    """
    if published is None:
        return _NO_RULES
    key = str(published[0])
    with _rules_lock:
        hit = _rules_cache.get(key)
    if hit is not None:
        return hit
    from firewall.models import PolicyVersion

    version = PolicyVersion.objects.get(key=published[0])
    rules = []
    for spec in version.rules:
        sequence = spec.get("sequence")
        if not sequence or spec.get("enabled", True) is False:
            continue
        try:
            compiled = engine.CompiledSequence(sequence["steps"], sequence.get("window_seconds", 0))
        except (engine.FirewallError, KeyError, TypeError):
            log.error("sequence rule %s cannot be read; it is not matched", spec["id"])
            continue
        rules.append(
            SequenceRule(
                id=spec["id"],
                name=spec["name"],
                verdict=spec.get("verdict", "audit"),
                shadow=spec.get("mode") == "shadow",
                steps=sequence["steps"],
                window_seconds=sequence.get("window_seconds", 0),
                on_match=tuple(sequence.get("on_match", ())),
                step_tests=tuple(
                    (compile_glob(step["tool_glob"]), bool(step.get("egress", False)))
                    for step in sequence["steps"]
                ),
                compiled=compiled,
                version=version.number,
            )
        )
    rule_set = RuleSet(rules, version=version.number)
    with _rules_lock:
        if len(_rules_cache) > 256:
            _rules_cache.clear()
        _rules_cache[key] = rule_set
    return rule_set


def _matcher_event(event: Row) -> dict[str, Any]:
    call = event.detail.get("call") if isinstance(event.detail, dict) else None
    destination = call.get("destination") if isinstance(call, dict) else None
    return {
        "id": event.pk,
        "tool": event.tool,
        "ts": event.at.timestamp(),
        "stage": event.stage,
        "destination": destination if isinstance(destination, str) else None,
    }


def _lock_shard(shard: int) -> None:
    """Take the shard's row lock for the batch's transaction: the UPDATE itself takes it."""
    if MatcherShard.objects.filter(shard=shard).update(drained_at=timezone.now()):
        return
    try:
        with transaction.atomic():
            MatcherShard.objects.create(shard=shard, drained_at=timezone.now())
            return
    except IntegrityError:
        pass  # another worker created it meanwhile: wait for its lock like any other
    MatcherShard.objects.select_for_update().get(shard=shard)


MATCHED_FIELDS = ("id", "organisation_id", "agent", "session", "tool", "stage", "detail", "at")


class Row:
    """One pending event as the matcher reads it: the fields it needs, not a model instance
    (building 500 deferred-field models per batch costs more than matching them)."""

    __slots__ = ("pk", "organisation_id", "agent", "session", "tool", "stage", "detail", "at")

    def __init__(self, values: tuple[Any, ...]) -> None:
        (
            self.pk,
            self.organisation_id,
            self.agent,
            self.session,
            self.tool,
            self.stage,
            self.detail,
            self.at,
        ) = values


def drain_shard(shard: int, *, batch: int | None = None) -> int:
    """Match one batch of the shard's pending events; returns how many events it took.

    One transaction, a fixed number of statements whatever the batch's size: the shard's lock,
    the active policy, the batch, its sessions' states; then, if chains completed, the alerts
    (what was raised already, which rules still exist, the alert events and their records); the
    batch marked, the states written in one upsert, the rules' match counts in one upsert, and
    the shard's counter. A worker killed anywhere in it leaves the whole batch pending.
    """
    batch = batch or settings.STALWART_MATCH_BATCH
    with transaction.atomic():
        _lock_shard(shard)
        events = [
            Row(values)
            for values in Event.objects.filter(match_state=MatchState.PENDING, shard=shard)
            .order_by("id")
            .values_list(*MATCHED_FIELDS)[:batch]
        ]
        if not events:
            return 0
        _match(events)
        MatcherShard.objects.filter(shard=shard).update(
            events_matched=F("events_matched") + len(events)
        )
    return len(events)


SessionKey = tuple[int, str, str]


def _match(events: list[Row]) -> None:
    rules_of: dict[int, RuleSet] = {}
    for event in events:
        if event.organisation_id not in rules_of:
            rules_of[event.organisation_id] = sequence_rules(event.organisation_id)
    sessions = {(e.organisation_id, e.agent, e.session) for e in events}
    # The states of one session, by rule id (as JSON keeps them: strings).
    states: dict[SessionKey, dict[str, Any]] = {}
    if any(rules_of.values()):
        for organisation_id, agent, session, row_states in SequenceState.objects.filter(
            organisation_id__in={s[0] for s in sessions}, session__in={s[2] for s in sessions}
        ).values_list("organisation_id", "agent", "session", "states"):
            if (organisation_id, agent, session) in sessions:
                states[(organisation_id, agent, session)] = dict(row_states)
    dirty: set[SessionKey] = set()
    fresh: set[tuple[SessionKey, str]] = set()  # states advanced in this batch
    matched: list[int] = []
    unreadable: list[tuple[int, str]] = []
    by_id = {e.pk: e for e in events}
    found: list[tuple[Row, SequenceRule, dict[str, Any]]] = []
    for event in events:
        if not event.tool:
            unreadable.append((event.pk, "the event names no tool"))
            continue
        item = _matcher_event(event)
        is_egress = item["stage"] == "egress" or bool(item["destination"])
        session = (event.organisation_id, event.agent, event.session)
        of_session = states.setdefault(session, {})
        for rule in rules_of[event.organisation_id].touching(event.tool, is_egress):
            rule_key = str(rule.id)
            if rule_key not in of_session and not rule.starts(event.tool, is_egress):
                continue  # a later step with no chain under way: nothing to advance
            ours = (session, rule_key) in fresh
            try:
                # States read from the database are checked on first use; later ones are ours.
                state, match = rule.compiled.advance(
                    of_session.get(rule_key), rule.id, item, trusted=ours, in_place=ours
                )
            except engine.SequenceError as exc:
                unreadable.append((event.pk, f"the matcher cannot read it: {exc}"))
                break
            of_session[rule_key] = state
            fresh.add((session, rule_key))
            dirty.add(session)
            if match is not None:
                found.append((event, rule, match))
        else:
            matched.append(event.pk)
    counts = _raise_alerts(found, by_id)
    Event.objects.filter(pk__in=matched).update(match_state=MatchState.MATCHED)
    for pk, note in unreadable:
        Event.objects.filter(pk=pk).update(match_state=MatchState.UNREADABLE, match_note=note[:300])
    _store_states(states, dirty, rules_of)
    # Last before the commit: the count rows are the one thing two workers' batches share, and
    # their row locks are held from here to the commit.
    _count_alert_matches(counts)


def _store_states(states, dirty, rules_of) -> None:  # noqa: ANN001
    """Write the sessions whose states changed, in one upsert; states of rules that no longer
    exist are dropped. The shard's lock makes this worker the sessions' only writer."""
    if not dirty:
        return
    table = SequenceState._meta.db_table
    field = SequenceState._meta.get_field("states")
    updated = SequenceState._meta.get_field("updated_at").get_db_prep_value(
        timezone.now(), connection
    )
    live_of = {
        organisation_id: {str(rule.id) for rule in rules}
        for organisation_id, rules in rules_of.items()
    }
    rows = []
    for key in sorted(dirty):  # one order for every writer: row locks never cross
        organisation_id, agent, session = key
        live = live_of.get(organisation_id, set())
        kept = {rule_id: state for rule_id, state in states[key].items() if rule_id in live}
        rows.append(
            (organisation_id, agent, session, field.get_db_prep_value(kept, connection), updated)
        )
    cast = "::jsonb" if connection.vendor == "postgresql" else ""
    _upsert(
        f"INSERT INTO {table} (organisation_id, agent, session, states, updated_at) VALUES ",  # noqa: S608
        f"(%s, %s, %s, %s{cast}, %s)",
        " ON CONFLICT (organisation_id, agent, session) DO UPDATE"
        " SET states = excluded.states, updated_at = excluded.updated_at",
        rows,
    )


# Rows per statement of an upsert: SQLite binds at most 32,766 parameters to one statement.
UPSERT_ROWS = 1000


def _upsert(head: str, row: str, tail: str, rows: list[tuple[Any, ...]]) -> None:
    """`head` + one `row` per row + `tail`, in statements of `UPSERT_ROWS` rows."""
    with connection.cursor() as cursor:
        for start in range(0, len(rows), UPSERT_ROWS):
            chunk = rows[start : start + UPSERT_ROWS]
            cursor.execute(
                head + ", ".join([row] * len(chunk)) + tail,
                [value for values in chunk for value in values],
            )


def _chain(match: dict[str, Any], events: dict[int, Any]) -> list[list[dict[str, Any]]]:
    return [
        [
            {
                "id": i,
                "tool": events[i].tool if i in events else "",
                "at": events[i].at.isoformat() if i in events else None,
            }
            for i in ids
        ]
        for ids in match["steps"]
    ]


def _raise_alerts(
    found: list[tuple[Row, SequenceRule, dict[str, Any]]], by_id: dict[int, Row]
) -> dict[tuple[int, str], int]:
    """Write the batch's alerts (one query to skip any already raised) and what they set off;
    returns the new alerts' matches to count, by live rule and mode."""
    if not found:
        return {}
    wanted = {i for _, _, match in found for ids in match["steps"] for i in ids} - set(by_id)
    events = {**by_id, **Event.objects.in_bulk(wanted)}
    raised = set(
        SequenceAlert.objects.filter(last_event_id__in={e.pk for e, _, _ in found}).values_list(
            "rule_ref", "agent", "session", "last_event_id"
        )
    )
    new = [(e, r, m) for e, r, m in found if (r.id, e.agent, e.session, e.pk) not in raised]
    # A published version may hold a rule its draft has deleted since: the alert keeps its id.
    live = set(Rule.objects.filter(pk__in={r.id for _, r, _ in new}).values_list("pk", flat=True))
    alerts = Event.objects.bulk_create(
        [
            Event(
                organisation_id=event.organisation_id,
                source="sequence",
                session=event.session,
                agent=event.agent,
                tool=event.tool,
                stage=event.stage,
                decision=DECISION_OF_VERDICT.get(rule.verdict, "allow"),
                verdict=rule.verdict,
                reasons=[f"sequence: {rule.name}"] + (["shadow"] if rule.shadow else []),
                rule=rule.name,
                detail={
                    "rule_id": rule.id,
                    "policy_version": rule.version,
                    "chain": _chain(match, events),
                    "started_at": match["started_at"],
                    "ended_at": match["ended_at"],
                    "window_seconds": rule.window_seconds,
                    "shadow": rule.shadow,
                    "actions": _actions(rule),
                },
                is_alert=True,
                match_state=MatchState.SKIPPED,
            )
            for event, rule, match in new
        ]
    )
    SequenceAlert.objects.bulk_create(
        [
            SequenceAlert(
                organisation_id=event.organisation_id,
                rule_id=rule.id if rule.id in live else None,
                rule_ref=rule.id,
                rule_name=rule.name,
                agent=event.agent,
                session=event.session,
                last_event_id=event.pk,
                event=alert,
            )
            for (event, rule, _), alert in zip(new, alerts, strict=True)
        ]
    )
    for (event, rule, _), alert in zip(new, alerts, strict=True):
        if _actions(rule):
            _set_off(event, rule, alert)
    counts: dict[tuple[int, str], int] = {}
    for _, rule, _ in new:
        if rule.id in live:
            key = (rule.id, "shadow" if rule.shadow else "enforce")
            counts[key] = counts.get(key, 0) + 1
    return counts


def _count_alert_matches(counts: dict[tuple[int, str], int]) -> None:
    """A raised alert is its sequence rule's match: counted like an inline rule's, by mode and
    hour (`RuleMatchCount`), every rule of the batch in one upsert, in rule order."""
    if not counts:
        return
    hour = RuleMatchCount._meta.get_field("hour").get_db_prep_value(
        timezone.now().replace(minute=0, second=0, microsecond=0), connection
    )
    table = RuleMatchCount._meta.db_table
    _upsert(
        f"INSERT INTO {table} (rule_id, hour, mode, count) VALUES ",  # noqa: S608
        "(%s, %s, %s, %s)",
        f" ON CONFLICT (rule_id, hour, mode) DO UPDATE SET count = {table}.count + excluded.count",
        [(rule_id, hour, mode, n) for (rule_id, mode), n in sorted(counts.items())],
    )


def _actions(rule: SequenceRule) -> list[str]:
    return [] if rule.shadow else [a for a in rule.on_match if a in ACTIONS]


def _set_off(event: Row, rule: SequenceRule, alert: Event) -> None:
    """The follow-up actions a matched rule names: hold, switch off, notify."""
    actions = _actions(rule)
    reason = f"sequence rule `{rule.name}` matched (alert {alert.pk})"
    org = event.organisation_id
    # Holds and switches are kept under the names' normal form, as every entry looks them up.
    agent, tool = name_key(event.agent), name_key(event.tool)
    if (
        "hold_session" in actions
        and not holds_in_force(organisation_id=org, agent=agent, session=event.session).exists()
    ):
        SessionHold.objects.create(
            organisation_id=org,
            agent=agent,
            session=event.session,
            reason=reason,
            alert=alert,
        )
    if (
        "disable_tool" in actions
        and not switches_in_force(organisation_id=org, agent=agent, tool=tool).exists()
    ):
        ToolSwitch.objects.create(
            organisation_id=org, agent=agent, tool=tool, reason=reason, alert=alert
        )
    if "notify" in actions:
        url = (
            OrganisationSettings.objects.filter(organisation_id=org)
            .values_list("notify_url", flat=True)
            .first()
        )
        if url:
            notification = Notification.objects.create(organisation_id=org, alert=alert, url=url)
            transaction.on_commit(lambda: _send("console.deliver_notification", notification.pk))


def _send(name: str, *args: Any) -> None:
    from console.celery import app

    try:
        app.send_task(name, args=list(args))
    except Exception:  # noqa: BLE001 - the broker is down: the sweeper sends it again
        log.warning("could not enqueue %s%r; the sweeper will", name, args)
