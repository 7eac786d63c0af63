"""Two matcher processes over one backlog: exactly the alerts one process raises, each once.

The backlog is drained first in this process (the reference), then put back as it was and
drained by two real `celery worker` processes at once, every shard's drain sent twice (as the
sweeper does when a drain is slow) one after the other, so the two take the same shard at once
and must take its batches in turn.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import time

import pytest
from django.db import connection
from django.utils import timezone

from console.access import Actor
from console.celery import app
from console.models import SHARDS, Event, MatchState
from firewall import matching, services
from firewall.models import RuleMatchCount, SequenceAlert, SequenceState
from tests.worker import flush_broker, running_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SYSTEMS = [f"sys{i}" for i in range(6)]
VERBS = ["read", "list", "export", "post", "send", "delete"]


def _rules() -> list[dict]:
    """Twelve chains of two or three steps over the backlog's tools, some with counts."""
    rules = []
    for i in range(12):
        steps = [
            {"tool_glob": f"{SYSTEMS[i % 6]}.{VERBS[i % 3]}", "min_count": 1 + i % 3},
            {"tool_glob": f"*.{VERBS[3 + i % 3]}"},
        ]
        if i % 2:
            steps.append({"tool_glob": "*", "egress": True})
        rules.append(
            {
                "name": f"chain {i}",
                "priority": 100 + i,
                "verdict": "audit",
                "sequence": {"steps": steps, "window_seconds": 3600},
            }
        )
    return rules


@pytest.fixture
def actor(editor, organisation):
    flush_broker()
    actor = Actor(
        organisation=organisation, role="editor", label="user:eve-editor", user_id=editor.pk
    )
    policy = services.policy_create(actor=actor, name="production")
    for spec in _rules():
        services.rule_create(actor=actor, policy=policy, data=spec)
    services.policy_publish(actor=actor, policy=policy)
    yield actor
    flush_broker()


def _backlog(actor: Actor, count: int, sessions: int) -> None:
    """`count` pending events over `sessions` sessions of one agent, each in its session's shard."""
    rng = random.Random(20)
    start = timezone.now()
    org = actor.organisation
    events = []
    for i in range(count):
        session = f"s{rng.randrange(sessions)}"
        egress = rng.random() < 0.15
        events.append(
            Event(
                organisation=org,
                source="test",
                decision="allow",
                session=session,
                agent="desk",
                tool=f"{rng.choice(SYSTEMS)}.{rng.choice(VERBS)}",
                stage="egress" if egress else "tool_call",
                detail={"call": {"destination": "https://example.org/x"}} if egress else {},
                at=start + dt.timedelta(milliseconds=i),
                shard=matching.shard_of(org.pk, "desk", session),
            )
        )
    Event.objects.bulk_create(events, batch_size=1000)


def _alerts() -> list[tuple]:
    """Every alert: rule, session, completing event, and the chain it names."""
    rows = SequenceAlert.objects.values_list(
        "rule_ref", "agent", "session", "last_event_id", "event__detail"
    )
    return sorted(
        (rule, agent, session, last, repr(detail["chain"]), detail["started_at"])
        for rule, agent, session, last, detail in rows
    )


def _counted() -> int:
    return sum(RuleMatchCount.objects.values_list("count", flat=True))


def _wait_ready(log) -> None:  # noqa: ANN001
    deadline = time.monotonic() + 60
    while not (log.exists() and "ready." in log.read_text()):
        assert time.monotonic() < deadline, f"the worker did not start: {log}"
        time.sleep(0.1)


def _taken(log) -> list[int]:  # noqa: ANN001
    """What each drain the worker ran returned: the events it matched."""
    return [
        int(n)
        for n in re.findall(
            r"firewall\.match_shard\[[^\]]+\] succeeded in \S+: (\d+)", log.read_text()
        )
    ]


def test_two_matcher_processes_raise_exactly_the_alerts_one_raises_each_once(actor, tmp_path):
    total = 2400
    _backlog(actor, total, sessions=60)
    # The reference: one process, shard after shard, as one worker would.
    for shard in range(SHARDS):
        while matching.drain_shard(shard, batch=50):
            pass
    one = _alerts()
    assert len(one) > 50, "the backlog should complete many chains"
    assert _counted() == len(one)
    assert not Event.objects.filter(match_state=MatchState.PENDING).exists()

    # The same backlog again, pending, with nothing matched yet.
    Event.objects.filter(is_alert=True).delete()
    SequenceState.objects.all().delete()
    RuleMatchCount.objects.all().delete()
    Event.objects.update(match_state=MatchState.PENDING)
    assert not SequenceAlert.objects.exists()

    logs = [tmp_path / "worker-0.log", tmp_path / "worker-1.log"]
    env = {"STALWART_MATCH_BATCH": "10"}
    with running_worker(env=env, log=logs[0]), running_worker(env=env, log=logs[1]):
        for log in logs:
            _wait_ready(log)
        for shard in range(SHARDS):  # each shard's two drains side by side: both take it at once
            app.send_task("firewall.match_shard", args=[shard])
            app.send_task("firewall.match_shard", args=[shard])
        deadline = time.monotonic() + 180
        while Event.objects.filter(match_state=MatchState.PENDING).exists():
            assert time.monotonic() < deadline, "the two workers did not drain the backlog"
            time.sleep(0.2)
        while sum(len(_taken(log)) for log in logs) < 2 * SHARDS:
            failed = [log.name for log in logs if "raised unexpected" in log.read_text()]
            assert not failed, f"a drain failed: see {failed}"
            assert time.monotonic() < deadline, "not every drain ended"
            time.sleep(0.2)
    taken = [_taken(log) for log in logs]
    assert all(taken), f"both workers should have run drains: {taken}"
    if connection.vendor == "postgresql":
        # Two writers at once: each worker matched events of its own. SQLite has one writer at
        # a time, so there one worker may legitimately find every shard already drained.
        assert all(sum(t) > 0 for t in taken), f"both workers should have matched events: {taken}"
    # Every event taken once, by one of the two: none matched twice, none left.
    assert sum(map(sum, taken)) == total
    assert Event.objects.filter(is_alert=False, match_state=MatchState.MATCHED).count() == total
    assert _alerts() == one
    assert Event.objects.filter(is_alert=True).count() == len(one)
    assert _counted() == len(one)
