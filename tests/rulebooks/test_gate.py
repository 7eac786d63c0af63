"""The gate: how a compiled record decides one call (step 8 of the tool check)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from rulebooks.compiler import (
    GateAnswer,
    RulebookNotHeld,
    compile_colang,
    compile_rule_sheet,
    gate,
)
from rulebooks.compiler.reference import reference_gate

from .conftest import SHOP

CALL = {"order_id": "4411", "amount": 40.0}


def decide(source: str, tool: str = "refund_card", **kwargs):
    record = compile_colang(source)
    kwargs.setdefault("arguments", CALL)
    kwargs.setdefault("facts", {})
    answer = gate(record, tool=tool, **kwargs)
    assert answer == reference_gate(record, tool=tool, **kwargs)
    return answer


# -- the spec's shop example ----------------------------------------------------------------


def test_shop_refund_of_an_unpaid_order_is_refused_by_the_refunds_flow() -> None:
    record = compile_colang(SHOP)
    answer = gate(record, tool="refund_card", arguments=CALL, facts={"order_paid": False})
    assert answer is not None
    assert answer.decision == "refuse"
    assert answer.reasons == ["refuse"]
    assert answer.detail["flow"] == "refunds"
    assert answer.detail["line"] == 7
    assert answer.detail["otherwise"] == {"bot": "refuse", "line": 10}


def test_shop_refund_of_a_paid_order_passes_the_rulebook() -> None:
    record = compile_colang(SHOP)
    answer = gate(record, tool="refund_card", arguments=CALL, facts={"order_paid": True})
    assert answer == GateAnswer("pass", [], {"flow": "refunds", "line": 8, "via": []})


def test_a_fact_nobody_reports_is_false_so_the_refund_is_refused() -> None:
    answer = decide(SHOP, facts={})
    assert answer.decision == "refuse"
    assert answer.reasons == ["refuse"]


def test_a_tool_no_flow_governs_gets_no_opinion() -> None:
    assert decide(SHOP, tool="get_order", arguments={"order_id": "4411"}) is None


def test_gate_answer_is_a_frozen_dataclass_with_plain_data() -> None:
    answer = decide(SHOP)
    with pytest.raises(dataclasses.FrozenInstanceError):
        answer.decision = "allow"  # type: ignore[misc]
    assert json.loads(json.dumps(answer.to_dict()))["decision"] == "refuse"


def test_bot_execute_names_the_same_tool_call_as_execute() -> None:
    source = SHOP.replace("execute refund_card", "bot execute_refund_card")
    assert decide(source, facts={"order_paid": False}).reasons == ["refuse"]
    assert decide(source, facts={"order_paid": True}).decision == "pass"


def test_any_other_bot_line_governs_no_tool() -> None:
    source = SHOP.replace("execute refund_card", "bot refund card")
    assert decide(source) is None


# -- routes ---------------------------------------------------------------------------------

STOP = """\
define flow refunds
  user ask refund
  if not $order_paid
    bot refuse unpaid
    stop
  execute refund_card
"""


def test_a_stop_in_a_branch_guards_every_later_tool_call() -> None:
    answer = decide(STOP, facts={"order_paid": False})
    assert answer.decision == "refuse"
    assert answer.reasons == ["refuse unpaid"]
    assert answer.detail["line"] == 3
    assert decide(STOP, facts={"order_paid": True}).decision == "pass"


def test_a_guard_in_a_subflow_guards_its_caller() -> None:
    source = """\
define subflow check paid
  if not $order_paid
    bot refuse
    stop

define flow refunds
  user ask refund
  do check paid
  execute refund_card
"""
    answer = decide(source, facts={"order_paid": False})
    assert answer.decision == "refuse"
    assert answer.detail["flow"] == "check paid"
    assert decide(source, facts={"order_paid": True}).decision == "pass"


def test_a_return_in_a_subflow_lets_its_caller_carry_on() -> None:
    source = """\
define subflow maybe greet
  if $new_customer
    bot welcome
    return
  bot welcome back

define flow refunds
  user ask refund
  do maybe greet
  execute refund_card
"""
    assert decide(source, facts={"new_customer": True}).decision == "pass"
    assert decide(source, facts={"new_customer": False}).decision == "pass"


def test_the_tool_runs_when_any_route_to_it_holds() -> None:
    source = (
        SHOP + "\ndefine flow manager refunds\n  user ask manager refund\n  execute refund_card\n"
    )
    assert decide(source, facts={"order_paid": False}).decision == "pass"


def test_the_first_route_in_file_order_names_the_refusal() -> None:
    source = SHOP + (
        "\ndefine flow vip refunds\n  user ask vip refund\n  if $vip\n"
        "    execute refund_card\n  else\n    bot not vip\n"
    )
    answer = decide(source, facts={})
    assert answer.reasons == ["refuse"]
    assert answer.detail["flow"] == "refunds"


def test_an_argument_the_flow_fixes_must_match_the_call() -> None:
    source = 'define flow r\n  user ask refund\n  execute refund_card(order_id="4411")\n'
    assert decide(source, arguments={"order_id": "4411"}).decision == "pass"
    other = decide(source, arguments={"order_id": "5000"})
    assert other.decision == "refuse"
    assert other.reasons == ["rulebook: r"]
    assert other.detail["argument"] == "order_id"


def test_a_condition_on_a_passed_argument_reads_the_call() -> None:
    source = """\
define flow refunds
  user ask refund
  if $amount > 100
    bot ask manager approval
    stop
  execute refund_card(order_id=$order_id, amount=$amount)
"""
    assert decide(source, arguments={"order_id": "1", "amount": 40}).decision == "pass"
    big = decide(source, arguments={"order_id": "1", "amount": 400})
    assert big.reasons == ["ask manager approval"]
    unknown = decide(source, arguments={"order_id": "1"})
    assert unknown.reasons == ["condition_unknown"]


RESULT = """\
define flow refunds
  user ask refund
  $order = execute get_order(order_id=$order_id)
  if $order.status == "paid"
    execute refund_card(order_id=$order_id)
  else
    bot refuse
"""


def result(order_id: str, status: str) -> dict:
    return {"tool": "get_order", "arguments": {"order_id": order_id}, "result": {"status": status}}


def test_a_condition_on_a_tool_result_reads_the_most_recent_result_for_the_same_order() -> None:
    call = {"order_id": "4411"}
    paid = [result("4411", "pending"), result("4411", "paid")]
    assert decide(RESULT, arguments=call, results=paid).decision == "pass"
    later_pending = [result("4411", "paid"), result("4411", "pending")]
    assert decide(RESULT, arguments=call, results=later_pending).reasons == ["refuse"]


def test_another_orders_result_never_allows_this_refund() -> None:
    answer = decide(RESULT, arguments={"order_id": "4411"}, results=[result("9", "paid")])
    assert answer.decision == "refuse"
    assert answer.reasons == ["condition_unknown"]


def test_a_result_not_there_yet_fails_closed() -> None:
    answer = decide(RESULT, arguments={"order_id": "4411"}, results=[])
    assert answer.reasons == ["condition_unknown"]


def test_a_variable_the_model_writes_fails_closed() -> None:
    source = """\
define flow refunds
  user ask refund
  $approved = ...
  if $approved
    execute refund_card
"""
    answer = decide(source, facts={"approved": True})
    assert answer.reasons == ["condition_unknown"]


def test_when_events_are_left_to_the_conversation() -> None:
    source = """\
define flow charge
  user ask charge
  bot ask confirmation
  when user confirm
    bot execute_charge_card with order_id=$order_id
  else when user deny
    bot cancelled
"""
    answer = decide(source, tool="charge_card", arguments={"order_id": "1"})
    assert answer.decision == "pass"


def test_an_else_if_chain_answers_with_the_branch_that_holds() -> None:
    source = """\
define flow refunds
  user ask refund
  if $order_paid
    execute refund_card
  else if $order_pending
    bot wait for payment
  else
    bot refuse
"""
    assert decide(source, facts={"order_pending": True}).reasons == ["wait for payment"]
    assert decide(source, facts={}).reasons == ["refuse"]


def test_a_flow_without_an_answer_refuses_in_its_own_name() -> None:
    source = "define flow refunds\n  user ask refund\n  if $order_paid\n    execute refund_card\n"
    assert decide(source).reasons == ["rulebook: refunds"]


def test_a_tool_only_an_uncalled_subflow_reaches_is_refused() -> None:
    source = "define subflow never called\n  execute refund_card\n"
    answer = decide(source)
    assert answer.decision == "refuse"
    assert answer.reasons == ["rulebook: unreachable"]


def test_colang_2_actions_govern_their_snake_case_tool() -> None:
    source = """\
flow refunds
  user ask refund
  if $order_paid
    await RefundCardAction(order_id=$order_id)
  else
    bot refuse
"""
    assert decide(source, facts={"order_paid": False}).reasons == ["refuse"]
    assert decide(source, facts={"order_paid": True}).decision == "pass"


# -- rule sheets ----------------------------------------------------------------------------

SHEET = b"""tool,condition,decision,reason,at_most,per,spend
refund_card,not $order_paid,refuse,order_not_paid,,,
refund_card,amount > 100,confirm,manager_approval,,,
refund_card,amount <= 20,allow,small_refund,,,
refund_card,,,,3,day,
refund_card,,confirm,refund_budget,,day,500
"""
USAGE = {"count": {"day": 0}, "spend": {"day": 0}}


def sheet_decide(arguments: dict, facts: dict, usage: dict | None = USAGE, results=()):
    record = compile_rule_sheet(SHEET, filename="rules.csv")
    answer = gate(
        record, tool="refund_card", arguments=arguments, facts=facts, results=results, usage=usage
    )
    assert answer == reference_gate(
        record, tool="refund_card", arguments=arguments, facts=facts, results=results, usage=usage
    )
    return answer


def test_refunds_above_100_need_a_manager() -> None:
    answer = sheet_decide({"amount": 150}, {"order_paid": True})
    assert answer.decision == "confirm"
    assert answer.reasons == ["manager_approval"]
    assert answer.detail["row"] == 3


def test_a_small_refund_is_explicitly_allowed() -> None:
    answer = sheet_decide({"amount": 10}, {"order_paid": True})
    assert answer.decision == "allow"
    assert answer.reasons == ["small_refund"]


def test_a_refund_no_row_speaks_about_passes() -> None:
    assert sheet_decide({"amount": 50}, {"order_paid": True}).decision == "pass"


def test_the_strictest_decision_wins_over_an_allow() -> None:
    answer = sheet_decide({"amount": 10}, {"order_paid": False})
    assert answer.decision == "refuse"
    assert answer.reasons == ["order_not_paid"]


def test_the_fourth_call_in_a_day_limited_to_three_is_refused() -> None:
    usage = {"count": {"day": 3}, "spend": {"day": 0}}
    answer = sheet_decide({"amount": 50}, {"order_paid": True}, usage)
    assert answer.decision == "refuse"
    assert answer.reasons == ["limit_reached"]
    assert answer.detail["rules"][0]["count"] == 3
    usage = {"count": {"day": 2}, "spend": {"day": 0}}
    assert sheet_decide({"amount": 50}, {"order_paid": True}, usage).decision == "pass"


def test_a_limit_without_the_count_it_needs_fails_closed() -> None:
    answer = sheet_decide({"amount": 50}, {"order_paid": True}, usage=None)
    assert answer.decision == "refuse"
    assert answer.reasons == ["usage_unknown", "spend_unknown"]


def test_a_spend_above_the_period_budget_asks_for_a_person() -> None:
    usage = {"count": {"day": 0}, "spend": {"day": 480.0}}
    answer = sheet_decide({"amount": 50}, {"order_paid": True}, usage)
    assert answer.decision == "confirm"
    assert answer.reasons == ["refund_budget"]
    assert answer.detail["rules"][0]["spent"] == 480.0


def test_a_spend_limit_without_an_amount_fails_closed() -> None:
    answer = sheet_decide({}, {"order_paid": True})
    assert answer.decision == "refuse"
    assert "spend_unknown" in answer.reasons


def test_a_condition_the_gate_cannot_read_fires_a_refusing_or_confirming_row() -> None:
    record = compile_rule_sheet(
        b'tool,condition,decision,reason\nrefund_card,results.get_order.status != "paid",'
        b"refuse,unpaid\n",
        filename="r.csv",
    )
    answer = gate(record, tool="refund_card", arguments={}, facts={})
    assert answer is not None and answer.reasons == ["condition_unknown"]
    assert answer.decision == "refuse"


def test_a_condition_the_gate_cannot_read_never_fires_an_allow() -> None:
    record = compile_rule_sheet(
        b"tool,condition,decision,reason\nrefund_card,amount < 20,allow,small\n", filename="r.csv"
    )
    answer = gate(record, tool="refund_card", arguments={}, facts={})
    assert answer is not None and answer.decision == "pass"


# -- records --------------------------------------------------------------------------------


def test_a_malformed_record_is_not_held() -> None:
    with pytest.raises(RulebookNotHeld) as caught:
        gate({"version": "other"}, tool="x", arguments={}, facts={})
    assert caught.value.reason == "rulebook_record_invalid"


def test_a_record_with_an_unknown_condition_node_is_not_held() -> None:
    record = compile_colang(SHOP)
    record["tools"]["refund_card"]["routes"][0]["conditions"][0]["test"] = {"eval": "1"}
    with pytest.raises(RulebookNotHeld):
        gate(record, tool="refund_card", arguments={}, facts={})


def test_two_records_are_decided_each_by_its_own_rules() -> None:
    first = compile_colang(SHOP)
    second = compile_colang(SHOP.replace("bot refuse", "bot refuse politely"))
    facts = {"order_paid": False}
    assert gate(first, tool="refund_card", arguments={}, facts=facts).reasons == ["refuse"]
    assert gate(second, tool="refund_card", arguments={}, facts=facts).reasons == [
        "refuse politely"
    ]
    assert gate(first, tool="refund_card", arguments={}, facts=facts).reasons == ["refuse"]


def test_an_answers_detail_can_be_changed_without_changing_the_next_answer() -> None:
    record = compile_colang(SHOP)
    first = gate(record, tool="refund_card", arguments={}, facts={})
    first.reasons.append("tampered")
    first.detail["flow"] = "tampered"
    first.detail["otherwise"]["bot"] = "tampered"
    again = gate(record, tool="refund_card", arguments={}, facts={})
    assert again.reasons == ["refuse"]
    assert again.detail["flow"] == "refunds"
    assert again.detail["otherwise"] == {"bot": "refuse", "line": 10}
    assert record["tools"]["refund_card"]["routes"][0]["conditions"][0]["otherwise"]["bot"] == (
        "refuse"
    )


@pytest.mark.parametrize("arguments", [None, [], "order 4411"])
def test_malformed_arguments_are_read_as_no_arguments(arguments) -> None:
    record = compile_colang(
        'define flow r\n  user ask refund\n  execute refund_card(order_id="4411")\n'
    )
    answer = gate(record, tool="refund_card", arguments=arguments, facts=None)  # type: ignore[arg-type]
    assert answer is not None and answer.decision == "refuse"


def test_a_tool_name_that_is_not_text_gets_no_opinion() -> None:
    record = compile_colang(SHOP)
    assert gate(record, tool=["refund_card"], arguments={}, facts={}) is None  # type: ignore[arg-type]


def test_the_gate_decides_the_same_from_many_threads_at_once() -> None:
    from concurrent.futures import ThreadPoolExecutor

    records = [compile_colang(SHOP.replace("bot refuse", f"bot refuse {i}")) for i in range(8)]

    def decide_many(i: int) -> set[tuple[str, tuple[str, ...]]]:
        seen = set()
        for n in range(300):
            record = records[(i + n) % len(records)]
            answer = gate(
                record, tool="refund_card", arguments={}, facts={"order_paid": n % 2 == 0}
            )
            expected = "pass" if n % 2 == 0 else f"refuse {(i + n) % len(records)}"
            got = answer.decision if answer.decision == "pass" else answer.reasons[0]
            seen.add((got, (expected,)))
        return seen

    with ThreadPoolExecutor(max_workers=4) as pool:
        for seen in pool.map(decide_many, range(8)):
            assert all(got == expected[0] for got, expected in seen)
