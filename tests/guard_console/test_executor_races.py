"""The executor's API under concurrent requests, on PostgreSQL, as served: outside a transaction,
so the tests here commit (`transactional_db`) and each request runs in a thread of its own.

Each race test forces its interleaving: another connection holds a row's lock (the session's, a
ledger row's, an approval's) while the requests are sent, one after the other, and lets it go only
once every request waits for it (`pg_stat_activity`), so the requests have all read what they read
before the lock, and then take it in the order they were sent. The last test runs an in-process
executor while the reconciler runs in another thread.
"""

from __future__ import annotations

import json
import os
import threading
import time

import psycopg
import pytest
from django.db import connection
from django.test import Client

from console import services as console_services
from guard.models import ApprovalRequest, Effect, GuardSession
from rulebooks.compiler import compile_rule_sheet

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="the requests race on PostgreSQL's row locks",
    ),
]

CATALOGUE = {
    "agents": {"till": {"tools": ["pay", "give", "stamp", "unpay", "look", "charge"]}},
    "tools": [
        {
            "name": "pay",
            "description": "Pays an amount to an account, once a session.",
            "kind": "write",
            "idempotent": True,
            "at_most": 1,
            "compensation": {
                "tool": "unpay",
                "bind": {"account": "arguments.account", "amount": "arguments.amount"},
            },
            "parameters": {
                "type": "object",
                "properties": {"account": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["account", "amount"],
                "additionalProperties": False,
            },
        },
        {
            "name": "give",
            "description": "Gives an amount to an account, 100 at most over the run.",
            "kind": "write",
            "idempotent": True,
            "checks": [{"spend": {"argument": "amount", "at_most": 100, "per": "run"}}],
            "parameters": {
                "type": "object",
                "properties": {"account": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["account", "amount"],
                "additionalProperties": False,
            },
        },
        {
            "name": "unpay",
            "description": "Gives a payment back.",
            "kind": "write",
            "idempotent": True,
            "parameters": {
                "type": "object",
                "properties": {"account": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["account", "amount"],
                "additionalProperties": False,
            },
        },
        {
            "name": "look",
            "description": "Reads an account.",
            "kind": "read",
            "parameters": {"type": "object", "properties": {"account": {"type": "string"}}},
        },
        {
            "name": "charge",
            "description": "Calls a paid service: 60 cents a call, 100 at most over the run.",
            "kind": "write",
            "idempotent": True,
            "cost": 60,
            "checks": [{"cap_cost": 100}],
            "parameters": {"type": "object", "properties": {"account": {"type": "string"}}},
        },
        {
            "name": "stamp",
            "description": "Stamps an account; not retry-safe.",
            "kind": "write",
            "parameters": {"type": "object", "properties": {"account": {"type": "string"}}},
        },
    ],
}
#: A rule sheet that lets a small payment run without a person.
RULEBOOK = compile_rule_sheet(
    b"tool,condition,decision,reason\n"
    b"pay,amount < 100,allow,small\n"
    b"give,amount < 100,allow,small\n"
    b"charge,,allow,paid\n",
    filename="rules.csv",
)
#: The person typed the values (a value the model chose would be put to a person first).
TYPED = {"account": "typed", "amount": "typed"}


@pytest.fixture
def key(admin, organisation, actor_for):
    _, plain = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="runtime", role="editor"
    )
    return plain


def _post(key, url: str, body: dict):  # noqa: ANN001, ANN202
    """POST as `key`: an API key, or a client (a person signed in)."""
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}") if isinstance(key, str) else key
    return client.post(url, json.dumps(body), "application/json")


def _session(key: str) -> str:
    answer = _post(
        key, "/v1/sessions", {"agent": "till", "catalogue": CATALOGUE, "rulebook": RULEBOOK}
    )
    assert answer.status_code == 201, answer.content
    return answer.json()["id"]


def _url() -> str:
    settings = connection.settings_dict
    return (
        f"postgresql://{settings['USER']}:{settings['PASSWORD'] or ''}@{settings['HOST']}:"
        f"{settings['PORT'] or 5432}/{settings['NAME']}"
    )


class Caller(threading.Thread):
    """One request in a thread of its own: its status and answer, or the exception it raised."""

    def __init__(self, key, url: str, body: dict) -> None:  # noqa: ANN001
        super().__init__(daemon=True)
        self.key, self.url, self.body = key, url, body
        self.status: int | None = None
        self.answer: dict | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        from django.db import connection as own

        try:
            response = _post(self.key, self.url, self.body)
            self.status, self.answer = response.status_code, response.json()
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            self.error = exc
        finally:
            own.close()


def _waiting(lock: psycopg.Connection) -> int:
    """How many connections wait for a lock (the statistics read afresh, not the transaction's)."""
    lock.execute("SELECT pg_stat_clear_snapshot()")
    return lock.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
        "AND datname = current_database()"
    ).fetchone()[0]


def _while_locked(key, row, requests: list[tuple]) -> list[Caller]:  # noqa: ANN001
    """Send the requests (url, body, and who sends it where not `key`), one after the other,
    while another connection holds `row`'s lock: each is sent once the one before it waits for
    the lock (so they take it in that order), and the lock is let go once all of them wait.
    Returns the callers, finished."""
    with psycopg.connect(_url()) as lock:
        lock.execute(f"SELECT 1 FROM {row._meta.db_table} WHERE id = %s FOR UPDATE", [row.pk])
        callers = []
        for url, body, *who in requests:
            callers.append(Caller(who[0] if who else key, url, body))
            callers[-1].start()
            deadline = time.monotonic() + 30
            while _waiting(lock) < len(callers) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert _waiting(lock) == len(callers), "the request did not reach the lock"
        assert not any(c.status or c.error for c in callers)
        lock.rollback()
    for caller in callers:
        caller.join(timeout=30)
        assert caller.error is None, caller.error
    return callers


def _session_row(session: str) -> GuardSession:
    return GuardSession.objects.get(public_id=session)


def _entries(session: str) -> list[dict]:
    return GuardSession.objects.get(public_id=session).history["entries"]


def test_a_write_reported_twice_at_once_is_recorded_once(key):
    session = _session(key)
    call = {"tool": "pay", "arguments": {"account": "a-1", "amount": 40.0}, "origins": TYPED}
    begun = _post(key, f"/v1/sessions/{session}/execute", call).json()
    assert begun["outcome"] == "RUN", begun
    report = {**call, "key": begun["key"], "result": {"paid": 40.0}}
    url = f"/v1/sessions/{session}/effects"
    first, second = _while_locked(key, _session_row(session), [(url, report), (url, report)])
    assert (first.status, second.status) == (200, 200), (first.answer, second.answer)
    outcomes = sorted((c.answer["outcome"], c.answer["duplicate"]) for c in (first, second))
    assert outcomes == [("SUCCEEDED", False), ("SUCCEEDED", True)]
    # One effect, one entry of the signed history: the second report is the first one's replay.
    assert len(_entries(session)) == 1
    assert Effect.objects.get().status == "done"


def test_a_failure_reported_with_the_result_at_once_does_not_undo_the_done_write(key):
    session = _session(key)
    call = {"tool": "pay", "arguments": {"account": "a-1", "amount": 40.0}, "origins": TYPED}
    begun = _post(key, f"/v1/sessions/{session}/execute", call).json()
    assert begun["outcome"] == "RUN", begun
    url = f"/v1/sessions/{session}/effects"
    done = {**call, "key": begun["key"], "result": {"paid": 40.0}}
    failed = {**call, "key": begun["key"], "failed": "card declined"}
    # Both read the key as running; the result takes the effect's lock first and commits.
    first, second = _while_locked(key, Effect.objects.get(), [(url, done), (url, failed)])
    assert first.answer["outcome"] == "SUCCEEDED", first.answer
    # The write is done and in the history: the failure reported after it changes neither.
    assert second.answer["duplicate"] is True, second.answer
    assert Effect.objects.get().status == "done" and Effect.objects.get().replays == 0
    assert len(_entries(session)) == 1


def test_two_writes_begun_at_once_do_not_pass_an_at_most_of_one(key):
    session = _session(key)
    url = f"/v1/sessions/{session}/execute"
    calls = [
        (url, {"tool": "pay", "arguments": {"account": account, "amount": 40.0}, "origins": TYPED})
        for account in ("a-1", "a-2")
    ]
    callers = _while_locked(key, _session_row(session), calls)
    outcomes = sorted(c.answer["outcome"] for c in callers)
    # The first runs; the second is decided while the first runs, which counts as a call made.
    assert outcomes == ["REFUSED", "RUN"], [c.answer for c in callers]
    refused = next(c.answer for c in callers if c.answer["outcome"] == "REFUSED")
    assert refused["reasons"] == ["order_rule"]
    assert Effect.objects.count() == 1


def test_two_writes_begun_at_once_do_not_pass_a_spend_cap_over_the_run(key):
    session = _session(key)
    url = f"/v1/sessions/{session}/execute"
    calls = [
        (url, {"tool": "give", "arguments": {"account": account, "amount": 60}, "origins": TYPED})
        for account in ("a-1", "a-2")
    ]
    callers = _while_locked(key, _session_row(session), calls)
    outcomes = sorted(c.answer["outcome"] for c in callers)
    # 60 running and 60 more pass the cap of 100, as 60 spent and 60 more would.
    assert outcomes == ["REFUSED", "RUN"], [c.answer for c in callers]
    refused = next(c.answer for c in callers if c.answer["outcome"] == "REFUSED")
    assert refused["reasons"] == ["spend_exceeded"]
    assert Effect.objects.count() == 1


def test_two_writes_begun_at_once_do_not_pass_the_run_cost_cap(key):
    session = _session(key)
    url = f"/v1/sessions/{session}/execute"
    calls = [
        (url, {"tool": "charge", "arguments": {"account": account}, "origins": TYPED})
        for account in ("a-1", "a-2")
    ]
    callers = _while_locked(key, _session_row(session), calls)
    outcomes = sorted(c.answer["outcome"] for c in callers)
    # 60 running and 60 more pass the cap of 100, as 60 spent and 60 more would.
    assert outcomes == ["REFUSED", "RUN"], [c.answer for c in callers]
    refused = next(c.answer for c in callers if c.answer["outcome"] == "REFUSED")
    assert refused["reasons"] == ["cost_exceeded"]
    assert Effect.objects.count() == 1


def test_a_step_is_undone_once_while_its_undo_runs(key):
    session = _session(key)
    pay = {"tool": "pay", "arguments": {"account": "a-1", "amount": 40.0}, "origins": TYPED}
    begun = _post(key, f"/v1/sessions/{session}/execute", pay).json()
    assert begun["outcome"] == "RUN", begun
    report = {**pay, "key": begun["key"], "result": {"paid": 40.0}}
    assert _post(key, f"/v1/sessions/{session}/effects", report).json()["outcome"] == "SUCCEEDED"
    undo = {**pay, "tool": "unpay", "compensation_of": 0}
    first = _post(key, f"/v1/sessions/{session}/execute", undo).json()
    assert first["outcome"] == "RUN", first
    # While the undo runs, another call of the run is reported (the history moves on: the undo's
    # key, which counts the history, would differ), and the agent asks for the undo again.
    read = {"tool": "look", "arguments": {"account": "a-1"}, "result": {"balance": 0}}
    assert _post(key, f"/v1/sessions/{session}/record", read).status_code == 200
    second = _post(key, f"/v1/sessions/{session}/execute", undo).json()
    assert (second["outcome"], second["reasons"]) == ("REFUSED", ["compensation_spent"]), second
    assert Effect.objects.filter(tool="unpay").count() == 1


# -- what holds already, kept so ----------------------------------------------------------------


def _approved_stamp(key, session: str, approver_client) -> tuple[dict, str]:  # noqa: ANN001
    """A stamp put to a person and approved: the call and its token."""
    call = {"tool": "stamp", "arguments": {"account": "a-1"}, "origins": {"account": "typed"}}
    asked = _post(key, f"/v1/sessions/{session}/execute", call).json()
    assert asked["outcome"] == "CONFIRM", asked
    answer = _post(approver_client, f"/v1/approvals/{asked['approval']}/approve", {})
    assert answer.status_code == 200, answer.content
    token = Client(HTTP_AUTHORIZATION=f"Bearer {key}").get(f"/v1/approvals/{asked['approval']}")
    return call, token.json()["token"]


def test_one_token_sent_by_two_executes_at_once_begins_one_write(key, approver, client_for):
    session = _session(key)
    call, token = _approved_stamp(key, session, client_for(approver))
    url = f"/v1/sessions/{session}/execute"
    callers = _while_locked(
        key,
        _session_row(session),
        [(url, {**call, "token": token}), (url, {**call, "token": token})],
    )
    # Not retry-safe: the second finds the write claimed and cannot tell whether it ran.
    assert sorted(c.answer["outcome"] for c in callers) == ["RUN", "UNCERTAIN"]
    assert Effect.objects.count() == 1


def test_an_approval_approved_and_denied_at_once_is_answered_once(
    key, approver, organisation, client_for
):
    from tests.conftest import make_person

    other = make_person("second-approver", organisation, "approver")
    session = _session(key)
    call = {"tool": "stamp", "arguments": {"account": "a-1"}, "origins": {"account": "typed"}}
    asked = _post(key, f"/v1/sessions/{session}/execute", call).json()
    assert asked["outcome"] == "CONFIRM", asked
    request = ApprovalRequest.objects.get(public_id=asked["approval"])
    url = f"/v1/approvals/{asked['approval']}"
    approve, deny, again = _while_locked(
        key,
        request,
        [
            (f"{url}/approve", {}, client_for(approver)),
            (f"{url}/deny", {}, client_for(other)),
            (f"{url}/approve", {}, client_for(other)),
        ],
    )
    assert (approve.status, deny.status, again.status) == (200, 409, 409)
    request.refresh_from_db()
    assert request.status == "approved" and request.token


def test_a_done_write_reported_again_twice_at_once_counts_two_replays(key):
    session = _session(key)
    call = {"tool": "pay", "arguments": {"account": "a-1", "amount": 40.0}, "origins": TYPED}
    begun = _post(key, f"/v1/sessions/{session}/execute", call).json()
    report = {**call, "key": begun["key"], "result": {"paid": 40.0}}
    url = f"/v1/sessions/{session}/effects"
    assert _post(key, url, report).json()["duplicate"] is False
    # Both read the row as done, then wait for its lock to count their replay.
    callers = _while_locked(key, Effect.objects.get(), [(url, report), (url, report)])
    assert all(c.answer["duplicate"] for c in callers)
    assert Effect.objects.get().replays == 2


def test_the_same_call_put_to_a_person_twice_at_once_files_one_request(key):
    session = _session(key)
    call = {"tool": "stamp", "arguments": {"account": "a-1"}, "origins": {"account": "typed"}}
    url = f"/v1/sessions/{session}/check"
    first, second = _while_locked(key, _session_row(session), [(url, call), (url, call)])
    assert first.answer["decision"] == second.answer["decision"] == "confirm"
    assert first.answer["approval"] == second.answer["approval"]
    assert ApprovalRequest.objects.count() == 1


# -- an in-process executor's secondary steps, and the reconciler ---------------------------------

AUDITED: list[str] = []


def audit_trail(result, context) -> None:  # noqa: ANN001
    """A write's secondary step: while the executor runs it, the reconciler runs in a worker."""
    from guard.executor import reconcile_pending

    AUDITED.append(context["key"])
    if len(AUDITED) == 1:
        worker = threading.Thread(target=_reconcile, args=(reconcile_pending,))
        worker.start()
        worker.join(timeout=30)


def _reconcile(reconcile_pending) -> None:  # noqa: ANN001
    from django.db import connection as own

    try:
        reconcile_pending()
    finally:
        own.close()


def test_a_secondary_step_runs_once_while_the_reconciler_runs(editor, organisation, actor_for):
    from guard.executor import Executor, ToolBinding
    from guard.models import PendingStep
    from guard.services import session_create

    AUDITED.clear()
    actor = actor_for(editor, organisation)
    session = session_create(actor=actor, agent="till", catalogue=CATALOGUE, rulebook=RULEBOOK)
    binding = ToolBinding(
        lambda arguments, context: {"paid": arguments["amount"]},
        secondary=(f"{__name__}.audit_trail",),
    )
    till = Executor(actor=actor, session=session, bindings={"pay": binding}, timeout_backoff=0)
    done = till.call("pay", {"account": "a-1", "amount": 40.0}, origins=TYPED)
    assert done["outcome"] == "SUCCEEDED", done
    # The step is in the outbox, due, as the write is done: the reconciler leaves it to the
    # executor that is running it, and runs it only if that failed.
    assert len(AUDITED) == 1, AUDITED
    assert PendingStep.objects.get().status == "done"


def test_a_hold_released_twice_at_once_is_released_once_and_audited_once(key, organisation):
    """Two releases of one hold (two people on the dashboard, a retried request): one releases it
    and writes its audit row; the other finds it released. The same for a tool turned back on."""
    from console.models import AuditRow, SessionHold, ToolSwitch

    hold = SessionHold.objects.create(
        organisation=organisation, agent="till", session="s-1", reason="a sequence rule matched"
    )
    url = f"/v1/controls/holds/{hold.pk}/release"
    first, second = _while_locked(key, hold, [(url, {}), (url, {})])
    assert (first.status, second.status) == (200, 200), (first.answer, second.answer)
    assert AuditRow.objects.filter(action="control.hold.release").count() == 1
    switch = ToolSwitch.objects.create(
        organisation=organisation, agent="till", tool="pay", reason="a sequence rule matched"
    )
    url = f"/v1/controls/switches/{switch.pk}/enable"
    first, second = _while_locked(key, switch, [(url, {}), (url, {})])
    assert (first.status, second.status) == (200, 200), (first.answer, second.answer)
    assert AuditRow.objects.filter(action="control.tool.enable").count() == 1
