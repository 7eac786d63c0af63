"""The steady path's hand-written statements (console/statements.py): a row read by hand is the
instance the ORM builds, and a read stands for Django's health check on a kept connection, which
the server may have dropped since."""

from __future__ import annotations

import json
import os
import time

import psycopg
import pytest
from django.db import close_old_connections, connection, connections
from django.test import Client

from console import services as console_services
from console.statements import ModelRows, fetch_one
from firewall.active import forget
from firewall.models import Policy


def _fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


@pytest.mark.django_db
def test_a_row_read_by_hand_is_the_instance_the_orm_builds(organisation, actor_for, admin):
    from firewall import services

    actor = actor_for(admin, organisation)
    policy = services.policy_create(actor=actor, name="p")
    services.policy_publish(actor=actor, policy=policy)
    names = tuple(f.name for f in Policy._meta.concrete_fields)
    rows = ModelRows(Policy, names)
    row = fetch_one(f"SELECT {rows.columns(connection, 'p')} FROM firewall_policy p", [])
    made = rows.instance(row, connection)
    assert _fields(made) == _fields(Policy.objects.get(pk=policy.pk))
    assert made.get_deferred_fields() == set()
    # converted: on SQLite a UUID and a time are text in the row
    assert type(made.draft_key) is type(Policy.objects.get().draft_key)
    assert made.created_at.tzinfo is not None


@pytest.mark.django_db
def test_fields_not_named_are_deferred(organisation):
    Policy.objects.create(organisation=organisation, name="p")
    rows = ModelRows(Policy, ("id", "name"))
    made = rows.instance(
        fetch_one(f"SELECT {rows.columns(connection, 'p')} FROM firewall_policy p", []), connection
    )
    assert made.name == "p"
    assert made.get_deferred_fields() == {f.attname for f in Policy._meta.concrete_fields} - {
        "id",
        "name",
    }


POSTGRES = pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="a kept connection the server drops is PostgreSQL's (SQLite has no server)",
)


@pytest.fixture
def evaluate(admin, organisation, actor_for):
    _, plain = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="runtime", role="editor"
    )
    client = Client(HTTP_AUTHORIZATION=f"Bearer {plain}")
    body = {"name": "production", "default_verdict": "allow", "rules": []}
    created = client.post("/v1/firewall/policies", json.dumps(body), "application/json").json()
    client.post(f"/v1/firewall/policies/{created['id']}/publish", "{}", "application/json")
    call = {"tool": "files.read", "arguments": {"path": "/a"}, "agent": "ops"}

    def post():
        # As served: a request starts by closing an obsolete connection and asking for a health
        # check of a kept one (the test client leaves `close_old_connections` out).
        close_old_connections()
        # What the process kept of the policy is dropped, so that the decision reads its rows (as
        # the first after a change does): a kept one touches no connection of this thread.
        forget()
        return client.post("/v1/firewall/evaluate", json.dumps(call), "application/json")

    return post


def _terminate(pid: int) -> None:
    """The server drops the backend `pid` (another connection ends it), as a restart would."""
    settings = connection.settings_dict
    url = (
        f"postgresql://{settings['USER']}:{settings['PASSWORD'] or ''}@{settings['HOST']}:"
        f"{settings['PORT'] or 5432}/{settings['NAME']}"
    )
    with psycopg.connect(url, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    time.sleep(0.2)


@POSTGRES
@pytest.mark.django_db(transaction=True)
def test_a_decision_on_a_kept_connection_sends_no_health_check(evaluate, monkeypatch):
    assert evaluate().status_code == 200
    assert connection.connection is not None  # kept across requests
    checks = []
    backend = type(connections["default"])
    real = backend.is_usable
    monkeypatch.setattr(backend, "is_usable", lambda self: checks.append(1) or real(self))
    assert evaluate().status_code == 200
    assert checks == []


@POSTGRES
@pytest.mark.django_db(transaction=True)
def test_a_kept_connection_the_server_dropped_is_replaced_and_the_decision_answered(evaluate):
    assert evaluate().status_code == 200
    dropped = connection.connection.info.backend_pid
    _terminate(dropped)
    again = evaluate()
    assert again.status_code == 200 and again.json()["verdict"] == "allow"
    assert connection.connection.info.backend_pid != dropped


@POSTGRES
@pytest.mark.django_db(transaction=True)
def test_the_decision_statements_are_prepared_once_per_connection(evaluate):
    for _ in range(8):
        assert evaluate().status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements")
        prepared = dict(cursor.fetchall())
    ours = ("firewall_policy", "console_toolswitch", "console_event")
    reads = [runs for text, runs in prepared.items() if any(table in text for table in ours[:2])]
    # both reads prepared the fifth time, then run from the prepared statement: neither parsed
    # nor planned
    assert len(reads) == 2 and min(reads) >= 3, prepared
    # Django's own queries still bind on the client and are never prepared
    assert all(any(table in text for table in ours) for text in prepared), prepared


@POSTGRES
@pytest.mark.django_db(transaction=True)
def test_a_check_on_a_kept_connection_the_server_dropped_is_decided_on_a_new_one(
    admin, organisation, actor_for
):
    from stalwart_agents import Agent

    _, plain = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="runtime", role="editor"
    )
    client = Client(HTTP_AUTHORIZATION=f"Bearer {plain}")
    desk = Agent.from_file("examples/shop/agent.yaml")
    body = {"agent": "billing", "catalogue": desk.catalogue(), "rulebook": desk.rules().record}
    session = client.post("/v1/sessions", json.dumps(body), "application/json").json()["id"]
    call = {"tool": "get_order", "arguments": {"order_id": "1"}}

    def check():
        close_old_connections()  # as served (see `evaluate`)
        return client.post(f"/v1/sessions/{session}/check", json.dumps(call), "application/json")

    assert check().status_code == 200
    dropped = connection.connection.info.backend_pid
    _terminate(dropped)
    again = check()
    assert again.status_code == 200, again.content
    assert connection.connection.info.backend_pid != dropped
    from console.models import Event

    assert Event.objects.filter(source="toolcheck").count() == 2


@POSTGRES
@pytest.mark.django_db(transaction=True)
def test_work_is_run_again_only_when_its_first_statement_met_a_dropped_connection():
    from django.db import OperationalError

    from console.statements import unchecked

    def select_one():
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone()[0]

    # dropped before the first statement: run again on a new connection
    connection.ensure_connection()
    close_old_connections()
    _terminate(connection.connection.info.backend_pid)
    runs = []
    assert unchecked(lambda: runs.append(1) or select_one()) == 1
    assert len(runs) == 2

    # dropped after a statement was answered: the failure is the work's own, never run again
    connection.ensure_connection()
    close_old_connections()
    runs.clear()

    def answered_then_dropped():
        runs.append(1)
        select_one()
        _terminate(connection.connection.info.backend_pid)
        return select_one()

    with pytest.raises(OperationalError):
        unchecked(answered_then_dropped)
    assert len(runs) == 1
    connection.close()  # the dropped one: the next request (the teardown's) connects again
