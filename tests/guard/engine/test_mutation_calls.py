"""Reading a call, the clock, post-checks and failing closed, where mutation testing found gaps.

Chapter 45: the check never raises on a malformed call, it refuses and says which field is wrong;
a check that cannot answer refuses (`check_error`), as does a broken post-check; post-checks may
only make the answer stricter and see the call, the answer so far, the verified history and the
context. `now` is a datetime (naive means UTC) or epoch seconds. Values nested deeper than 64
levels are not JSON to the engine.
"""

from __future__ import annotations

import datetime as dt
import types
from typing import Any

import pytest

import guard.engine.check as check_module
from guard.engine import (
    Decision,
    GuardError,
    NotJSON,
    PostCheck,
    ToolCheck,
    canonical_json,
)
from guard.engine.canonical import is_json

from .conftest import KEY, NOW, lab_catalogue

GET = {"tool": "get_order", "arguments": {"order_id": "A1"}}


def lab() -> ToolCheck:
    return ToolCheck(lab_catalogue(), key=KEY)


@pytest.mark.parametrize(
    ("call", "field", "problem"),
    [
        (["get_order"], "call", "must be a mapping"),
        ({"tool": ""}, "tool", "must be a tool name"),
        ({"tool": "get_order", "agent": 7}, "agent", "must be an agent name"),
        ({"tool": "get_order", "arguments": {"at": {1, 2}}}, "arguments", "must be a JSON object"),
        (
            {**GET, "origins": {"order_id": 5}},
            "origins",
            "must map argument names to typed, tool or model",
        ),
        (
            {**GET, "origins": {5: "typed"}},
            "origins",
            "must map argument names to typed, tool or model",
        ),
        ({**GET, "labels": "web"}, "labels", "must be a list of labels"),
        (
            {**GET, "compensation_of": True},
            "compensation_of",
            "must be the index of a history entry",
        ),
        ({**GET, "plan": {"id": "p", "steps": [{"x": {1}}]}}, "plan", "must be `{id, steps}`"),
        ({**GET, "plan_token": 5}, "plan_token", "must be text"),
        ({**GET, "plan_step": True}, "plan_step", "must be a step number"),
    ],
)
def test_a_malformed_call_is_refused_naming_the_field_and_the_problem(call, field, problem):
    check = lab()
    decision = check.check(call, session=check.new_history("s"))
    assert (decision.decision, decision.reasons, decision.rule) == (
        "refuse",
        ("malformed_call",),
        None,
    )
    assert decision.detail == {"field": field, "problem": problem}


def test_arguments_given_as_a_read_only_mapping_are_read_as_an_object():
    check = lab()
    call = {**GET, "arguments": types.MappingProxyType({"order_id": "A1"})}
    assert check.check(call, session=check.new_history("s")).reasons == ("allow",)


# -- the clock ------------------------------------------------------------------------------------


def test_now_may_be_epoch_seconds_or_a_naive_datetime_read_as_utc():
    check = lab()
    history = check.new_history("s")
    pay = {"tool": "pay", "arguments": {"amount": 5}}
    token = check.issue_token(pay, session=history, now=NOW, ttl=60)
    seconds = NOW.timestamp()
    assert check.check(pay, session=history, token=token, now=seconds + 59).reasons == (
        "confirmed",
    )
    assert check.check(pay, session=history, token=token, now=int(seconds) + 60).reasons == (
        "token_expired",
    )
    naive = NOW.replace(tzinfo=None) + dt.timedelta(seconds=59)
    assert check.check(pay, session=history, token=token, now=naive).reasons == ("confirmed",)


@pytest.mark.parametrize("now", [True, "yesterday", dt.date(2026, 3, 1)])
def test_now_that_is_neither_a_datetime_nor_seconds_is_a_program_error(now):
    check = lab()
    with pytest.raises(GuardError, match=r"^`now` must be a datetime or a number of seconds$"):
        check.check(GET, session=check.new_history("s"), now=now)


# -- failing closed --------------------------------------------------------------------------------


def test_a_step_that_fails_unexpectedly_refuses_naming_the_error(monkeypatch):
    def broken(*args: Any, **kwargs: Any):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(check_module, "validate_arguments", broken)
    check = lab()
    decision = check.check(GET, session=check.new_history("s"))
    assert (decision.decision, decision.reasons, decision.rule) == (
        "refuse",
        ("check_error",),
        None,
    )
    assert decision.detail == {"error": "ZeroDivisionError"}


def test_post_checks_see_the_call_the_answer_the_history_and_the_context():
    seen: dict[str, Any] = {}

    def look(call, decision, *, session, context):
        seen.update(tool=call.tool, decision=decision.reasons, session=session, context=context)
        return None

    check = ToolCheck(lab_catalogue(), key=KEY, post_checks=[PostCheck("s1_veto", look)])
    history = check.new_history("s")
    check.check(GET, session=history, context={"order_paid": True})
    assert seen == {
        "tool": "get_order",
        "decision": ("allow",),
        "session": history,
        "context": {"order_paid": True},
    }


def test_a_switched_off_post_check_is_skipped_and_the_next_one_still_runs():
    def refuse(call, decision, *, session, context):
        return Decision("refuse", ("s2_destination",), {}, None)

    never = PostCheck("s1_veto", lambda *a, **k: pytest.fail("a switched-off post-check ran"))
    check = ToolCheck(lab_catalogue(), key=KEY, post_checks=[never, PostCheck("s2_veto", refuse)])
    decision = check.check(GET, session=check.new_history("s"), checks=["s2_veto"])
    assert (decision.decision, decision.reasons, decision.rule) == (
        "refuse",
        ("s2_destination",),
        "s2_veto",
    )


def test_after_a_refusal_no_post_check_runs_and_the_refusal_is_the_answer():
    ran: list[str] = []

    def note(call, decision, *, session, context):
        ran.append("ran")
        return Decision("refuse", ("later",), {}, None)

    check = ToolCheck(lab_catalogue(), key=KEY, post_checks=[PostCheck("s1_veto", note)])
    decision = check.check({"tool": "ghost"}, session=check.new_history("s"))
    assert decision.reasons == ("unknown_tool",) and ran == []


def test_a_post_check_that_raises_refuses_naming_itself_and_the_error():
    def broken(call, decision, *, session, context):
        raise KeyError("x")

    check = ToolCheck(lab_catalogue(), key=KEY, post_checks=[PostCheck("confirm_read", broken)])
    decision = check.check(GET, session=check.new_history("s"))
    assert (decision.decision, decision.reasons, decision.rule) == (
        "refuse",
        ("post_check_error",),
        "confirm_read",
    )
    assert decision.detail == {"check": "confirm_read", "error": "KeyError"}


# -- how deep a value may be ---------------------------------------------------------------------


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def nested_mapping(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


def test_a_call_whose_arguments_are_nested_too_deep_is_malformed():
    check = lab()
    call = {"tool": "get_order", "arguments": {"order_id": nested(64)}}
    decision = check.check(call, session=check.new_history("s"))
    assert decision.reasons == ("malformed_call",) and decision.detail["field"] == "arguments"


def test_values_nested_64_levels_are_json_and_65_are_not():
    for make in (nested, nested_mapping):
        assert is_json(make(64)) and canonical_json(make(64))
        assert not is_json(make(65))
        with pytest.raises(NotJSON, match="nested more than 64 levels deep"):
            canonical_json(make(65))


def test_a_value_that_is_not_json_is_named_in_the_error():
    with pytest.raises(NotJSON, match=r"^a value of type `set` is not JSON$"):
        canonical_json({"a": {1}})
    with pytest.raises(NotJSON, match=r"^a key is not a string: `1`$"):
        canonical_json({1: "a"})
    with pytest.raises(NotJSON, match=r"^a number is not finite$"):
        canonical_json([float("inf")])
