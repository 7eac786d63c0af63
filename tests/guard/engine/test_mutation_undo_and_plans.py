"""Undos, approved plans and what a person is shown, where mutation testing found them unguarded.

Chapter 45, step 6: an undo names the step it undoes, that step ran, the undo is the one declared for
it, each bound argument comes from that step, and a step is undone once; each refusal says which
problem it met. The checks page, "Fora do plano aprovado": a call that is not the next step of the
plan a person approved, or whose values changed, is refused. Step 11: the person sees each argument
and where its value came from.
"""

from __future__ import annotations

import datetime as dt

from guard.engine import ToolCheck

from .conftest import KEY, NOW, lab_catalogue

# -- step 6 -------------------------------------------------------------------------------------


def refunded(check: ToolCheck, refund_id="R1"):
    history = check.new_history("s")
    check.record(history, {"tool": "get_order", "arguments": {"order_id": "A1"}}, {})
    check.record(
        history,
        {"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 20}},
        {"refund_id": refund_id},
    )
    return history


def undo(index: int = 1, **arguments) -> dict:
    return {
        "tool": "cancel_refund",
        "arguments": arguments or {"refund_id": "R1"},
        "compensation_of": index,
    }


def test_an_undo_of_the_entry_just_past_the_end_did_not_run():
    check = ToolCheck(lab_catalogue(), key=KEY)
    history = refunded(check)
    decision = check.check(undo(index=len(history)), session=history)
    assert (decision.decision, decision.reasons, decision.rule) == (
        "refuse",
        ("compensation_mismatch",),
        "undo",
    )
    assert decision.detail == {
        "step": 6,
        "check": "undo",
        "undoes": 2,
        "problem": "the step it undoes did not run",
    }


def test_an_undo_of_a_step_it_is_not_declared_for_names_that_steps_tool():
    check = ToolCheck(lab_catalogue(), key=KEY)
    decision = check.check(undo(index=0), session=refunded(check))
    assert decision.detail == {
        "step": 6,
        "check": "undo",
        "undoes": 0,
        "problem": "it is not the undo declared for that step",
        "undone_tool": "get_order",
    }


def test_a_second_undo_of_a_step_names_the_entry_that_undid_it():
    check = ToolCheck(lab_catalogue(), key=KEY)
    history = refunded(check)
    check.record(history, undo(), {})
    decision = check.check(undo(), session=history)
    assert decision.reasons == ("compensation_spent",)
    assert decision.detail == {
        "step": 6,
        "check": "undo",
        "undoes": 1,
        "problem": "the step was already undone",
        "by": 2,
    }


def test_an_undo_whose_bound_argument_differs_or_is_missing_names_the_argument():
    check = ToolCheck(lab_catalogue(), key=KEY)
    history = refunded(check)
    expected_detail = {
        "step": 6,
        "check": "undo",
        "undoes": 1,
        "problem": "an argument differs from the step it undoes",
        "argument": "refund_id",
    }
    assert check.check(undo(refund_id="R2"), session=history).detail == expected_detail
    assert check.check(undo(), session=history).reasons == ("compensation",)


def test_an_undo_that_leaves_out_an_argument_the_step_recorded_as_null_does_not_match():
    check = ToolCheck(lab_catalogue(), key=KEY)
    history = refunded(check, refund_id=None)
    call = {"tool": "cancel_refund", "arguments": {}, "compensation_of": 1}
    decision = check.check(call, session=history, checks=["undo"])
    assert decision.reasons == ("compensation_mismatch",)
    assert decision.detail["argument"] == "refund_id"


# -- approved plans --------------------------------------------------------------------------------

PLAN = {
    "id": "p1",
    "steps": [
        {"tool": "get_order", "arguments": {"order_id": "A1"}},
        {"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 20}},
    ],
}


def planned(check: ToolCheck, history, step: dict, *, plan=PLAN, token=None, **extra) -> dict:
    return {
        **step,
        "origins": {"order_id": "typed", "amount": "typed"},
        "plan": plan,
        "plan_token": token or check.issue_plan_token(plan, session=history, now=NOW),
        **extra,
    }


def off_plan(problem: str, **detail) -> dict:
    return {"check": "plan_step", "plan": "p1", "problem": problem, **detail}


def test_each_off_plan_refusal_says_what_was_expected_and_what_was_given():
    check = ToolCheck(lab_catalogue(), key=KEY)
    history = check.new_history("s")
    skipped = check.check(
        planned(check, history, PLAN["steps"][0], plan_step=1), session=history, now=NOW
    )
    assert (skipped.decision, skipped.reasons, skipped.rule) == (
        "refuse",
        ("off_plan",),
        "plan_step",
    )
    assert skipped.detail == off_plan("the call is not the plan's next step", expected=0, given=1)
    other_tool = check.check(planned(check, history, PLAN["steps"][1]), session=history, now=NOW)
    assert other_tool.detail == off_plan("the call is not the plan's next step", expected=0)
    changed = {"tool": "get_order", "arguments": {"order_id": "A2"}}
    assert check.check(planned(check, history, changed), session=history, now=NOW).detail == (
        off_plan("the values differ from the approved step", expected=0)
    )
    for step in PLAN["steps"]:
        check.record(history, planned(check, history, step), {})
    done = check.check(planned(check, history, PLAN["steps"][0]), session=history, now=NOW)
    assert done.detail == off_plan("every step of the plan already ran", expected=2)


def test_a_plan_step_that_is_not_a_call_matches_no_call():
    check = ToolCheck(lab_catalogue(), key=KEY)
    history = check.new_history("s")
    plan = {"id": "p1", "steps": ["get_order"]}
    call = planned(
        check, history, {"tool": "get_order", "arguments": {"order_id": "A1"}}, plan=plan
    )
    decision = check.check(call, session=history, now=NOW)
    assert decision.detail == off_plan("the call is not the plan's next step", expected=0)


def test_an_approved_step_without_arguments_is_a_call_with_none():
    catalogue = lab_catalogue()
    catalogue["tools"].append({"name": "ping", "kind": "read"})
    catalogue["agents"]["assistant"]["tools"].append("ping")
    check = ToolCheck(catalogue, key=KEY)
    history = check.new_history("s")
    plan = {"id": "p1", "steps": [{"tool": "ping"}]}
    call = planned(check, history, {"tool": "ping", "arguments": {}}, plan=plan)
    assert check.check(call, session=history, now=NOW).reasons == ("allow",)


def test_a_forged_or_expired_plan_token_says_so():
    check = ToolCheck(lab_catalogue(), key=KEY)
    history = check.new_history("s")
    forged = planned(check, history, PLAN["steps"][0], token="stw1.e30.AAAA")
    assert check.check(forged, session=history, now=NOW).detail == off_plan(
        "the plan token is not valid"
    )
    token = check.issue_plan_token(PLAN, session=history, now=NOW, ttl=60)
    call = planned(check, history, PLAN["steps"][0], token=token)
    at_expiry = NOW + dt.timedelta(seconds=60)
    assert check.check(call, session=history, now=at_expiry).detail == off_plan(
        "the plan token expired"
    )
    just_before = NOW + dt.timedelta(seconds=59)
    assert check.check(call, session=history, now=just_before).reasons == ("allow",)


# -- step 11: what the person sees ---------------------------------------------------------------


def test_a_person_sees_each_argument_with_its_origin_and_model_where_none_is_given():
    check = ToolCheck(lab_catalogue(), key=KEY)
    call = {"tool": "pay", "arguments": {"amount": 5}}
    decision = check.check(call, session=check.new_history("s"))
    assert decision.reasons == ("argument_origin: amount",)
    assert decision.detail["arguments"] == {"amount": {"value": 5, "origin": "model"}}
    typed = check.check({**call, "origins": {"amount": "typed"}}, session=check.new_history("s"))
    assert typed.detail["arguments"] == {"amount": {"value": 5, "origin": "typed"}}
