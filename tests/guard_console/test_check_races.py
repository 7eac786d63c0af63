"""`POST /v1/sessions/{id}/check` under concurrent requests, on PostgreSQL, as served: a host that
checks each call and runs the tool itself cannot pass a tool's `at_most`, a `spend` over the run
or the run's `cap_cost` by checking several writes at once (each request in a thread of its own;
see `test_executor_races` for how the interleaving is forced with a row lock)."""

from __future__ import annotations

import threading

import pytest

from guard.models import GuardSession
from tests.guard_console.test_executor_races import (  # noqa: F401 - `key` is a fixture
    TYPED,
    Caller,
    _session,
    _while_locked,
    key,
    pytestmark,
)


def _at_once(key: str, requests: list[tuple[str, dict]]) -> list[Caller]:  # noqa: F811
    """Send the requests from threads released together, and wait for their answers."""
    start = threading.Barrier(len(requests))

    class Together(Caller):
        def run(self) -> None:
            start.wait(timeout=30)
            super().run()

    callers = [Together(key, url, body) for url, body in requests]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(timeout=30)
        assert caller.error is None, caller.error
    return callers


def _checks(session: str, tool: str, arguments: list[dict]) -> list[tuple[str, dict]]:
    url = f"/v1/sessions/{session}/check"
    return [(url, {"tool": tool, "arguments": given, "origins": TYPED}) for given in arguments]


def test_two_writes_checked_at_once_do_not_pass_an_at_most_of_one(key):  # noqa: F811
    session = _session(key)
    calls = _checks(
        session, "pay", [{"account": "a-1", "amount": 40.0}, {"account": "a-2", "amount": 40.0}]
    )
    callers = _at_once(key, calls)
    decisions = sorted(c.answer["decision"] for c in callers)
    # One is allowed; the other is decided while the first is in flight, counted as a call made.
    assert decisions == ["allow", "refuse"], [c.answer for c in callers]
    refused = next(c.answer for c in callers if c.answer["decision"] == "refuse")
    assert refused["reasons"] == ["order_rule"]


@pytest.mark.parametrize(
    ("tool", "arguments", "reason"),
    [
        ("pay", {"amount": 40.0}, "order_rule"),
        ("give", {"amount": 60}, "spend_exceeded"),
        ("charge", {}, "cost_exceeded"),
    ],
)
def test_writes_checked_while_the_session_is_locked_take_it_in_turn(
    key,  # noqa: F811
    tool,
    arguments,
    reason,
):
    session = _session(key)
    calls = _checks(session, tool, [{**arguments, "account": a} for a in ("a-1", "a-2")])
    # Both wait for the session's lock: the second is decided once the first's allowance counts.
    first, second = _while_locked(key, GuardSession.objects.get(public_id=session), calls)
    assert first.answer["decision"] == "allow", first.answer
    assert (second.answer["decision"], second.answer["reasons"]) == ("refuse", [reason])
