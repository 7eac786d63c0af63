"""The checks of what was said, through a real `ToolCheck`, on the guardrail-checks examples.

Each allowed example passes (the post-check adds nothing to the tool check's answer); each barred
example is held -- and removing the check makes the barred test fail.
"""

from __future__ import annotations

import pytest

from guard.engine import ToolCheck
from router.engine import Router, SettingInvalid
from router.engine.said import said_checks

from .conftest import KEY, TODAY

TYPED = {"order_id": "typed", "amount": "typed", "text": "typed"}


def lab(extra_tools=()):
    order_id = {"type": "string", "minLength": 1}
    return {
        "tools": [
            {
                "name": "save_note",
                "kind": "write",
                "parameters": {
                    "type": "object",
                    "properties": {"order_id": order_id, "text": {"type": "string"}},
                },
            },
            {
                "name": "refund_card",
                "kind": "write",
                "parameters": {
                    "type": "object",
                    "properties": {"order_id": order_id, "amount": {"type": "number"}},
                    "required": ["order_id", "amount"],
                },
            },
            {
                "name": "get_order",
                "kind": "read",
                "parameters": {
                    "type": "object",
                    "properties": {"order_id": order_id},
                    "required": ["order_id"],
                },
                "result_schema": {"type": "object"},
            },
            *extra_tools,
        ]
    }


class Desk:
    """A tool check with the said checks plugged in, reading this desk's turns."""

    def __init__(self, language="en", modes=None, extra_tools=()):
        self.router = Router(lab(extra_tools), language=language, today=TODAY)
        self.turns: list[str] = []
        self.check = ToolCheck(
            self.router.catalogue,
            key=KEY,
            post_checks=said_checks(self.router, turns=lambda: self.turns, modes=modes),
        )

    def decide(self, turns, tool, arguments, origins=None, results=()):
        self.turns[:] = turns
        history = self.check.new_history("s")
        for content in results:
            self.check.record(history, content["call"], content["result"])
        call = {"tool": tool, "arguments": arguments, "origins": origins or TYPED}
        return self.check.check(call, session=history)


@pytest.fixture
def desk():
    return Desk()


# -- S1: a sending verb, answered with a tool that does not send ---------------------------------


def test_s1_allowed_example_passes(desk):
    decision = desk.decide(["save a note saying hi"], "save_note", {"text": "hi"})
    assert decision.reasons == ("write",)


def test_s1_barred_example_is_held(desk):
    decision = desk.decide(["post hi to the team channel"], "save_note", {"text": "hi"})
    assert decision.decision == "confirm"
    assert "s1_veto" in decision.reasons


def test_s1_reads_pt_br_when_that_is_the_language():
    desk = Desk(language="pt-BR")
    decision = desk.decide(["publique oi no canal do time"], "save_note", {"text": "oi"})
    assert "s1_veto" in decision.reasons


def test_s1_holds_a_read_too_and_lets_a_tool_that_sends_through():
    sender = {
        "name": "post_message",
        "kind": "sends_out",
        "parameters": {"type": "object", "properties": {"channel": {"type": "string"},
                                                        "text": {"type": "string"}}},
    }  # fmt: skip
    desk = Desk(extra_tools=[sender])
    held = desk.decide(["send order A1 to the team"], "get_order", {"order_id": "A1"})
    assert (held.decision, held.reasons) == ("confirm", ("s1_veto",))
    sent = desk.decide(
        ["post hi to the team channel"], "post_message", {"channel": "team", "text": "hi"}
    )
    assert "s1_veto" not in sent.reasons


# -- S2: a destination no tool receives and the call does not carry -------------------------------


def test_s2_allowed_example_passes(desk):
    decision = desk.decide(["save a note on A1 saying x"], "save_note",
                           {"order_id": "A1", "text": "x"})  # fmt: skip
    assert decision.reasons == ("write",)


def test_s2_barred_example_is_held(desk):
    decision = desk.decide(["save a note on A1 for ana@x.com"], "save_note",
                           {"order_id": "A1", "text": "x"})  # fmt: skip
    assert "s2_veto" in decision.reasons


def test_s2_lets_a_call_that_carries_the_destination_through(desk):
    decision = desk.decide(["save a note on A1 for ana@x.com"], "save_note",
                           {"order_id": "A1", "text": "write to ana@x.com"})  # fmt: skip
    assert "s2_veto" not in decision.reasons


def test_s2_leaves_a_destination_some_tool_receives_to_that_tool():
    mailer = {
        "name": "send_mail",
        "kind": "sends_out",
        "parameters": {"type": "object", "properties": {"to": {"type": "string",
                                                               "format": "email"}}},
    }  # fmt: skip
    desk = Desk(extra_tools=[mailer])
    decision = desk.decide(["save a note on A1 for ana@x.com"], "save_note",
                           {"order_id": "A1", "text": "x"})  # fmt: skip
    assert "s2_veto" not in decision.reasons


# -- the confirmation reading --------------------------------------------------------------------


def test_confirmation_reading_allowed_example_passes(desk):
    decision = desk.decide(["refund 20 on order A1"], "refund_card",
                           {"order_id": "A1", "amount": 20})  # fmt: skip
    assert decision.reasons == ("write",)


def test_confirmation_reading_barred_example_shows_both_values(desk):
    decision = desk.decide(["refund 20 on order A1"], "refund_card",
                           {"order_id": "A2", "amount": 20})  # fmt: skip
    assert decision.decision == "confirm"
    assert "confirm_read: order_id (said `A1`, the call has `A2`)" in decision.reasons


def test_confirmation_reading_holds_a_read_whose_value_differs(desk):
    decision = desk.decide(["show order A1"], "get_order", {"order_id": "A2"})
    assert decision.decision == "confirm"
    assert decision.detail["said"] == {"order_id": "A1"}
    assert decision.detail["call"] == {"order_id": "A2"}


def test_confirmation_reading_reads_pt_br_numbers_as_typed():
    desk = Desk(language="pt-BR")
    same = desk.decide(["estorne 40,00 do pedido A1"], "refund_card",
                       {"order_id": "A1", "amount": 40})  # fmt: skip
    assert same.reasons == ("write",)
    other = desk.decide(["estorne 40,00 do pedido A1"], "refund_card",
                        {"order_id": "A1", "amount": 400})  # fmt: skip
    assert "confirm_read: amount (said `40,00`, the call has `400`)" in other.reasons


def test_the_call_is_never_changed(desk):
    call = {"tool": "refund_card", "arguments": {"order_id": "A2", "amount": 20},
            "origins": TYPED}  # fmt: skip
    desk.turns[:] = ["refund 20 on order A1"]
    desk.check.check(call, session=desk.check.new_history("s"))
    assert call["arguments"] == {"order_id": "A2", "amount": 20}


# -- the origin of values ------------------------------------------------------------------------


def test_origin_allowed_example_passes(desk):
    decision = desk.decide(["refund 20 on order A1"], "refund_card",
                           {"order_id": "A1", "amount": 20})  # fmt: skip
    assert not any(r.startswith("argument_origin") for r in decision.reasons)


def test_origin_barred_example_asks_never_refuses(desk):
    decision = desk.decide(["refund 20 on order A1"], "refund_card",
                           {"order_id": "A1", "amount": 80})  # fmt: skip
    assert decision.decision == "confirm"
    assert "argument_origin: amount" in decision.reasons


def test_a_value_a_tool_returned_is_vouched_for(desk):
    results = [{"call": {"tool": "get_order", "arguments": {"order_id": "A1"}},
                "result": {"order_id": "A1", "amount": 80}}]  # fmt: skip
    decision = desk.decide(["refund order A1 in full"], "refund_card",
                           {"order_id": "A1", "amount": 80}, results=results)  # fmt: skip
    assert not any(r.startswith("argument_origin") for r in decision.reasons)


# -- what every check of what was said shares ----------------------------------------------------


def test_only_the_latest_turn_is_read_by_s1_s2_and_the_confirmation_reading(desk):
    decision = desk.decide(["post hi to the team channel", "save a note saying hi"],
                           "save_note", {"text": "hi"})  # fmt: skip
    assert decision.reasons == ("write",)


def test_with_no_turns_given_they_have_no_opinion(desk):
    decision = desk.decide([], "refund_card", {"order_id": "A2", "amount": 80})
    assert decision.reasons == ("write",)


def test_strict_mode_refuses_and_off_mode_says_nothing():
    strict = Desk(modes={"s1_veto": "refuse", "confirm_read": "refuse"})
    refused = strict.decide(["post hi to the team channel"], "save_note", {"text": "hi"})
    assert (refused.decision, refused.reasons, refused.rule) == ("refuse", ("s1_veto",), "s1_veto")
    quiet = Desk(modes={"s1_veto": "off", "s2_veto": "off", "grounded": "off"})
    assert quiet.decide(["post hi to the team channel"], "save_note",
                        {"text": "hi"}).reasons == ("write",)  # fmt: skip


def test_a_refusal_stays_a_refusal(desk):
    decision = desk.decide(["refund 20 on order A1"], "refund_card", {"order_id": "A2"})
    assert (decision.decision, decision.reasons) == ("refuse", ("argument_schema",))


def test_checks_switched_off_in_the_call_do_not_run(desk):
    desk.turns[:] = ["post hi to the team channel"]
    decision = desk.check.check(
        {"tool": "save_note", "arguments": {"text": "hi"}, "origins": TYPED},
        session=desk.check.new_history("s"),
        checks=["s2_veto"],
    )
    assert "s1_veto" not in decision.reasons


def test_a_mode_the_check_does_not_have_is_refused():
    router = Router(lab(), today=TODAY)
    with pytest.raises(SettingInvalid):
        said_checks(router, turns=[], modes={"grounded": "refuse"})
    with pytest.raises(SettingInvalid):
        said_checks(router, turns=[], modes={"s3_veto": "off"})


def test_the_persons_yes_to_exactly_the_call_answers_a_confirm_and_never_a_refusal():
    desk = Desk()
    desk.turns[:] = ["refund 20 on order A1"]
    call = {"tool": "refund_card", "arguments": {"order_id": "A2", "amount": 20},
            "origins": TYPED}  # fmt: skip
    history = desk.check.new_history("s")
    held = desk.check.check(call, session=history)
    assert held.decision == "confirm" and any(r.startswith("confirm_read") for r in held.reasons)
    token = desk.check.issue_token(call, session=history)
    answered = desk.check.check(call, session=history, token=token)
    assert (answered.decision, answered.reasons) == ("allow", ("confirmed",))
    strict = Desk(modes={"confirm_read": "refuse"})
    strict.turns[:] = ["refund 20 on order A1"]
    history = strict.check.new_history("s")
    token = strict.check.issue_token(call, session=history)
    refused = strict.check.check(call, session=history, token=token)
    assert refused.decision == "refuse" and refused.rule == "confirm_read"
