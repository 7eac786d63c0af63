"""A write `/check` allowed is in flight until `/record` reports it: the host runs such a tool
itself, so the run's limits (`at_most`, a `spend` over the run, the run's `cap_cost`) count it as
if it had run, on both databases. Reads and writes without such a limit keep nothing."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from guard.models import CheckedWrite
from rulebooks.compiler import compile_rule_sheet

pytestmark = pytest.mark.django_db

ACCOUNT = {
    "type": "object",
    "properties": {"account": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["account"],
    "additionalProperties": False,
}
CATALOGUE = {
    "agents": {"till": {"tools": ["pay", "stamp", "give", "charge", "note", "look"]}},
    "tools": [
        {"name": "pay", "kind": "write", "idempotent": True, "at_most": 2, "parameters": ACCOUNT},
        {"name": "stamp", "kind": "write", "at_most": 2, "parameters": ACCOUNT},
        {
            "name": "give",
            "kind": "write",
            "checks": [{"spend": {"argument": "amount", "at_most": 100, "per": "run"}}],
            "parameters": ACCOUNT,
        },
        {
            "name": "charge",
            "kind": "write",
            "cost": 60,
            "checks": [{"cap_cost": 100}],
            "parameters": ACCOUNT,
        },
        {"name": "note", "kind": "write", "parameters": ACCOUNT},
        {"name": "look", "kind": "read", "parameters": ACCOUNT},
    ],
}
#: The writes run without a person (a write is put to one by default).
RULEBOOK = compile_rule_sheet(
    b"tool,condition,decision,reason\n"
    + b"".join(
        f"{tool},,allow,ok\n".encode() for tool in ("pay", "stamp", "give", "charge", "note")
    ),
    filename="rules.csv",
)
TYPED = {"account": "typed", "amount": "typed"}


def _post(client, url: str, body: dict) -> dict:  # noqa: ANN001
    answer = client.post(url, json.dumps(body), content_type="application/json")
    assert answer.status_code in (200, 201), answer.content
    return answer.json()


@pytest.fixture
def till(editor, client_for):  # noqa: ANN001, ANN201
    """A session of the `till` agent: `check(tool, account, **more)` and `record(...)`."""
    client = client_for(editor)
    session = _post(
        client, "/v1/sessions", {"agent": "till", "catalogue": CATALOGUE, "rulebook": RULEBOOK}
    )["id"]

    def call(tool: str, account: str, **more: object) -> dict:
        return {"tool": tool, "arguments": {"account": account, **more}, "origins": TYPED}

    class Till:
        id = session

        def check(self, tool: str, account: str, **more: object) -> dict:
            return _post(client, f"/v1/sessions/{session}/check", call(tool, account, **more))

        def record(self, tool: str, account: str, **more: object) -> None:
            body = {**call(tool, account, **more), "result": {"ok": True}}
            _post(client, f"/v1/sessions/{session}/record", body)

        def execute(self, tool: str, account: str, **more: object) -> dict:
            return _post(client, f"/v1/sessions/{session}/execute", call(tool, account, **more))

    return Till()


def _answer(decision: dict) -> tuple:
    return decision["decision"], decision["reasons"]


def test_writes_allowed_and_not_yet_recorded_count_towards_at_most(till):
    assert _answer(till.check("pay", "a-1")) == ("allow", ["allow"])
    assert _answer(till.check("pay", "a-2")) == ("allow", ["allow"])
    refused = till.check("pay", "a-3")
    assert _answer(refused) == ("refuse", ["order_rule"])
    assert refused["detail"]["running"] == 2 and refused["detail"]["ran"] == 0


def test_a_recorded_write_counts_once_as_a_call_that_ran(till):
    till.check("pay", "a-1")
    till.record("pay", "a-1")
    assert CheckedWrite.objects.count() == 0
    assert _answer(till.check("pay", "a-2")) == ("allow", ["allow"])
    refused = till.check("pay", "a-3")
    assert (refused["decision"], refused["detail"]["ran"], refused["detail"]["running"]) == (
        "refuse",
        1,
        1,
    )
    till.record("pay", "a-2")
    # Two ran: the check's own at_most refuses, with nothing in flight.
    assert _answer(till.check("pay", "a-3")) == ("refuse", ["order_rule"])
    assert CheckedWrite.objects.count() == 0


def test_an_idempotent_call_checked_again_is_one_call_in_flight(till):
    for _ in range(3):  # a retry whose answer was lost asks again
        assert _answer(till.check("pay", "a-1")) == ("allow", ["allow"])
    assert CheckedWrite.objects.count() == 1
    assert _answer(till.check("pay", "a-2")) == ("allow", ["allow"])
    assert _answer(till.check("pay", "a-3")) == ("refuse", ["order_rule"])


def test_a_call_not_marked_idempotent_counts_each_time_it_is_allowed(till):
    # The host may run each allowed call, and the console cannot tell a retry from a second run.
    assert _answer(till.check("stamp", "a-1")) == ("allow", ["allow"])
    assert _answer(till.check("stamp", "a-1")) == ("allow", ["allow"])
    assert _answer(till.check("stamp", "a-2")) == ("refuse", ["order_rule"])


def test_a_write_allowed_long_ago_stops_counting_when_its_token_lifetime_passes(till):
    till.check("pay", "a-1")
    till.check("pay", "a-2")
    assert _answer(till.check("pay", "a-3"))[0] == "refuse"
    kept = CheckedWrite.objects.get(arguments__account="a-1")
    assert kept.expires_at - kept.created_at == dt.timedelta(seconds=900)
    CheckedWrite.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert _answer(till.check("pay", "a-3")) == ("allow", ["allow"])
    # The next record of a counted tool lets the expired ones go.
    till.record("pay", "a-3")
    assert list(CheckedWrite.objects.values_list("arguments__account", flat=True)) == []


def test_the_beat_deletes_expired_writes_nobody_reported_and_keeps_the_others(till):
    """A host that never reports its calls leaves nothing behind once their time passed: the
    beat's `guard.expire_checked` deletes the expired rows (in batches), the live ones stay."""
    from django.conf import settings

    from guard import tasks
    from guard.running import let_expired_go

    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "guard.expire_checked" in scheduled
    for account in ("a-1", "a-2"):
        till.check("pay", account)
    assert CheckedWrite.objects.count() == 2
    CheckedWrite.objects.filter(arguments__account="a-1").update(
        expires_at=timezone.now() - dt.timedelta(seconds=1)
    )
    assert tasks.expire_checked.apply().get() == 1
    assert list(CheckedWrite.objects.values_list("arguments__account", flat=True)) == ["a-2"]
    # many at once go in batches, all of them
    for account in ("b-1", "b-2"):
        till.check("stamp", account)
    CheckedWrite.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert let_expired_go(now=timezone.now(), batch=1) == 3
    assert not CheckedWrite.objects.exists()


def test_writes_allowed_count_towards_a_spend_over_the_run(till):
    assert _answer(till.check("give", "a-1", amount=60))[0] == "allow"
    assert _answer(till.check("give", "a-2", amount=60)) == ("refuse", ["spend_exceeded"])
    assert _answer(till.check("give", "a-2", amount=40))[0] == "allow"


def test_writes_allowed_count_towards_the_runs_cost_cap(till):
    assert _answer(till.check("charge", "a-1"))[0] == "allow"
    assert _answer(till.check("charge", "a-2")) == ("refuse", ["cost_exceeded"])


def test_an_execute_counts_the_writes_a_check_allowed(till):
    till.check("pay", "a-1")
    till.check("pay", "a-2")
    begun = till.execute("pay", "a-3")
    assert (begun["outcome"], begun["reasons"]) == ("REFUSED", ["order_rule"]), begun


def test_a_check_counts_the_writes_an_execute_began(till):
    assert till.execute("pay", "a-1")["outcome"] == "RUN"
    assert till.check("pay", "a-2")["decision"] == "allow"
    assert _answer(till.check("pay", "a-3")) == ("refuse", ["order_rule"])


def test_reads_and_writes_without_a_run_limit_keep_nothing_in_flight(till):
    for _ in range(3):
        assert till.check("look", "a-1")["decision"] == "allow"
        assert till.check("note", "a-1")["decision"] == "allow"
    assert CheckedWrite.objects.count() == 0


def test_statements_of_a_counted_write_allowed_and_recorded(till):
    """What the in-flight count costs a counted write, measured (the session's own read, lock and
    event are the check's anyway): reading what is in flight and keeping the allowed call, two
    statements; a refusal with something in flight, one; recording it, one (letting it go)."""
    till.check("pay", "a-0")  # the tool check is built, the session named
    till.record("pay", "a-0")
    with CaptureQueriesContext(connection) as allowed:
        till.check("pay", "a-1")
    with CaptureQueriesContext(connection) as refused:
        till.check("pay", "a-2")
    with CaptureQueriesContext(connection) as uncounted:
        till.check("note", "a-1")
    in_flight = [q["sql"] for q in allowed.captured_queries if "checkedwrite" in q["sql"]]
    assert len(in_flight) == 2, in_flight
    assert len(refused.captured_queries) == len(allowed.captured_queries) - 1
    assert len(uncounted.captured_queries) == len(allowed.captured_queries) - 2
