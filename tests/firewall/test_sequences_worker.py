"""Sequence matching on a real `celery worker` process and the real Redis: the outbox under faults."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

import pytest

from console.access import Actor
from console.models import Event, MatchState
from firewall import services
from tests.firewall.test_sequences import EXFIL
from tests.worker import flush_broker, running_worker, use_broker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def actor(editor, organisation):
    flush_broker()
    actor = Actor(
        organisation=organisation, role="editor", label="user:eve-editor", user_id=editor.pk
    )
    policy = services.policy_create(actor=actor, name="production")
    services.rule_create(actor=actor, policy=policy, data=EXFIL)
    services.policy_publish(actor=actor, policy=policy)
    yield actor
    flush_broker()


def _chain(actor, session: str, filler: int = 0) -> None:
    def call(tool, **extra):
        services.firewall_evaluate(
            actor=actor, call={"tool": tool, "agent": "desk", "session": session, **extra}
        )

    for _ in range(3):
        call("crm.read")
    for i in range(filler):
        call(f"notes.n{i % 7}")
    call("crm.export")
    call("http.post", stage="egress", destination="https://example.org/x")


def _wait_until_matched(expected_events: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = Event.objects.filter(match_state=MatchState.PENDING).count()
        done = Event.objects.filter(match_state=MatchState.MATCHED).count()
        if pending == 0 and done >= expected_events:
            return
        time.sleep(0.2)
    raise AssertionError(f"still {pending} pending, {done} matched after {timeout} s")


def test_a_chain_across_many_calls_raises_one_alert_on_a_real_worker(actor):
    with running_worker(beat=True):
        _chain(actor, "s1", filler=50)
        _wait_until_matched(55)
    alerts = Event.objects.filter(is_alert=True)
    assert alerts.count() == 1
    assert [len(step) for step in alerts.get().detail["chain"]] == [3, 1, 1]


def test_events_pile_up_without_a_worker_and_are_all_matched_when_one_starts(actor):
    for i in range(20):
        _chain(actor, f"s{i}")
    assert Event.objects.filter(match_state=MatchState.PENDING).count() == 100
    time.sleep(1)
    assert Event.objects.filter(match_state=MatchState.PENDING).count() == 100
    with running_worker(beat=True):
        _wait_until_matched(100)
    assert Event.objects.filter(is_alert=True).count() == 20


def test_a_worker_killed_mid_batch_loses_nothing_and_duplicates_nothing(actor):
    sessions = 150
    for i in range(sessions):
        _chain(actor, f"k{i}", filler=5)
    total = sessions * 10
    env = {"STALWART_MATCH_BATCH": "20"}
    with running_worker(env=env) as worker:
        deadline = time.monotonic() + 60
        while Event.objects.filter(match_state=MatchState.MATCHED).count() < 100:
            assert time.monotonic() < deadline, "the worker matched nothing"
            time.sleep(0.05)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    left = Event.objects.filter(match_state=MatchState.PENDING).count()
    assert 0 < left < total, "the kill should land while events were still pending"
    with running_worker(beat=True, env=env):
        _wait_until_matched(total)
    assert Event.objects.filter(is_alert=True).count() == sessions
    assert Event.objects.filter(is_alert=True).values("session").distinct().count() == sessions


def test_the_broker_stopped_and_restarted_loses_nothing(actor, settings, tmp_path):
    # A port the OS hands out, never a fixed one: other suites share this machine.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = [
        "redis-server",
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(tmp_path),
    ]
    redis_proc = subprocess.Popen(server, stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    original = None
    try:
        time.sleep(0.5)
        settings.REDIS_URL = url
        original = use_broker(url)
        with running_worker(beat=True, env={"REDIS_URL": url}):
            _chain(actor, "before")
            _wait_until_matched(5)
            redis_proc.terminate()
            redis_proc.wait()
            for i in range(5):  # written while the broker is down: no task can be sent
                _chain(actor, f"during{i}")
            assert Event.objects.filter(match_state=MatchState.PENDING).count() == 25
            redis_proc = subprocess.Popen(server, stdout=subprocess.DEVNULL)
            _wait_until_matched(30, timeout=90)
        assert Event.objects.filter(is_alert=True).count() == 6
    finally:
        if original:
            use_broker(original)
        redis_proc.terminate()
        redis_proc.wait()
