"""The executor's rules without I/O: intent keys, the session's step, counters, tenancy, undo."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guard.engine import load_catalogue
from guard.engine.execution import (
    COUNTERS,
    OUTCOMES,
    TIMEOUT_ATTEMPTS,
    ExecutionContext,
    Replayed,
    call_tool,
    foreign_tenant,
    intent_key,
    intent_step,
    schema_counter,
    undo_plan,
)

BASE = {
    "organisation": "1",
    "session": "s-1",
    "tool": "pay",
    "arguments": {"account": "A-1", "amount": 10},
    "step": 0,
}


def test_the_same_intent_gives_the_same_key_whatever_the_order_of_its_arguments():
    again = {**BASE, "arguments": {"amount": 10, "account": "A-1"}}
    assert intent_key(**BASE) == intent_key(**again)
    assert intent_key(**BASE).startswith("ik1-") and len(intent_key(**BASE)) == 4 + 64


def test_the_key_of_an_intent_never_changes_from_one_version_to_the_next():
    """Ledgers keep keys across upgrades: a retry after an upgrade must find the same key."""
    assert intent_key(**BASE) == ("ik1-" + KNOWN_KEY)
    assert intent_key(**BASE, compensation_of=0) == "ik1-" + KNOWN_UNDO_KEY


@pytest.mark.parametrize(
    "change",
    [
        {"organisation": "2"},
        {"session": "s-2"},
        {"tool": "unpay"},
        {"arguments": {"account": "A-1", "amount": 11}},
        {"arguments": {"account": "A-1", "amount": 10, "memo": ""}},
        {"step": 1},
        {"compensation_of": 0},
    ],
)
def test_every_part_of_the_intent_changes_the_key(change):
    assert intent_key(**{**BASE, **change}) != intent_key(**BASE)


def test_an_undo_of_one_entry_is_not_an_undo_of_another():
    assert intent_key(**BASE, compensation_of=0) != intent_key(**BASE, compensation_of=1)


KNOWN_KEY = "dece9b39eb75c0507393d4e7473825c3b98d54b72074aa3a51156d5ab78f7eac"
KNOWN_UNDO_KEY = "f80bd3d95936010279effabfc03a9e62c10d1a272d32a37851e67e40fd3f3ab6"


def call(tool, **arguments):
    return {"tool": tool, "arguments": arguments}


def test_the_step_leaves_out_the_calls_at_the_end_that_are_this_same_call():
    pay = call("pay", account="A-1", amount=10)
    assert intent_step([], "pay", pay["arguments"]) == 0
    assert intent_step([pay], "pay", pay["arguments"]) == 0
    assert intent_step([pay, pay], "pay", pay["arguments"]) == 0
    look = call("look", account="A-1")
    assert intent_step([pay, look], "pay", pay["arguments"]) == 2
    assert intent_step([look, pay], "pay", pay["arguments"]) == 1
    other = call("pay", account="A-1", amount=11)
    assert intent_step([other], "pay", pay["arguments"]) == 1
    assert intent_step([call("unpay", account="A-1", amount=10)], "pay", pay["arguments"]) == 1


def test_an_undo_at_the_end_is_not_a_copy_of_the_call():
    undo = {**call("pay", account="A-1", amount=10), "compensation_of": 0}
    assert intent_step([undo], "pay", {"account": "A-1", "amount": 10}) == 1


def test_a_retry_after_the_call_was_recorded_has_the_key_of_the_first_attempt():
    pay = call("pay", account="A-1", amount=10)
    before = intent_key(**{**BASE, "step": intent_step([], "pay", pay["arguments"])})
    after = intent_key(**{**BASE, "step": intent_step([pay], "pay", pay["arguments"])})
    assert before == after


@given(
    st.lists(st.sampled_from(["pay", "look"]), max_size=8),
    st.integers(min_value=0, max_value=4),
)
def test_the_step_never_exceeds_the_history_and_copies_do_not_move_it(tools, copies):
    entries = [call(tool, n=1) for tool in tools]
    step = intent_step(entries, "pay", {"n": 2})
    assert step == len(entries)
    with_copies = entries + [call("pay", n=2)] * copies
    assert intent_step(with_copies, "pay", {"n": 2}) == len(entries)


@pytest.mark.parametrize(
    ("decision", "counter"),
    [
        ({"decision": "allow", "reasons": ["allow"], "detail": {"step": 13}}, "schema_valid"),
        ({"decision": "confirm", "reasons": ["write"], "detail": {"step": 11}}, "schema_valid"),
        (
            {"decision": "refuse", "reasons": ["argument_schema: at /x"], "detail": {"step": 3}},
            "schema_rejected",
        ),
        ({"decision": "refuse", "reasons": ["order_rule"], "detail": {"step": 5}}, "schema_valid"),
        ({"decision": "refuse", "reasons": ["unknown_tool"], "detail": {"step": 1}}, None),
        ({"decision": "refuse", "reasons": ["history_invalid"], "detail": {"step": 2}}, None),
        ({"decision": "refuse", "reasons": ["tool_disabled"], "detail": {}}, "schema_valid"),
        ({"decision": "confirm", "reasons": ["write"], "detail": {"step": 1}}, "schema_valid"),
        (
            {"decision": "refuse", "reasons": ["argument_schema: at /a:b"], "detail": {"step": 3}},
            "schema_rejected",
        ),
        ({"decision": "refuse", "reasons": ["other"], "detail": {"step": 3}}, "schema_valid"),
        ({"decision": "allow", "detail": {"step": 13}}, "schema_valid"),
        ({"decision": "refuse", "detail": {"step": 1}}, None),
    ],
)
def test_which_counter_a_decision_counts_in(decision, counter):
    assert schema_counter(decision) == counter


def test_an_argument_naming_another_tenant_is_found():
    assert foreign_tenant({"order_id": "1", "tenant": "b"}, "a") == "tenant"
    assert foreign_tenant({"Organisation": "b"}, "a") == "Organisation"
    assert foreign_tenant({"tenant": "a", "org_id": "b"}, "a") == "org_id"
    assert foreign_tenant({"tenant": "a"}, "a") is None
    assert foreign_tenant({"owner": "b"}, "a") is None
    assert foreign_tenant({}, "a") is None


CATALOGUE = {
    "agents": {"till": {"tools": ["pay", "unpay", "ship", "stamp", "look", "note"]}},
    "tools": [
        {
            "name": "pay",
            "kind": "write",
            "parameters": {"type": "object", "properties": {"account": {}, "amount": {}}},
            "compensation": {
                "tool": "unpay",
                "bind": {"account": "arguments.account", "receipt": "result.receipt"},
            },
        },
        {
            "name": "unpay",
            "kind": "write",
            "parameters": {"type": "object", "properties": {"account": {}, "receipt": {}}},
        },
        {"name": "ship", "kind": "write", "irreversible": True, "parameters": {"type": "object"}},
        {"name": "stamp", "kind": "write", "parameters": {"type": "object"}},
        {"name": "note", "kind": "write", "undo": "none", "parameters": {"type": "object"}},
        {"name": "look", "kind": "read", "parameters": {"type": "object"}},
    ],
}


def test_the_undo_goes_last_first_and_says_what_cannot_be_undone():
    catalogue = load_catalogue(CATALOGUE)
    entries = [
        {"tool": "pay", "arguments": {"account": "A"}, "result": {"receipt": "R1"}},
        {"tool": "ship", "arguments": {}, "result": {}},
        {"tool": "stamp", "arguments": {}, "result": {}},
        {"tool": "pay", "arguments": {"account": "B"}, "result": {}},
        {"tool": "gone", "arguments": {}, "result": {}},
    ]
    plan = undo_plan(catalogue, entries, [0, 1, 2, 3, 4, 4, 5, 9, -1])
    assert plan[0].tool == "gone" and plan[3].tool == "ship"
    assert [(step.index, step.status) for step in plan] == [
        (4, "not_compensated"),
        (3, "unbound"),
        (2, "not_compensated"),
        (1, "irreversible"),
        (0, "compensate"),
    ]
    assert plan[1].missing == ("receipt",) and plan[1].compensation == "unpay"
    assert plan[4].arguments == {"account": "A", "receipt": "R1"}
    assert plan[4].compensation == "unpay" and plan[4].tool == "pay"


def test_a_write_the_team_may_leave_done_is_reported_so():
    catalogue = load_catalogue(CATALOGUE)
    entries = [{"tool": "note", "arguments": {}, "result": {}}]
    assert [step.status for step in undo_plan(catalogue, entries, [0])] == ["left_done"]


def test_writes_already_undone_are_left_out():
    catalogue = load_catalogue(CATALOGUE)
    entries = [{"tool": "ship", "arguments": {}, "result": {}}] * 2
    assert [step.index for step in undo_plan(catalogue, entries, [0, 1], undone=[1])] == [0]


def test_the_names_are_the_products_contract():
    assert COUNTERS == (
        "schema_valid",
        "schema_rejected",
        "blocked_actions",
        "duplicates_suppressed",
        "confirmation_denied",
        "partial_results",
        "effects",
    )
    assert {"SUCCEEDED", "PARTIAL", "REJECTED", "BLOCKED", "CANCELLED"} <= set(OUTCOMES)


def context(key: str = "ik1-k") -> ExecutionContext:
    return ExecutionContext(tenant="t", person="p", session="s", agent="a", tool="pay", key=key)


class Flaky:
    """A tool that times out `timeouts` times, then answers; it remembers what it was given."""

    def __init__(self, timeouts: int, answer=None, error: Exception | None = None) -> None:  # noqa: ANN001
        self.timeouts, self.answer, self.error = timeouts, answer, error
        self.seen: list[tuple[dict, str, int]] = []

    def __call__(self, arguments, ctx):  # noqa: ANN001, ANN204
        self.seen.append((arguments, ctx.key, ctx.attempt))
        if len(self.seen) <= self.timeouts:
            raise TimeoutError("lost")
        if self.error is not None:
            raise self.error
        return self.answer


def test_a_timeout_is_retried_with_the_same_key_until_the_tool_answers():
    tool = Flaky(2, {"ok": 1})
    assert call_tool(tool, {"n": 1}, context(), backoff=0) == ("result", {"ok": 1})
    assert tool.seen == [({"n": 1}, "ik1-k", 1), ({"n": 1}, "ik1-k", 2), ({"n": 1}, "ik1-k", 3)]


def test_every_attempt_timing_out_is_uncertain():
    tool = Flaky(5)
    assert call_tool(tool, {}, context(), backoff=0) == ("uncertain", "TimeoutError: lost")
    assert len(tool.seen) == TIMEOUT_ATTEMPTS == 3


def test_what_the_tool_says_is_told_apart():
    assert call_tool(Flaky(0, Replayed({"r": 1})), {}, context()) == ("replayed", {"r": 1})
    assert call_tool(Flaky(0, error=PermissionError("not yours")), {}, context()) == (
        "blocked",
        "not yours",
    )
    assert call_tool(Flaky(0, error=ValueError("bad")), {}, context()) == (
        "failed",
        "ValueError: bad",
    )


def test_the_retry_key_is_asked_per_attempt_and_a_read_has_none():
    tool = Flaky(1, 1)
    call_tool(tool, {}, context(), backoff=0, retry_key=lambda key, attempt: f"{key}/{attempt}")
    assert [key for _, key, _ in tool.seen] == ["ik1-k/1", "ik1-k/2"]
    read = Flaky(1, 1)
    call_tool(read, {}, context(key=""), backoff=0, retry_key=lambda key, attempt: "x")
    assert [key for _, key, _ in read.seen] == ["", ""]


def test_the_tool_gets_a_copy_of_the_arguments(monkeypatch):
    given = {"n": 1}

    def mutating(arguments, ctx):  # noqa: ANN001, ANN202
        arguments["n"] = 2
        raise TimeoutError("lost")

    slept: list[float] = []
    monkeypatch.setattr("guard.engine.execution.time.sleep", slept.append)
    call_tool(mutating, given, context(), backoff=0.5)
    assert given == {"n": 1} and slept == [0.5, 1.0]
    slept.clear()
    call_tool(mutating, given, context())
    assert slept == [0.05, 0.1]  # the default backoff
