"""What a process keeps of an organisation's active policy and controls (firewall/active.py): kept
while nothing changed, never past a change announced here or by another process, nor past the
re-check, nor across a lost subscription, nor inside a caller's transaction."""

from __future__ import annotations

import os
import select
import signal
import time

import pytest
import redis
from django.conf import settings
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from console import bundle_changes
from console.access import Actor
from console.models import SessionHold, ToolSwitch
from firewall import active, services

pytestmark = pytest.mark.django_db(transaction=True)

TABLES = ("firewall_policy", "console_sessionhold", "console_toolswitch")


@pytest.fixture
def actor(editor, organisation):
    actor = Actor(organisation=organisation, role="editor", label="user:eve", user_id=editor.pk)
    policy = services.policy_create(actor=actor, name="production")
    services.policy_publish(actor=actor, policy=policy)
    deadline = time.monotonic() + 10
    while bundle_changes.mark(organisation.pk) is None:  # the listener subscribing
        assert time.monotonic() < deadline, "the change listener never subscribed"
        time.sleep(0.02)
    return actor


def _call(actor, tool="crm.update", session="s1", agent="desk"):
    return services.firewall_evaluate(
        actor=actor, call={"tool": tool, "agent": agent, "session": session}
    )


def _reads(queries) -> list[str]:
    return [q["sql"] for q in queries if any(table in q["sql"] for table in TABLES)]


def _unannounced_hold(actor, session="s1"):
    # `bulk_create` sends no signal: a row written as another process's would arrive here
    SessionHold.objects.bulk_create(
        [SessionHold(organisation=actor.organisation, agent="desk", session=session, reason="r")]
    )


def _announce_as_another_process(organisation_id):
    client = redis.Redis.from_url(settings.REDIS_URL)
    client.publish(bundle_changes.channel(client), str(organisation_id))


def test_a_kept_policy_decides_without_reading_it_and_a_miss_reads_twice(actor):
    assert _call(actor)["decision"] == "allow"  # the published version compiled
    active.forget()
    with CaptureQueriesContext(connection) as first:
        assert _call(actor)["decision"] == "allow"
    assert len(_reads(first.captured_queries)) == 2  # the policy, then the controls
    with CaptureQueriesContext(connection) as kept:
        answer = _call(actor)
    assert answer["decision"] == "allow" and answer["policy"] == "production"
    assert _reads(kept.captured_queries) == []


def test_a_hold_raised_in_this_process_holds_the_very_next_write(actor):
    assert _call(actor)["decision"] == "allow"
    hold = SessionHold.objects.create(
        organisation=actor.organisation, agent="desk", session="s1", reason="alert"
    )
    held = _call(actor)
    assert (held["decision"], held["reasons"][-1]) == ("confirm", "session_held")
    assert _call(actor, session="s2")["decision"] == "allow"
    hold.released_at, hold.released_by = hold.created_at, "user:eve"
    hold.save()
    assert _call(actor)["decision"] == "allow"


def test_a_switch_is_kept_in_the_names_normal_form(actor):
    assert _call(actor, tool="http.post")["decision"] == "allow"
    ToolSwitch.objects.create(
        organisation=actor.organisation, agent="desk", tool="http.post", reason="alert"
    )
    refused = _call(actor, tool="HTTP.post", agent="Desk", session="")
    assert (refused["decision"], refused["reasons"]) == ("refuse", ["tool_disabled"])
    assert _call(actor, tool="http.post", agent="other")["decision"] == "allow"


def test_a_hold_another_process_announces_holds_the_next_write_within_a_moment(actor, settings):
    settings.STALWART_BUNDLE_RECHECK = 60  # only the announcement can make it seen
    assert _call(actor)["decision"] == "allow"
    _unannounced_hold(actor)
    assert _call(actor)["decision"] == "allow"  # kept: the write was not announced yet
    _announce_as_another_process(actor.organisation.pk)
    deadline = time.monotonic() + 2
    while _call(actor)["decision"] == "allow":
        assert time.monotonic() < deadline, "the announced hold was not seen within 2 s"
        time.sleep(0.01)


def test_a_write_nobody_announced_is_seen_once_the_kept_rows_are_older_than_the_recheck(
    actor, settings
):
    settings.STALWART_BUNDLE_RECHECK = 0.3
    assert _call(actor)["decision"] == "allow"
    _unannounced_hold(actor)
    time.sleep(0.35)
    assert _call(actor)["decision"] == "confirm"


def test_what_was_kept_before_a_lost_subscription_is_read_again_after_it(actor, settings):
    settings.STALWART_BUNDLE_RECHECK = 60
    assert _call(actor)["decision"] == "allow"
    _unannounced_hold(actor)  # written while this process might not be listening
    client = redis.Redis.from_url(settings.REDIS_URL)
    name = f"stalwart-changes-{os.getpid()}"

    def listeners():
        return {c["id"] for c in client.client_list() if c.get("name") == name}

    killed = listeners()
    assert killed
    for client_id in killed:
        client.client_kill_filter(_id=client_id)
    deadline = time.monotonic() + 10
    while not (listeners() - killed and bundle_changes.listening()):
        assert time.monotonic() < deadline, "the listener did not subscribe again"
        time.sleep(0.02)
    assert _call(actor)["decision"] == "confirm"


def test_a_call_inside_its_callers_transaction_reads_the_callers_own_writes(actor):
    assert _call(actor)["decision"] == "allow"
    with transaction.atomic():
        SessionHold.objects.create(
            organisation=actor.organisation, agent="desk", session="s1", reason="alert"
        )
        assert _call(actor)["decision"] == "confirm"
        transaction.set_rollback(True)
    assert _call(actor)["decision"] == "allow"


def test_an_organisation_with_more_controls_than_kept_reads_them_per_call(actor, monkeypatch):
    monkeypatch.setattr(active, "MAX_CONTROLS", 2)
    for tool in ("a.x", "b.x", "c.x"):
        ToolSwitch.objects.create(
            organisation=actor.organisation, agent="desk", tool=tool, reason="alert"
        )
    active.forget()
    assert _call(actor, tool="c.x")["reasons"] == ["tool_disabled"]
    kept = active.active(actor.organisation.pk)
    assert kept is not None and kept.controls is None
    assert _call(actor, tool="d.x")["decision"] == "allow"


def test_a_policy_renamed_or_deactivated_is_seen_at_once(actor):
    policy = services.active_policy(organisation=actor.organisation)
    assert _call(actor)["policy"] == "production"
    services.policy_update(actor=actor, policy=policy, data={"name": "prod-2"})
    assert _call(actor)["policy"] == "prod-2"
    services.policy_update(actor=actor, policy=policy, data={"active": False})
    assert _call(actor)["reasons"] == ["no_active_policy"]
    with CaptureQueriesContext(connection) as kept:  # that there is none is kept too
        assert _call(actor)["reasons"] == ["no_active_policy"]
    assert _reads(kept.captured_queries) == []


def test_a_forked_process_keeps_nothing_until_its_own_listener_subscribes(actor):
    parent = bundle_changes.mark(actor.organisation.pk)
    assert parent is not None
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: its parent's listener thread did not come with it
        try:
            os.write(write, repr(bundle_changes.mark(actor.organisation.pk)).encode())
        finally:
            os._exit(0)
    os.close(write)
    answered, _, _ = select.select([read], [], [], 10)
    said = os.read(read, 200).decode() if answered else "no answer"
    if not answered:
        os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    os.close(read)
    assert said == "None"
