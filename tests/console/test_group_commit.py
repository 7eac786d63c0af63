"""Group commit of decision events (console/eventwriter.py), on PostgreSQL, as served: outside a
transaction, so the tests here commit (`transactional_db`) and the requests run in threads.

Rows a transaction inserted carry its id (`xmin`): events that share one were committed together.
A table lock taken from another connection holds the writer's INSERT, which is how the tests see
that nothing is answered before its event is committed.
"""

from __future__ import annotations

import json
import os
import threading
import time

import psycopg
import pytest
from django.db import connection
from django.test import Client, override_settings

from console import eventwriter
from console import services as console_services
from console.models import Event

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="group commit is PostgreSQL's (SQLite writes each decision's event itself)",
    ),
]
CHAIN = {
    "priority": 20,
    "name": "read then send",
    "tool_name_glob": "*",
    "verdict": "audit",
    "sequence": {
        "steps": [{"tool_glob": "files.read"}, {"tool_glob": "mail.send"}],
        "window_seconds": 60,
    },
}
DENY_RM = {
    "priority": 10,
    "name": "no rm -rf",
    "tool_name_glob": "shell.*",
    "args_match": [{"path": "$.command", "op": "regex", "value": "rm\\s+-rf"}],
    "verdict": "deny",
}


@pytest.fixture
def key(admin, organisation, actor_for):
    _, plain = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="runtime", role="editor"
    )
    client = Client(HTTP_AUTHORIZATION=f"Bearer {plain}")
    body = {"name": "production", "default_verdict": "allow", "rules": [DENY_RM, CHAIN]}
    created = client.post("/v1/firewall/policies", json.dumps(body), "application/json").json()
    client.post(f"/v1/firewall/policies/{created['id']}/publish", "{}", "application/json")
    return plain


def _url() -> str:
    settings = connection.settings_dict
    return (
        f"postgresql://{settings['USER']}:{settings['PASSWORD'] or ''}@{settings['HOST']}:"
        f"{settings['PORT'] or 5432}/{settings['NAME']}"
    )


class Caller(threading.Thread):
    """One request in a thread of its own: its answer, or the exception it raised."""

    def __init__(self, key: str, call: dict, url: str = "/v1/firewall/evaluate") -> None:
        super().__init__(daemon=True)
        self.key, self.call, self.url = key, call, url
        self.status: int | None = None
        self.answer: dict | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        from django.db import connection as own

        client = Client(HTTP_AUTHORIZATION=f"Bearer {self.key}")
        try:
            response = client.post(self.url, json.dumps(self.call), "application/json")
            self.status, self.answer = response.status_code, response.json()
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            self.error = exc
        finally:
            own.close()


def _held(calls: list[dict], key: str, url: str = "/v1/firewall/evaluate") -> list[Caller]:
    """The calls sent while the events table is locked: none answered meanwhile; then released.
    Returns the callers, finished."""
    with psycopg.connect(_url()) as lock:
        lock.execute("LOCK TABLE console_event IN EXCLUSIVE MODE")
        callers = [Caller(key, call, url) for call in calls]
        for caller in callers:
            caller.start()
        deadline = time.monotonic() + 30
        # The first batch waits on the lock; the rest queue behind it.
        while time.monotonic() < deadline:
            current = eventwriter._writer
            if current is not None and current.writing + len(current.queue) == len(calls):
                break
            time.sleep(0.02)
        time.sleep(0.2)
        assert not any(c.status or c.error for c in callers), "answered before its event was stored"
        lock.rollback()
    for caller in callers:
        caller.join(timeout=30)
    return callers


def test_concurrent_decisions_are_committed_together_and_answered_only_after(key):
    calls = [
        {"tool": "files.read", "arguments": {"path": f"/srv/{i}"}, "agent": "ops", "session": "s"}
        for i in range(8)
    ]
    callers = _held(calls, key)
    assert [c.status for c in callers] == [200] * 8, [c.error for c in callers]
    assert all(c.answer["verdict"] == "allow" for c in callers)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), count(DISTINCT xmin::text) FROM console_event")
        events, transactions = cursor.fetchone()
    # The batch under way waited on the lock; the calls queued behind it shared the next one.
    assert events == 8 and transactions <= 2
    stored = {e.detail["call"]["arguments"]["path"] for e in Event.objects.all()}
    assert stored == {f"/srv/{i}" for i in range(8)}
    assert set(Event.objects.values_list("match_state", flat=True)) == {"pending"}


def test_an_event_that_cannot_be_stored_fails_its_request_alone(key):
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF NEW.tool = 'files.poison' THEN RAISE EXCEPTION 'poison'; END IF; RETURN NEW; "
            "END $$"
        )
        cursor.execute(
            "CREATE TRIGGER refuse_poison BEFORE INSERT ON console_event "
            "FOR EACH ROW EXECUTE FUNCTION refuse_poison()"
        )
    try:
        calls = [
            {"tool": "files.read", "arguments": {"path": "/a"}, "agent": "ops"},
            {"tool": "files.read", "arguments": {"path": "/b"}, "agent": "ops"},
            {"tool": "files.poison", "arguments": {}, "agent": "ops"},
            {"tool": "files.read", "arguments": {"path": "/c"}, "agent": "ops"},
        ]
        callers = _held(calls, key)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER refuse_poison ON console_event")
            cursor.execute("DROP FUNCTION refuse_poison()")
    poisoned = callers[2]
    # No decision answered for the call whose event could not be stored: the request failed,
    # as a direct write's failure fails it (the API's answer to an internal error).
    assert poisoned.status == 500 and "verdict" not in poisoned.answer
    assert [c.status for i, c in enumerate(callers) if i != 2] == [200, 200, 200]
    assert sorted(Event.objects.values_list("tool", flat=True)) == ["files.read"] * 3


def test_a_grouped_event_is_the_event_a_direct_write_makes(key):
    call = {
        "tool": "shell.run",
        "arguments": {"command": "rm -rf /", "password": "hunter2"},
        "agent": "Ops",
        "session": "s-9",
    }
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    with override_settings(STALWART_EVENT_GROUP_COMMIT=False):
        direct = client.post("/v1/firewall/evaluate", json.dumps(call), "application/json")
    assert eventwriter._writer is None
    grouped = client.post("/v1/firewall/evaluate", json.dumps(call), "application/json")
    assert eventwriter._writer is not None
    assert direct.json() == grouped.json()
    first, second = Event.objects.order_by("id")
    skip = {"_state", "id", "at", "record_id"}  # each its own: the writer finds a write by it
    assert {k: v for k, v in vars(first).items() if k not in skip} == {
        k: v for k, v in vars(second).items() if k not in skip
    }
    assert second.detail["call"]["arguments"]["password"] != "hunter2"  # redacted, as before
    # the deny rule's matches were counted for both decisions
    from firewall.models import RuleMatchCount

    assert sum(RuleMatchCount.objects.values_list("count", flat=True)) == 2


def test_a_batch_written_again_on_a_new_connection_answers_at_once(key):
    """The server dropped the writer's connection (a restart, an idle timeout): the next batch
    fails its first statement, is written again on a new connection, and its requests are
    answered then, not at the end of the write timeout."""
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    call = {"tool": "files.read", "arguments": {"path": "/a"}, "agent": "ops", "session": "s"}
    assert (
        client.post("/v1/firewall/evaluate", json.dumps(call), "application/json").status_code
        == 200
    )
    with connection.cursor() as cursor:  # every other backend of this database: the writer's
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    time.sleep(0.2)
    with override_settings(STALWART_EVENT_WRITE_TIMEOUT=20):
        started = time.monotonic()
        again = client.post("/v1/firewall/evaluate", json.dumps(call), "application/json")
        took = time.monotonic() - started
    assert again.status_code == 200 and again.json()["verdict"] == "allow"
    assert took < 10, f"answered after {took:.1f} s: the request waited for the write timeout"
    assert Event.objects.filter(tool="files.read").count() == 2


def _answer_lost_once(monkeypatch, where: str) -> list[int]:
    """The writer's statement (`insert`) or transaction (`commit`) is stored, then the answer is
    lost on the way back, once (the server restarted, the network dropped): the writer sees the
    connection's error with its write already committed. Returns a counter of the lost answers."""
    from django.db import OperationalError
    from django.db.backends.base.base import BaseDatabaseWrapper

    lost = [0]

    def then_lost(real):  # noqa: ANN001, ANN202
        def lossy(*args):  # noqa: ANN002, ANN202
            done = real(*args)
            if threading.current_thread().name == "stalwart-event-writer" and not lost[0]:
                lost[0] += 1
                raise OperationalError("server closed the connection unexpectedly")
            return done

        return lossy

    if where == "insert":
        monkeypatch.setattr(
            console_services, "events_insert", then_lost(console_services.events_insert)
        )
    else:
        monkeypatch.setattr(BaseDatabaseWrapper, "_commit", then_lost(BaseDatabaseWrapper._commit))
    return lost


@pytest.mark.parametrize(
    ("where", "call"),
    [
        # an allowed call: its event alone, one statement in autocommit
        ("insert", {"tool": "files.read", "arguments": {"path": "/a"}, "agent": "ops"}),
        # a denied call: its event and its rule's match count, one transaction
        ("commit", {"tool": "shell.run", "arguments": {"command": "rm -rf /"}, "agent": "ops"}),
    ],
)
def test_a_write_committed_whose_answer_was_lost_is_not_written_twice(
    key, monkeypatch, where, call
):
    """The writer writes a batch again on a new connection when the first try fails with the
    connection's error. Where the first try had committed, the events are not written twice
    (the sequence matchers would count the call twice), nor the rule's matches counted twice."""
    from firewall.models import RuleMatchCount

    lost = _answer_lost_once(monkeypatch, where)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    answer = client.post("/v1/firewall/evaluate", json.dumps(call), "application/json")
    assert lost == [1], "the answer was never lost: the test proves nothing"
    assert answer.status_code == 200, answer.content
    (event,) = Event.objects.filter(tool=call["tool"])
    assert answer.json()["verdict"] == event.verdict
    counted = sum(RuleMatchCount.objects.values_list("count", flat=True))
    assert counted == (1 if answer.json()["verdict"] == "deny" else 0)
    # the writer goes on: the next decision is stored once too
    again = client.post("/v1/firewall/evaluate", json.dumps(call), "application/json")
    assert again.status_code == 200
    assert Event.objects.filter(tool=call["tool"]).count() == 2


# Tool checks: decided on one read without locking their session, the event grouped likewise;
# a call to put to a person is decided again with the session locked.
REFUSED = {
    "tool": "refund_card",
    "arguments": {"order_id": "4411", "amount": 40.0},
    "origins": {"order_id": "typed", "amount": "typed"},
    "context": {"order_paid": False},
}
TO_CONFIRM = {
    **REFUSED,
    "origins": {"order_id": "typed", "amount": "model"},
    "context": {"order_paid": True},
}


@pytest.fixture
def session(key):
    from stalwart_agents import Agent

    desk = Agent.from_file("examples/shop/agent.yaml")
    body = {"agent": "billing", "catalogue": desk.catalogue(), "rulebook": desk.rules().record}
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    answer = client.post("/v1/sessions", json.dumps(body), "application/json")
    assert answer.status_code == 201, answer.content
    return answer.json()["id"]


def test_concurrent_checks_are_committed_together_and_answered_only_after(key, session):
    callers = _held(
        [{**REFUSED, "run": {"run_id": f"r{i}"}} for i in range(6)],
        key,
        f"/v1/sessions/{session}/check",
    )
    assert [c.status for c in callers] == [200] * 6, [c.error for c in callers]
    assert all(c.answer["decision"] == "refuse" for c in callers)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(DISTINCT xmin::text) FROM console_event WHERE source = 'toolcheck'"
        )
        events, transactions = cursor.fetchone()
    assert events == 6 and transactions <= 2
    assert {e.run_id for e in Event.objects.filter(source="toolcheck")} == {
        f"r{i}" for i in range(6)
    }


def _row_locked(session_id: str):  # noqa: ANN202
    """Another connection holding the session's row as a concurrent record would (FOR UPDATE)."""
    other = psycopg.connect(_url())
    other.execute("SELECT id FROM guard_guardsession WHERE public_id = %s FOR UPDATE", [session_id])
    return other


def test_a_check_is_answered_while_its_session_is_locked_and_a_confirm_waits_for_it(key, session):
    from guard.models import ApprovalRequest

    other = _row_locked(session)
    try:
        refused = Caller(key, REFUSED, f"/v1/sessions/{session}/check")
        asked = [Caller(key, TO_CONFIRM, f"/v1/sessions/{session}/check") for _ in range(2)]
        refused.start()
        refused.join(timeout=30)
        assert refused.status == 200 and refused.answer["decision"] == "refuse"
        for caller in asked:
            caller.start()
        time.sleep(0.5)
        # Filing an approval request takes the session's lock: one request for the same call
        # asked twice at once, so neither is answered while another transaction holds it.
        assert not any(c.status or c.error for c in asked)
        assert not ApprovalRequest.objects.exists()
    finally:
        other.rollback()
        other.close()
    for caller in asked:
        caller.join(timeout=30)
    assert [c.status for c in asked] == [200, 200], [c.error for c in asked]
    assert {c.answer["decision"] for c in asked} == {"confirm"}
    assert asked[0].answer["approval"] == asked[1].answer["approval"]
    assert ApprovalRequest.objects.count() == 1
    assert list(
        Event.objects.filter(source="toolcheck").order_by("id").values_list("decision", flat=True)
    ) == ["refuse", "confirm", "confirm"]


def test_a_grouped_check_event_is_the_event_a_direct_write_makes(key, session):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    call = {
        **REFUSED,
        "arguments": {**REFUSED["arguments"], "note": "api_key=sk-live-0123456789abcdef0123"},
    }
    url = f"/v1/sessions/{session}/check"
    with override_settings(STALWART_EVENT_GROUP_COMMIT=False):
        direct = client.post(url, json.dumps(call), "application/json")
    assert eventwriter._writer is None
    grouped = client.post(url, json.dumps(call), "application/json")
    assert eventwriter._writer is not None
    assert direct.status_code == grouped.status_code == 200
    assert direct.json() == grouped.json()
    first, second = Event.objects.filter(source="toolcheck").order_by("id")
    skip = {"_state", "id", "at", "record_id"}  # each its own: the writer finds a write by it
    assert {k: v for k, v in vars(first).items() if k not in skip} == {
        k: v for k, v in vars(second).items() if k not in skip
    }
    assert "sk-live-0123456789abcdef0123" not in json.dumps(second.detail)
