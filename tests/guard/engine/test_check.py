"""The 13 steps of the tool check, each with chapter 45's example and a test that fails without it.

Where a step can be switched off, a second test switches it off and shows the same call getting past
it: that is the test that fails when the step is removed. Steps that cannot be switched off are
pinned by their refusal alone (without them the call would reach step 11 or 13 and be confirmed or
allowed).
"""

from __future__ import annotations

import datetime as dt

import pytest

from guard.engine import ToolCheck
from guard.engine.checks import NAMES

from .conftest import KEY, NOW, TYPED

REFUND = {
    "tool": "refund_card",
    "agent": "billing",
    "arguments": {"order_id": "4411", "amount": 40.0},
}


def refund(**changes):
    call = {**REFUND, "origins": TYPED}
    arguments = {**REFUND["arguments"], **changes.pop("arguments", {})}
    return {**call, "arguments": arguments, **changes}


def all_but(name: str) -> list[str]:
    return sorted(NAMES - {name})


# -- step 1
# -----------------------------------------------------------------------------------------


def test_a_tool_the_catalogue_does_not_have_is_refused_as_unknown_tool(shop):
    decision = shop.check(
        {"tool": "delete_order", "agent": "billing", "arguments": {}}, session=shop.new_history("s")
    )
    assert decision.decision == "refuse"
    assert decision.reasons == ("unknown_tool",)
    assert decision.detail["step"] == 1


def test_a_tool_of_another_agent_is_refused_as_unknown_tool(shop):
    call = {**refund(), "agent": "desk"}
    decision = shop.check(call, session=shop.new_history("s"))
    assert (decision.decision, decision.reasons) == ("refuse", ("unknown_tool",))
    assert decision.detail["agent"] == "desk"


def test_with_several_agents_a_call_without_its_agent_is_refused(shop):
    call = {key: value for key, value in refund().items() if key != "agent"}
    decision = shop.check(call, session=shop.new_history("s"))
    assert (decision.decision, decision.reasons) == ("refuse", ("agent_required",))


def test_a_call_naming_an_agent_the_catalogue_does_not_have_is_refused(shop):
    decision = shop.check({**refund(), "agent": "ghost"}, session=shop.new_history("s"))
    assert decision.reasons == ("agent_required",)


def test_with_a_single_agent_the_call_need_not_name_it(lab):
    call = {"tool": "get_order", "arguments": {"order_id": "A1"}}
    assert lab.check(call, session=lab.new_history("s")).decision == "allow"


def licensed(shop_file, on_lapse: str) -> ToolCheck:
    settings = {"licence": {"valid_until": "2026-02-28", "on_lapse": on_lapse}}
    return ToolCheck(shop_file.catalogue, key=KEY, settings=settings)


def test_under_a_lapsed_licence_a_write_is_refused_and_a_read_still_runs(shop_file):
    check = licensed(shop_file, "refuse_writes")
    history = check.new_history("s")
    write = check.check(refund(), session=history, now=NOW)
    assert (write.decision, write.reasons) == ("refuse", ("licence_lapsed",))
    read = check.check(
        {"tool": "get_order", "agent": "desk", "arguments": {"order_id": "4411"}},
        session=history,
        now=NOW,
    )
    assert read.decision == "allow"


def test_under_a_lapsed_licence_set_to_refuse_all_a_read_is_refused_too(shop_file):
    check = licensed(shop_file, "refuse_all")
    read = check.check(
        {"tool": "get_order", "agent": "desk", "arguments": {"order_id": "4411"}},
        session=check.new_history("s"),
        now=NOW,
    )
    assert read.reasons == ("licence_lapsed",)


def test_a_licence_is_valid_through_its_last_day(shop_file):
    check = licensed(shop_file, "refuse_all")
    last_day = dt.datetime(2026, 2, 28, 23, 59, tzinfo=dt.UTC)
    decision = check.check(refund(), session=check.new_history("s"), now=last_day)
    assert decision.decision == "confirm"


# -- step 2
# -----------------------------------------------------------------------------------------


def test_a_history_whose_first_entry_was_edited_by_hand_is_refused(shop):
    history = shop.new_history("s")
    shop.record(
        history, {"tool": "get_order", "agent": "desk", "arguments": {"order_id": "4411"}}, {}
    )
    data = history.to_json()
    data["entries"][0]["content"]["arguments"]["order_id"] = "4412"
    decision = shop.check(refund(), session=data, head=history.head)
    assert (decision.decision, decision.reasons) == ("refuse", ("history_invalid",))
    assert decision.detail["index"] == 0


def test_a_history_signed_with_another_key_is_refused(shop_file, shop):
    other = ToolCheck(shop_file.catalogue, key=b"another key, long enough to sign").new_history("s")
    assert shop.check(refund(), session=other).reasons == ("history_invalid",)


def test_a_session_that_is_not_a_history_is_refused_not_raised(shop):
    assert shop.check(refund(), session=None).reasons == ("history_invalid",)
    assert shop.check(refund(), session={"entries": "x"}).reasons == ("history_invalid",)


# -- step 3
# -----------------------------------------------------------------------------------------


def test_an_argument_the_schema_does_not_declare_is_refused_at_its_pointer(shop):
    decision = shop.check(refund(arguments={"note": "x"}), session=shop.new_history("s"))
    assert (decision.decision, decision.reasons) == ("refuse", ("argument_schema",))
    assert decision.detail["pointer"] == "/note"


def test_a_wrong_type_and_a_missing_argument_are_refused_with_every_problem(shop):
    call = {**refund(), "arguments": {"amount": "forty"}}
    decision = shop.check(call, session=shop.new_history("s"))
    assert decision.reasons == ("argument_schema",)
    pointers = [error["pointer"] for error in decision.detail["errors"]]
    assert pointers == ["/amount", "/order_id"]
    assert "forty" not in str(decision.to_dict())


def test_without_the_arguments_check_an_undeclared_argument_gets_through(shop):
    decision = shop.check(
        refund(arguments={"note": "x"}), session=shop.new_history("s"), checks=all_but("arguments")
    )
    assert decision.decision == "confirm"
    assert decision.reasons == ("argument_origin: note", "schema_partial")


# -- step 4
# -----------------------------------------------------------------------------------------


def test_a_destination_in_a_tool_not_declared_sends_out_is_refused(shop):
    call = refund(arguments={"order_id": "https://refunds.invalid/4411"})
    decision = shop.check(call, session=shop.new_history("s"))
    assert (decision.decision, decision.reasons) == ("refuse", ("undeclared_destination",))
    assert decision.detail["pointer"] == "/order_id"


def test_a_tool_declared_sends_out_may_take_a_destination(shop):
    history = shop.new_history("s")
    desk = {"agent": "desk", "origins": {"order_id": "typed", "email": "typed"}}
    shop.record(history, {"tool": "charge_card", **desk, "arguments": {"order_id": "4411"}}, {})
    call = {
        "tool": "send_receipt",
        **desk,
        "arguments": {"order_id": "4411", "email": "a@b.example"},
    }
    decision = shop.check(call, session=history)
    assert decision.decision == "confirm"
    assert decision.reasons == ("irreversible_pivot",)


def test_without_the_destinations_check_a_url_gets_through(shop):
    call = refund(arguments={"order_id": "https://refunds.invalid/4411"})
    decision = shop.check(call, session=shop.new_history("s"), checks=all_but("destinations"))
    assert decision.decision == "confirm"


# -- step 5
# -----------------------------------------------------------------------------------------


def charge(order_id: str = "4411") -> dict:
    return {
        "tool": "charge_card",
        "agent": "desk",
        "arguments": {"order_id": order_id, "amount": 40.0},
        "origins": TYPED,
    }


def looked_up(shop, order_id: str = "4411", card: str = "visa-0042"):
    history = shop.new_history("s")
    result = {"order_id": order_id, "status": "paid", "card": card}
    shop.record(
        history, {"tool": "get_order", "agent": "desk", "arguments": {"order_id": order_id}}, result
    )
    return history


def test_a_tool_declared_after_get_order_is_refused_before_any_get_order_ran(shop):
    decision = shop.check(charge(), session=shop.new_history("s"))
    assert (decision.decision, decision.reasons) == ("refuse", ("order_rule",))
    assert decision.rule == "after get_order"
    assert decision.detail["rule"] == "after get_order"


def test_an_after_rule_bound_to_the_result_needs_the_same_order(shop):
    history = looked_up(shop, "4412")
    assert shop.check(charge("4411"), session=history).reasons == ("order_rule",)
    assert shop.check(charge("4412"), session=history).decision == "confirm"


def test_a_not_after_rule_refuses_once_the_other_tool_ran(lab):
    catalogue = lab.catalogue
    data = {
        "tools": [
            {"name": "close", "kind": "write"},
            {"name": "edit", "kind": "write", "not_after": ["close"]},
        ]
    }
    check = ToolCheck(data, key=KEY)
    history = check.new_history("s")
    assert check.check({"tool": "edit"}, session=history).reasons == ("write",)
    check.record(history, {"tool": "close"}, None)
    decision = check.check({"tool": "edit"}, session=history)
    assert decision.reasons == ("order_rule",) and decision.rule == "not_after close"
    del catalogue


def test_at_most_counts_the_calls_of_the_session(lab):
    check = ToolCheck({"tools": [{"name": "ping", "kind": "read", "at_most": 2}]}, key=KEY)
    history = check.new_history("s")
    for _ in range(2):
        assert check.check({"tool": "ping"}, session=history).decision == "allow"
        check.record(history, {"tool": "ping"}, "pong")
    decision = check.check({"tool": "ping"}, session=history)
    assert decision.reasons == ("order_rule",) and decision.rule == "at_most 2"


def test_without_the_order_check_the_refund_runs_before_the_lookup(shop):
    decision = shop.check(charge(), session=shop.new_history("s"), checks=all_but("order"))
    assert decision.reasons != ("order_rule",)


# -- step 6 and 12
# ----------------------------------------------------------------------------------


def charged(shop):
    history = looked_up(shop)
    shop.record(history, charge(), {"charged": 40.0})
    return history


def undo(amount: float = 40.0) -> dict:
    return {**refund(arguments={"amount": amount}), "compensation_of": 1, "origins": {}}


def test_the_declared_undo_of_a_step_that_ran_is_allowed_as_compensation(shop):
    decision = shop.check(undo(), session=charged(shop))
    assert (decision.decision, decision.reasons) == ("allow", ("compensation",))


def test_an_undo_sent_a_second_time_is_refused_as_spent(shop):
    history = charged(shop)
    shop.record(history, undo(), {"refunded": 40.0})
    decision = shop.check(undo(), session=history)
    assert (decision.decision, decision.reasons) == ("refuse", ("compensation_spent",))


def test_an_undo_with_other_values_than_its_step_is_refused_as_mismatch(shop):
    decision = shop.check(undo(amount=400.0), session=charged(shop))
    assert (decision.decision, decision.reasons) == ("refuse", ("compensation_mismatch",))
    assert decision.detail["argument"] == "amount"


def test_an_undo_of_a_step_that_did_not_run_or_has_another_undo_is_a_mismatch(shop):
    history = charged(shop)
    assert shop.check({**undo(), "compensation_of": 7}, session=history).reasons == (
        "compensation_mismatch",
    )
    assert shop.check({**undo(), "compensation_of": 0}, session=history).reasons == (
        "compensation_mismatch",
    )


def test_without_the_undo_check_an_undo_is_an_ordinary_write(shop):
    decision = shop.check(undo(amount=400.0), session=charged(shop), checks=all_but("undo"))
    assert decision.decision == "confirm"


# -- step 7
# -----------------------------------------------------------------------------------------


def test_a_charge_is_refused_until_the_order_showed_a_card(shop):
    history = looked_up(shop, card="")
    decision = shop.check(charge(), session=history)
    assert (decision.decision, decision.reasons) == ("refuse", ("condition_failed",))
    assert decision.detail["step"] == 7


def test_the_tools_own_checks_never_apply_to_an_undo(lab):
    history = lab.new_history("s")
    lab.record(history, {"tool": "get_order", "arguments": {"order_id": "A1"}}, {})
    over = {"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 500}}
    assert lab.check(over, session=history).reasons == ("condition_failed",)
    lab.record(history, {"tool": "cancel_refund", "arguments": {"refund_id": "R1"}}, {})


def test_without_your_rules_the_tools_own_checks_do_not_run(shop):
    history = looked_up(shop, card="")
    decision = shop.check(charge(), session=history, checks=all_but("your_rules"))
    assert decision.decision == "confirm"


# -- step 9 and 11 (outside content) ---------------------------------------------------------------


def inbox_read(check: ToolCheck):
    history = check.new_history("s")
    check.record(history, {"tool": "read_inbox", "agent": "desk", "arguments": {}}, [])
    return history


def test_under_taint_policy_refuse_a_refund_after_reading_the_inbox_is_refused(shop_file):
    check = ToolCheck(shop_file.catalogue, key=KEY, settings={"taint_policy": "refuse"})
    decision = check.check(refund(), session=inbox_read(check))
    assert (decision.decision, decision.reasons) == ("refuse", ("tainted_call",))
    assert decision.detail["labels"] == ["email"]


def test_under_taint_policy_confirm_the_same_refund_is_confirmed_as_tainted(shop):
    decision = shop.check(refund(), session=inbox_read(shop))
    assert (decision.decision, decision.reasons) == ("confirm", ("tainted_call",))


def test_a_label_on_the_call_itself_taints_it(shop):
    decision = shop.check({**refund(), "labels": ["web"]}, session=shop.new_history("s"))
    assert decision.reasons == ("tainted_call",)


def test_a_write_that_requires_less_trust_is_not_tainted_by_a_trusted_label():
    data = {"tools": [{"name": "note", "kind": "write", "requires_trust": "internal"}]}
    check = ToolCheck(data, key=KEY, settings={"label_trust": {"crm": "internal"}})
    history = check.new_history("s")
    assert check.check({"tool": "note", "labels": ["crm"]}, session=history).reasons == ("write",)
    assert check.check({"tool": "note", "labels": ["web"]}, session=history).reasons == (
        "tainted_call",
    )


def test_without_the_outside_content_check_a_tainted_refund_is_an_ordinary_write(shop_file):
    check = ToolCheck(shop_file.catalogue, key=KEY, settings={"taint_policy": "refuse"})
    decision = check.check(refund(), session=inbox_read(check), checks=all_but("outside_content"))
    assert decision.reasons == ("write",)


# -- step 10
# ----------------------------------------------------------------------------------------


def test_the_same_refund_with_the_token_the_person_approved_is_allowed_as_confirmed(shop):
    history = shop.new_history("s")
    token = shop.issue_token(refund(), session=history, now=NOW)
    decision = shop.check(refund(), session=history, token=token, now=NOW)
    assert (decision.decision, decision.reasons) == ("allow", ("confirmed",))


def test_a_token_for_another_amount_is_refused_as_a_mismatch_naming_the_arguments(shop):
    history = shop.new_history("s")
    token = shop.issue_token(refund(), session=history, now=NOW)
    decision = shop.check(refund(arguments={"amount": 30.0}), session=history, token=token, now=NOW)
    assert (decision.decision, decision.reasons) == ("refuse", ("token_mismatch",))
    assert decision.detail["mismatch"] == ["arguments"]


def test_a_token_is_spent_once_the_history_moves_on(shop):
    history = shop.new_history("s")
    token = shop.issue_token(refund(), session=history, now=NOW)
    shop.record(history, refund(), {"refunded": 40.0})
    decision = shop.check(refund(), session=history, token=token, now=NOW)
    assert decision.reasons == ("token_mismatch",)
    assert decision.detail["mismatch"] == ["history"]


def test_a_token_from_another_session_or_tool_is_refused(shop):
    token = shop.issue_token(refund(), session=shop.new_history("one"), now=NOW)
    decision = shop.check(refund(), session=shop.new_history("two"), token=token, now=NOW)
    assert decision.detail["mismatch"] == ["session"]


def test_an_expired_token_is_refused_as_expired(shop):
    history = shop.new_history("s")
    token = shop.issue_token(refund(), session=history, now=NOW, ttl=60)
    later = NOW + dt.timedelta(seconds=61)
    decision = shop.check(refund(), session=history, token=token, now=later)
    assert (decision.decision, decision.reasons) == ("refuse", ("token_expired",))


def test_a_token_that_is_not_ours_is_refused_as_invalid(shop):
    history = shop.new_history("s")
    token = shop.issue_token(refund(), session=history, now=NOW)
    body, mac = token.split(".")[1:]
    forged = f"stw1.{body}.{mac[:-2]}AA"
    for bad in (forged, "nonsense", "stw1.x.y", ""):
        assert shop.check(refund(), session=history, token=bad, now=NOW).reasons == (
            "token_invalid",
        )


def test_a_token_never_overrides_an_earlier_refusal(shop):
    history = shop.new_history("s")
    token = shop.issue_token(refund(arguments={"note": "x"}), session=history, now=NOW)
    decision = shop.check(refund(arguments={"note": "x"}), session=history, token=token, now=NOW)
    assert decision.reasons == ("argument_schema",)


# -- step 11
# ----------------------------------------------------------------------------------------


def test_a_refund_whose_amount_the_model_wrote_is_confirmed_for_argument_origin(shop):
    call = {**refund(), "origins": {"order_id": "typed", "amount": "model"}}
    decision = shop.check(call, session=shop.new_history("s"))
    assert (decision.decision, decision.reasons) == ("confirm", ("argument_origin: amount",))
    assert decision.detail["arguments"]["amount"] == {"value": 40.0, "origin": "model"}


def test_the_same_amount_typed_by_the_person_is_confirmed_for_write(shop):
    decision = shop.check(refund(), session=shop.new_history("s"))
    assert (decision.decision, decision.reasons) == ("confirm", ("write",))


def test_an_argument_with_no_origin_counts_as_written_by_the_model(shop):
    call = {**refund(), "origins": {}}
    decision = shop.check(call, session=shop.new_history("s"))
    assert decision.reasons == ("argument_origin: amount", "argument_origin: order_id")


def test_every_reason_a_write_needs_a_person_comes_together():
    data = {
        "tools": [
            {
                "name": "wire",
                "kind": "write",
                "irreversible": True,
                "parameters": {
                    "type": "object",
                    "properties": {"memo": {}, "to_iban": {"type": "string"}},
                },
            }
        ]
    }
    check = ToolCheck(data, key=KEY)
    call = {"tool": "wire", "arguments": {"memo": "x", "to_iban": "DE00"}, "labels": ["web"]}
    decision = check.check(call, session=check.new_history("s"))
    assert decision.reasons == (
        "argument_origin: memo",
        "argument_origin: to_iban",
        "tainted_call",
        "irreversible_pivot",
        "schema_partial",
    )


def test_without_the_grounded_check_origins_are_not_asked_about(shop):
    call = {**refund(), "origins": {}}
    decision = shop.check(call, session=shop.new_history("s"), checks=all_but("grounded"))
    assert decision.reasons == ("write",)


def test_a_secret_argument_is_never_shown_to_the_person():
    data = {
        "tools": [
            {
                "name": "pay",
                "kind": "write",
                "parameters": {"type": "object", "properties": {"card": {"type": "string"}}},
                "secret": ["card"],
            }
        ]
    }
    check = ToolCheck(data, key=KEY)
    decision = check.check(
        {"tool": "pay", "arguments": {"card": "4111-1111"}}, session=check.new_history("s")
    )
    assert "4111" not in str(decision.to_dict())


# -- step 13
# ----------------------------------------------------------------------------------------


def test_a_read_nothing_held_back_is_allowed(shop):
    call = {"tool": "get_order", "agent": "desk", "arguments": {"order_id": "4411"}}
    decision = shop.check(call, session=shop.new_history("s"))
    assert (decision.decision, decision.reasons) == ("allow", ("allow",))
    assert decision.to_dict() == {
        "decision": "allow",
        "reasons": ["allow"],
        "detail": {"step": 13},
        "rule": None,
    }


# -- malformed calls and configuration -------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        None,
        "refund",
        {"tool": 3},
        {"tool": "refund_card", "arguments": ["4411"]},
        {"tool": "refund_card", "arguments": {"amount": float("nan")}},
        {"tool": "refund_card", "arguments": {"x": object()}},
        {"tool": "refund_card", "origins": ["typed"]},
        {"tool": "refund_card", "labels": "web"},
        {"tool": "refund_card", "compensation_of": -1},
        {"tool": "refund_card", "compensation_of": True},
        {"tool": "refund_card", "plan": {"steps": []}},
    ],
)
def test_a_malformed_call_is_refused_never_raised(shop, call):
    decision = shop.check(call, session=shop.new_history("s"))
    assert (decision.decision, decision.reasons) == ("refuse", ("malformed_call",))


def test_an_unknown_check_name_is_a_configuration_error(shop):
    from guard.engine import UnknownCheck

    with pytest.raises(UnknownCheck):
        shop.check(refund(), session=shop.new_history("s"), checks=["adress"])


def test_checks_that_cannot_be_switched_off_run_even_when_not_listed(shop):
    decision = shop.check(
        {"tool": "delete_order", "agent": "billing"}, session=shop.new_history("s"), checks=[]
    )
    assert decision.reasons == ("unknown_tool",)
    assert shop.check(refund(), session=shop.new_history("s"), checks=[]).reasons == ("write",)


def test_the_settings_may_switch_checks_off_by_default(shop_file):
    check = ToolCheck(shop_file.catalogue, key=KEY, settings={"checks": ["order"]})
    call = refund(arguments={"note": "x"})
    decision = check.check(call, session=check.new_history("s"))
    assert (decision.decision, decision.reasons) == ("confirm", ("schema_partial",))


def test_an_error_inside_the_check_refuses(shop, monkeypatch):
    import guard.engine.check as module

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(module, "validate_arguments", broken)
    decision = shop.check(refund(), session=shop.new_history("s"))
    assert (decision.decision, decision.reasons) == ("refuse", ("check_error",))
    assert "boom" not in str(decision.to_dict())


# -- the admission chain
# -----------------------------------------------------------------------------


def test_a_withdrawn_tool_is_refused_even_with_every_check_switched_off(lab):
    decision = lab.check(
        {"tool": "old_refund", "arguments": {}}, session=lab.new_history("s"), checks=[]
    )
    assert (decision.decision, decision.reasons) == ("refuse", ("withdrawn",))


PLAN = {
    "id": "p1",
    "steps": [
        {"tool": "get_order", "arguments": {"order_id": "A1"}},
        {"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 20}},
    ],
}


def planned(lab, call, history, token=None):
    token = token or lab.issue_plan_token(PLAN, session=history, now=NOW)
    return {
        **call,
        "plan": PLAN,
        "plan_token": token,
        "origins": {"order_id": "typed", "amount": "typed"},
    }


def test_an_approved_plan_runs_its_steps_in_order_with_their_values(lab):
    history = lab.new_history("s")
    first = planned(lab, PLAN["steps"][0], history)
    assert lab.check(first, session=history, now=NOW).decision == "allow"
    second = planned(lab, PLAN["steps"][1], history)
    out_of_order = lab.check(second, session=history, now=NOW)
    assert (out_of_order.decision, out_of_order.reasons) == ("refuse", ("off_plan",))
    lab.record(history, first, {"order_id": "A1"})
    assert lab.check(second, session=history, now=NOW).reasons == ("write",)
    changed = planned(
        lab, {"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 900}}, history
    )
    assert lab.check(changed, session=history, now=NOW).reasons == ("off_plan",)
    lab.record(history, second, {"refund_id": "R1"})
    one_too_many = lab.check(second, session=history, now=NOW)
    assert one_too_many.reasons == ("off_plan",)
    assert one_too_many.detail["problem"] == "every step of the plan already ran"


def test_a_plan_without_a_valid_approval_or_naming_another_step_is_refused(lab):
    history = lab.new_history("s")
    forged = planned(lab, PLAN["steps"][0], history, token="stw1.e30.AAAA")
    assert lab.check(forged, session=history, now=NOW).reasons == ("off_plan",)
    other_session = lab.issue_plan_token(PLAN, session="another", now=NOW)
    stolen = planned(lab, PLAN["steps"][0], history, token=other_session)
    assert lab.check(stolen, session=history, now=NOW).reasons == ("off_plan",)
    skipped = {**planned(lab, PLAN["steps"][0], history), "plan_step": 1}
    assert lab.check(skipped, session=history, now=NOW).reasons == ("off_plan",)
    later = NOW + dt.timedelta(hours=1)
    assert lab.check(
        planned(lab, PLAN["steps"][0], history), session=history, now=later
    ).reasons == ("off_plan",)


def test_without_the_plan_step_check_a_changed_step_gets_through(lab):
    history = lab.new_history("s")
    lab.record(history, {"tool": "get_order", "arguments": {"order_id": "A1"}}, {})
    changed = planned(
        lab, {"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 90}}, history
    )
    decision = lab.check(changed, session=history, now=NOW, checks=sorted(NAMES - {"plan_step"}))
    assert decision.reasons == ("write",)


# -- recording and the one-call helper
# ---------------------------------------------------------------


def test_recording_a_call_keeps_its_agent_origins_labels_and_plan_step(shop):
    history = shop.new_history("s")
    entry = shop.record(
        history, {"tool": "read_inbox", "agent": "desk", "arguments": {"limit": 1}}, []
    )
    assert entry.content == {
        "tool": "read_inbox",
        "agent": "desk",
        "arguments": {"limit": 1},
        "result": [],
        "labels": ["email"],
    }


def test_check_call_decides_one_call_without_keeping_a_tool_check(shop_file):
    from guard.engine import check_call

    history = ToolCheck(shop_file.catalogue, key=KEY).new_history("s")
    decision = check_call(refund(), catalogue=shop_file.catalogue, key=KEY, session=history)
    assert decision.reasons == ("write",)
