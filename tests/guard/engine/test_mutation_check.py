"""The tool check where mutation testing found a control without a test that catches its removal.

Chapter 45: order rules bound to values of an earlier call (step 5), the rulebook's gate deciding
only the tools its flows govern with the facts it reads (step 8, "Os fatos do rulebook"), a
decision that is a record (its step, check, rule and detail), and a refusal that says why.
"""

from __future__ import annotations

from typing import Any

import pytest

import guard.engine.check as check_module
import rulebooks.compiler as compiler
from guard.engine import HistoryInvalid, MalformedCall, ToolCheck, check_call

from .conftest import KEY, SHOP, lab_catalogue

ORDER = {"type": "object", "properties": {"order_id": {"type": "string"}}}
SHIP = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "carrier": {"type": "string"}},
}
TYPED = {"order_id": "typed", "carrier": "typed"}


def ship(**arguments: Any) -> dict[str, Any]:
    return {"tool": "ship", "arguments": arguments, "origins": TYPED}


# -- step 5: an order rule bound to two values of the same earlier call --------------------------


def bound_shipping() -> ToolCheck:
    bind = {"order_id": "arguments.order_id", "carrier": "result.carrier"}
    data = {
        "tools": [
            {"name": "quote", "kind": "read", "parameters": ORDER},
            {
                "name": "ship",
                "kind": "write",
                "parameters": SHIP,
                "after": [{"tool": "quote", "bind": bind}],
            },
        ]
    }
    return ToolCheck(data, key=KEY)


def quoted(check: ToolCheck, *quotes: tuple[str, str]):
    history = check.new_history("s")
    for order_id, carrier in quotes:
        check.record(
            history,
            {"tool": "quote", "arguments": {"order_id": order_id}},
            {"carrier": carrier},
        )
    return history


def test_an_after_rule_bound_to_two_values_needs_one_earlier_call_with_both():
    check = bound_shipping()
    history = quoted(check, ("A1", "dhl"), ("B2", "ups"))
    assert check.check(ship(order_id="A1", carrier="dhl"), session=history).reasons == ("write",)
    assert check.check(ship(order_id="B2", carrier="ups"), session=history).reasons == ("write",)
    mixed = check.check(ship(order_id="A1", carrier="ups"), session=history)
    assert mixed.reasons == ("order_rule",)
    assert mixed.detail == {
        "step": 5,
        "check": "order",
        "rule": "after quote",
        "bind": {"order_id": "arguments.order_id", "carrier": "result.carrier"},
    }


def test_an_after_rule_bound_to_a_value_the_call_lacks_refuses():
    check = bound_shipping()
    history = quoted(check, ("A1", "dhl"))
    assert check.check(ship(carrier="dhl"), session=history).reasons == ("order_rule",)
    assert check.check(ship(order_id="A1"), session=history).reasons == ("order_rule",)


def test_at_most_refuses_with_how_many_calls_ran():
    check = ToolCheck({"tools": [{"name": "ping", "kind": "read", "at_most": 1}]}, key=KEY)
    history = check.new_history("s")
    check.record(history, {"tool": "ping"}, "pong")
    decision = check.check({"tool": "ping"}, session=history)
    assert (decision.rule, decision.detail) == (
        "at_most 1",
        {"step": 5, "check": "order", "rule": "at_most 1", "ran": 1},
    )


# -- step 8: which tools and which facts the gate reads ------------------------------------------

POLICY = (SHOP / "policy.co").read_text(encoding="utf-8")


def billing(facts: dict[str, Any] | None = None) -> dict[str, Any]:
    tools = [
        {"name": "get_order", "kind": "read", "parameters": ORDER},
        {"name": "get_customer", "kind": "read", "parameters": {"type": "object"}},
        {
            "name": "refund_card",
            "kind": "write",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
            },
        },
    ]
    data: dict[str, Any] = {"tools": tools}
    if facts is not None:
        data["facts"] = facts
    return data


REFUND = {
    "tool": "refund_card",
    "arguments": {"order_id": "4411", "amount": 40.0},
    "origins": {"order_id": "typed", "amount": "typed"},
}


def broken_context():
    raise RuntimeError("database down")


def test_a_tool_no_flow_governs_is_decided_without_the_gate_or_its_facts():
    record = compiler.compile_colang(POLICY, filename="policy.co")
    check = ToolCheck(billing(), key=KEY, rulebook=record)
    read = {"tool": "get_order", "arguments": {"order_id": "4411"}}
    assert check.check(read, session=check.new_history("s"), context=broken_context).reasons == (
        "allow",
    )
    governed = check.check(REFUND, session=check.new_history("s"), context=broken_context)
    assert governed.reasons == ("facts_unavailable",)


def test_a_rulebook_that_reads_no_fact_never_asks_the_application_for_facts():
    record = compiler.compile_rule_sheet(
        b"tool,condition,decision,reason\nrefund_card,amount > 100,confirm,big\n", filename="r.csv"
    )
    check = ToolCheck(billing(), key=KEY, rulebook=record)
    decision = check.check(REFUND, session=check.new_history("s"), context=broken_context)
    assert decision.reasons == ("write",)


def test_only_the_facts_the_rulebook_reads_are_resolved_and_from_their_own_tool():
    facts = {
        "order_paid": {"from": "get_order.status == paid", "same": "order_id"},
        "vip": {"from": "get_customer.vip"},
    }
    record = compiler.compile_colang(POLICY, filename="policy.co")
    check = ToolCheck(billing(facts), key=KEY, rulebook=record)
    history = check.new_history("s")
    check.record(
        history, {"tool": "get_order", "arguments": {"order_id": "4411"}}, {"status": "paid"}
    )
    check.record(history, {"tool": "get_customer", "arguments": {}}, {"vip": True})
    assert check.check(REFUND, session=history).reasons == ("write",)


FACTS = {
    "any_open": {"from": "get_order.status == open"},
    "paid_by_card": {"from": "get_order.status == paid", "same": ["order_id", "card"]},
    "any_paid": {"from": "get_order.status == paid"},
}


def fact_check() -> ToolCheck:
    properties = {"order_id": {"type": "string"}, "card": {"type": "string"}}
    data = {
        "tools": [
            {
                "name": "get_order",
                "kind": "read",
                "parameters": {"type": "object", "properties": properties},
            },
            {
                "name": "refund",
                "kind": "write",
                "parameters": {"type": "object", "properties": properties},
            },
        ],
        "facts": FACTS,
    }
    return ToolCheck(data, key=KEY)


def facts_for(check: ToolCheck, history, arguments: dict[str, Any]) -> dict[str, Any]:
    parsed = check_module.read_call({"tool": "refund", "arguments": arguments})
    part = compiler.resolve_facts(
        FACTS, arguments=arguments, results=check._fact_results(parsed, history)
    )
    assert part == compiler.resolve_facts(FACTS, arguments=arguments, results=history.results)
    return part


def test_a_fact_bound_to_two_arguments_reads_only_the_result_with_both_values():
    check = fact_check()
    history = check.new_history("s")
    for order_id, card, status in (
        ("1", "visa", "paid"),
        ("1", "amex", "open"),
        ("2", "visa", "open"),
    ):
        check.record(
            history,
            {"tool": "get_order", "arguments": {"order_id": order_id, "card": card}},
            {"status": status},
        )
    assert facts_for(check, history, {"order_id": "1", "card": "visa"})["paid_by_card"] is True
    assert facts_for(check, history, {"order_id": "1", "card": "amex"})["paid_by_card"] is False
    assert facts_for(check, history, {"order_id": "2", "card": "amex"})["paid_by_card"] is False
    partial = facts_for(check, history, {"order_id": "1"})
    assert partial["any_open"] is True and partial.get("paid_by_card") is not True
    assert partial["any_paid"] is False  # the latest call of get_order says open


# -- step 8: how a failing or absent rulebook refuses ----------------------------------------------


class Answer:
    def __init__(self, decision: str, reasons: list[str] | None = None, detail: dict | None = None):
        self.decision = decision
        self.reasons = reasons or []
        self.detail = detail or {}


PAY = {"tool": "pay", "arguments": {"amount": 5}, "origins": {"amount": "typed"}}


def with_gate(monkeypatch, lab, answer) -> ToolCheck:
    def gate(record, *, tool, arguments, facts, results, usage):
        if isinstance(answer, Exception):
            raise answer
        return answer

    def resolve_facts(spec, *, arguments, results, reads_outside, context):
        return dict(context or {})

    monkeypatch.setattr(check_module, "_rulebook_api", lambda: (gate, resolve_facts))
    return ToolCheck(lab.catalogue, key=KEY, rulebook={"format": "stand-in"})


def test_a_rulebook_without_its_compiler_refuses_saying_so(monkeypatch, lab):
    def missing():
        raise ImportError("no module named rulebooks")

    monkeypatch.setattr(check_module, "_rulebook_api", missing)
    check = ToolCheck(lab.catalogue, key=KEY, rulebook={"format": "colang-1.0"})
    decision = check.check(PAY, session=check.new_history("s"))
    assert (decision.decision, decision.reasons, decision.rule) == (
        "refuse",
        ("rulebook_unavailable",),
        "your_rules",
    )
    assert decision.detail == {
        "step": 8,
        "check": "your_rules",
        "problem": "the rulebook compiler is not installed",
    }


def test_a_gate_that_fails_refuses_naming_the_error_and_a_code_only_if_it_is_text(monkeypatch, lab):
    class Coded(Exception):
        def __init__(self, code: Any) -> None:
            super().__init__("x")
            self.code = code

    for error, reason in (
        (RuntimeError("x"), "rulebook_error"),
        (Coded(""), "rulebook_error"),
        (Coded(7), "rulebook_error"),
        (Coded("facts_unavailable"), "facts_unavailable"),
    ):
        check = with_gate(monkeypatch, lab, error)
        decision = check.check(PAY, session=check.new_history("s"))
        assert (decision.decision, decision.reasons, decision.rule) == (
            "refuse",
            (reason,),
            "your_rules",
        )
        assert decision.detail == {
            "step": 8,
            "check": "your_rules",
            "error": type(error).__name__,
        }


def test_a_gate_answer_names_its_rule_where_it_has_no_flow(monkeypatch, lab):
    check = with_gate(monkeypatch, lab, Answer("refuse", ["over the limit"], {"rule": "limits"}))
    assert check.check(PAY, session=check.new_history("s")).rule == "limits"


# -- sessions: recording, loading, plans -----------------------------------------------------------


def test_recording_keeps_what_the_executor_reports(lab):
    history = lab.new_history("s")
    call = {
        "tool": "fetch_page",
        "arguments": {"url": "https://example.org"},
        "origins": {"url": "typed"},
        "labels": ["crm"],
    }
    entry = lab.record(history, call, {"status": 200}, took_ms=12)
    assert dict(entry.content) == {
        "tool": "fetch_page",
        "arguments": {"url": "https://example.org"},
        "result": {"status": 200},
        "agent": "assistant",
        "origins": {"url": "typed"},
        "labels": ["crm", "web"],
        "took_ms": 12,
    }


def test_a_call_of_a_tool_the_catalogue_lacks_is_recorded_with_its_own_labels(lab):
    history = lab.new_history("s")
    entry = lab.record(history, {"tool": "retired", "labels": ["email"]}, None)
    assert entry.content["labels"] == ["email"]


def test_each_recorded_step_of_an_approved_plan_carries_its_number(lab):
    history = lab.new_history("s")
    plan = {"id": "p1", "steps": [{"tool": "get_order"}, {"tool": "get_order"}]}
    for step in (0, 1):
        call = {"tool": "get_order", "arguments": {"order_id": "A1"}, "plan": plan}
        entry = lab.record(history, call, {})
        assert entry.content["plan"] == {"id": "p1", "step": step}


def test_a_history_loaded_from_its_json_verifies_against_the_head_the_server_kept(lab):
    history = lab.new_history("s")
    lab.record(history, {"tool": "get_order", "arguments": {"order_id": "A1"}}, {})
    head = history.head
    lab.record(history, {"tool": "get_order", "arguments": {"order_id": "A2"}}, {})
    loaded = lab.load_history(history.to_json(), head=history.head)
    assert len(loaded) == 2 and loaded.head == history.head
    with pytest.raises(HistoryInvalid):
        lab.load_history(history.to_json(), head=head)
    other = ToolCheck(lab.catalogue, key=b"another key that is long enough")
    with pytest.raises(HistoryInvalid):
        other.load_history(history.to_json(), head=history.head)


def test_a_plan_token_is_refused_for_a_plan_without_an_id(lab):
    for plan in ([{"tool": "get_order"}], {"steps": []}, {"id": 7, "steps": []}):
        with pytest.raises(MalformedCall, match=r"^plan: must be `\{id, steps\}`$"):
            lab.issue_plan_token(plan, session="s")


# -- check_call: the one-off form decides as a ToolCheck would -----------------------------------


def test_check_call_passes_the_rulebook_settings_and_options_on():
    catalogue = lab_catalogue()
    session = ToolCheck(catalogue, key=KEY).new_history("s")
    tainted = {**PAY, "labels": ["web"]}
    assert check_call(tainted, catalogue=catalogue, key=KEY, session=session).reasons == (
        "tainted_call",
    )
    refused = check_call(
        tainted, catalogue=catalogue, key=KEY, session=session, settings={"taint_policy": "refuse"}
    )
    assert refused.decision == "refuse"
    sheet = compiler.compile_rule_sheet(
        b"tool,condition,decision,reason\npay,amount > 1,refuse,too much\n", filename="r.csv"
    )
    assert check_call(
        PAY, catalogue=catalogue, key=KEY, session=session, rulebook=sheet
    ).reasons == ("too much",)
    off = check_call(
        PAY, catalogue=catalogue, key=KEY, session=session, rulebook=sheet, checks=["arguments"]
    )
    assert off.reasons == ("write",)


# -- secrets stay out of what a decision shows -------------------------------------------------------


def secret_catalogue() -> dict[str, Any]:
    url = {"type": "string"}
    return {
        "tools": [
            {
                "name": "post_secretly",
                "kind": "sends_out",
                "parameters": {"type": "object", "properties": {"token_url": url, "url": url}},
                "secret": ["token_url"],
            },
            {
                "name": "note",
                "kind": "write",
                "parameters": {"type": "object", "properties": {"key_url": url, "url": url}},
                "secret": ["key_url"],
            },
        ]
    }


def test_a_disallowed_address_in_a_secret_argument_is_not_shown():
    check = ToolCheck(secret_catalogue(), key=KEY)
    call = {"tool": "post_secretly", "arguments": {"token_url": "http://10.0.0.1/k?t=abc"}}
    decision = check.check(call, session=check.new_history("s"))
    assert decision.reasons == ("disallowed_address",)
    assert decision.detail["host"] == "[secret]"
    shown = check.check(
        {"tool": "post_secretly", "arguments": {"url": "http://10.0.0.1/"}},
        session=check.new_history("s"),
    )
    assert shown.detail["host"] == "10.0.0.1"


def test_an_undeclared_destination_in_a_secret_argument_is_not_shown():
    check = ToolCheck(secret_catalogue(), key=KEY)
    hidden = check.check(
        {"tool": "note", "arguments": {"key_url": "https://example.org/k"}},
        session=check.new_history("s"),
    )
    assert (hidden.reasons, hidden.detail["destination"]) == (
        ("undeclared_destination",),
        "[secret]",
    )
    shown = check.check(
        {"tool": "note", "arguments": {"url": "https://example.org/k"}},
        session=check.new_history("s"),
    )
    assert shown.detail["destination"] == "example.org"


def test_an_address_in_a_call_of_an_unknown_tool_is_refused_at_admission():
    check = ToolCheck(secret_catalogue(), key=KEY)
    call = {"tool": "ghost", "arguments": {"url": "http://169.254.169.254/"}}
    decision = check.check(call, session=check.new_history("s"))
    assert (decision.reasons, decision.detail["host"]) == (
        ("disallowed_address",),
        "169.254.169.254",
    )


def test_a_fact_read_from_a_nested_field_reads_that_tools_results():
    facts = {"vip": {"from": "get_customer.profile.vip"}}
    data = billing(facts)
    data["tools"][1]["parameters"] = {"type": "object", "properties": {"id": {"type": "string"}}}
    check = ToolCheck(data, key=KEY)
    history = check.new_history("s")
    check.record(
        history, {"tool": "get_customer", "arguments": {"id": "c1"}}, {"profile": {"vip": True}}
    )
    parsed = check_module.read_call({"tool": "refund_card", "arguments": {}})
    found = compiler.resolve_facts(
        facts, arguments={}, results=check._fact_results(parsed, history)
    )
    assert found == {"vip": True}


# -- outside content, the only agent, not_after bound to a value ---------------------------------


def test_a_write_after_an_outside_tool_ran_is_tainted_even_if_its_entry_carries_no_label():
    data = {
        "tools": [
            {"name": "browse", "kind": "read", "reads_outside": ["web"]},
            {"name": "pay", "kind": "write"},
        ]
    }
    check = ToolCheck(data, key=KEY)
    history = check.new_history("s")
    history.append({"tool": "browse", "arguments": {}, "result": "<html>"})
    decision = check.check({"tool": "pay"}, session=history)
    assert (decision.reasons, decision.detail["labels"]) == (("tainted_call",), ["web"])


def test_with_a_single_agent_a_call_naming_another_agent_is_refused():
    check = ToolCheck(lab_catalogue(), key=KEY)
    call = {"tool": "get_order", "agent": "intruder", "arguments": {"order_id": "A1"}}
    assert check.check(call, session=check.new_history("s")).reasons == ("agent_required",)


def test_a_not_after_rule_bound_to_a_value_refuses_only_after_a_call_with_that_value():
    data = {
        "tools": [
            {"name": "close", "kind": "write", "parameters": ORDER},
            {
                "name": "edit",
                "kind": "write",
                "parameters": ORDER,
                "not_after": [{"tool": "close", "bind": {"order_id": "arguments.order_id"}}],
            },
        ]
    }
    check = ToolCheck(data, key=KEY)
    history = check.new_history("s")
    check.record(history, {"tool": "close", "arguments": {"order_id": "A1"}}, {})
    typed = {"order_id": "typed"}
    other = {"tool": "edit", "arguments": {"order_id": "B2"}, "origins": typed}
    assert check.check(other, session=history).reasons == ("write",)
    closed = check.check({**other, "arguments": {"order_id": "A1"}}, session=history)
    assert (closed.reasons, closed.rule) == (("order_rule",), "not_after close")
    assert closed.detail["bind"] == {"order_id": "arguments.order_id"}
