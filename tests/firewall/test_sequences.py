"""Sequence rules matched from the events table: one alert per chain, nothing lost, nothing twice."""

from __future__ import annotations

import pytest

from console.access import Actor
from console.models import SHARDS, Event, MatchState
from firewall import matching, services
from firewall.models import SequenceAlert, SequenceState

pytestmark = pytest.mark.django_db

EXFIL = {
    "name": "exfil chain",
    "priority": 50,
    "verdict": "audit",
    "sequence": {
        "steps": [
            {"tool_glob": "crm.read", "min_count": 3},
            {"tool_glob": "*.export"},
            {"tool_glob": "*", "egress": True},
        ],
        "window_seconds": 600,
    },
}


@pytest.fixture
def actor(editor, organisation):
    return Actor(
        organisation=organisation, role="editor", label="user:eve-editor", user_id=editor.pk
    )


@pytest.fixture
def policy(actor):
    policy = services.policy_create(actor=actor, name="production")
    services.rule_create(actor=actor, policy=policy, data=EXFIL)
    services.policy_publish(actor=actor, policy=policy)
    return policy


def _call(actor, tool, session="s1", **extra):
    return services.firewall_evaluate(
        actor=actor, call={"tool": tool, "agent": "desk", "session": session, **extra}
    )


def _chain(actor, session="s1"):
    for _ in range(3):
        _call(actor, "crm.read", session)
    _call(actor, "notes.save", session)
    _call(actor, "crm.export", session)
    _call(actor, "http.post", session, stage="egress", destination="https://example.org/x")


def drain_all() -> int:
    return sum(matching.drain_shard(shard) for shard in range(SHARDS) for _ in range(3))


def test_plain_allows_are_recorded_when_the_policy_has_sequence_rules(actor, policy):
    _call(actor, "crm.read")
    event = Event.objects.get()
    assert (event.decision, event.match_state) == ("allow", MatchState.PENDING)


def test_a_completed_chain_raises_one_alert_with_its_steps(actor, policy):
    _chain(actor)
    assert drain_all() == 6
    alert = Event.objects.get(is_alert=True)
    assert (alert.rule, alert.source, alert.verdict, alert.session) == (
        "exfil chain",
        "sequence",
        "audit",
        "s1",
    )
    chain = alert.detail["chain"]
    assert [len(step) for step in chain] == [3, 1, 1]
    assert [step[0]["tool"] for step in chain] == ["crm.read", "crm.export", "http.post"]
    assert Event.objects.filter(match_state=MatchState.PENDING).count() == 0
    assert drain_all() == 0
    assert SequenceAlert.objects.count() == 1


def test_sessions_do_not_mix(actor, policy):
    for session in ("a", "b"):
        _call(actor, "crm.read", session)
        _call(actor, "crm.read", session)
    _call(actor, "crm.export", "a")
    _call(actor, "http.post", "a", stage="egress", destination="https://example.org")
    drain_all()
    assert not Event.objects.filter(is_alert=True).exists()


def test_state_is_kept_between_batches(actor, policy):
    _call(actor, "crm.read")
    _call(actor, "crm.read")
    drain_all()
    assert SequenceState.objects.count() == 1
    _call(actor, "crm.read")
    _call(actor, "crm.export")
    drain_all()
    _call(actor, "http.post", stage="egress", destination="https://example.org")
    drain_all()
    assert Event.objects.filter(is_alert=True).count() == 1


def test_a_batch_that_fails_leaves_its_events_pending_and_raises_no_alert_twice(
    actor, policy, monkeypatch
):
    _chain(actor)
    real = matching._raise_alerts

    def crash(*args, **kwargs):
        real(*args, **kwargs)
        raise RuntimeError("the worker died in the middle of the batch")

    monkeypatch.setattr(matching, "_raise_alerts", crash)
    with pytest.raises(RuntimeError):
        drain_all()
    assert Event.objects.filter(match_state=MatchState.PENDING).count() == 6
    assert not Event.objects.filter(is_alert=True).exists()
    monkeypatch.setattr(matching, "_raise_alerts", real)
    drain_all()
    drain_all()
    assert Event.objects.filter(is_alert=True).count() == 1


def test_an_unreadable_event_is_kept_and_marked(actor, policy, organisation):
    from console.services import event_record

    event = event_record(
        organisation=organisation,
        source="toolcheck",
        decision="allow",
        agent="desk",
        session="s1",
        tool="",
    )
    drain_all()
    event.refresh_from_db()
    assert event.match_state == MatchState.UNREADABLE
    assert "names no tool" in event.match_note


def test_a_disabled_sequence_rule_matches_nothing(actor, policy):
    rule = policy.rules.get()
    services.rule_update(actor=actor, rule=rule, data={**EXFIL, "enabled": False})
    services.policy_publish(actor=actor, policy=policy)
    _chain(actor)
    drain_all()
    assert not Event.objects.filter(is_alert=True).exists()


def test_a_raised_alert_counts_as_its_sequence_rules_match(actor, policy):
    from firewall import selectors

    rule = policy.rules.get(name="exfil chain")
    _chain(actor, "s1")
    _chain(actor, "s2")
    drain_all()
    drain_all()  # a batch run again raises and counts nothing twice
    assert SequenceAlert.objects.count() == 2
    counts = selectors.match_counts(policy=policy)[rule.pk]
    assert (counts["enforce_hour"], counts["enforce_day"]) == (2, 2)
