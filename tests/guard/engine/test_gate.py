"""Step 8, the rulebook's gate: chapter 45's shop example with the real compiler, and more.

Rule sheets, facts, and what each answer of the gate does to the rest of the check.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import guard.engine.check as check_module
import rulebooks.compiler as compiler
from guard.engine import ToolCheck, load_catalogue
from guard.engine.checks import NAMES

from .conftest import KEY, SHOP, TYPED

REFUND = {
    "tool": "refund_card",
    "agent": "billing",
    "arguments": {"order_id": "4411", "amount": 40.0},
    "origins": TYPED,
}


@pytest.fixture(scope="module")
def shop_record():
    return compiler.compile_colang(
        (SHOP / "policy.co").read_text(encoding="utf-8"), filename="policy.co"
    )


def chapter_catalogue(shop_file):
    """The shop as the chapter's rulebook section writes it: two desks and their tools, no
    `facts:`."""
    return load_catalogue({key: value for key, value in shop_file.data.items() if key != "facts"})


def test_the_chapters_shop_example_prints_its_two_lines(shop_file, shop_record):
    check = ToolCheck(chapter_catalogue(shop_file), key=KEY, rulebook=shop_record)
    billing = check.new_history("billing-1")
    lines = []
    for paid in (False, True):
        decision = check.check(REFUND, session=billing, context={"order_paid": paid})
        flow = decision.detail.get("flow", "")
        lines.append(
            f"order_paid {paid}: {decision.decision} {', '.join(decision.reasons)} {flow}".rstrip()
        )
    assert lines == ["order_paid False: refuse refuse refunds", "order_paid True: confirm write"]


def test_the_unpaid_refund_is_refused_by_the_refunds_flow_with_its_line(shop_file, shop_record):
    check = ToolCheck(chapter_catalogue(shop_file), key=KEY, rulebook=shop_record)
    decision = check.check(REFUND, session=check.new_history("s"), context={"order_paid": False})
    assert (decision.decision, decision.reasons, decision.rule) == (
        "refuse",
        ("refuse",),
        "refunds",
    )
    assert decision.detail["flow"] == "refunds" and decision.detail["step"] == 8
    assert isinstance(decision.detail["line"], int)


def test_a_fact_nobody_reports_is_false_so_the_flow_refuses(shop_file, shop_record):
    check = ToolCheck(chapter_catalogue(shop_file), key=KEY, rulebook=shop_record)
    assert check.check(REFUND, session=check.new_history("s")).reasons == ("refuse",)


def test_without_your_rules_the_gate_is_not_consulted(shop_file, shop_record):
    check = ToolCheck(chapter_catalogue(shop_file), key=KEY, rulebook=shop_record)
    checks = sorted(NAMES - {"your_rules"})
    decision = check.check(REFUND, session=check.new_history("s"), checks=checks)
    assert decision.reasons == ("write",)


def get_order(check, history, order_id: str, status: str):
    call = {"tool": "get_order", "agent": "desk", "arguments": {"order_id": order_id}}
    check.record(history, call, {"order_id": order_id, "status": status, "card": "visa"})


def test_with_the_agent_files_facts_the_refund_reads_order_paid_from_get_order(
    shop_file, shop_record
):
    check = ToolCheck(shop_file.catalogue, key=KEY, rulebook=shop_record)
    history = check.new_history("s")
    get_order(check, history, "4411", "open")
    assert check.check(REFUND, session=history).reasons == ("refuse",)
    get_order(check, history, "4411", "paid")
    assert check.check(REFUND, session=history).reasons == ("write",)


def test_one_orders_status_never_allows_another_orders_refund(shop_file, shop_record):
    check = ToolCheck(shop_file.catalogue, key=KEY, rulebook=shop_record)
    history = check.new_history("s")
    get_order(check, history, "4412", "paid")
    assert check.check(REFUND, session=history).reasons == ("refuse",)


def test_where_code_and_file_report_the_same_fact_the_file_wins(shop_file, shop_record):
    check = ToolCheck(shop_file.catalogue, key=KEY, rulebook=shop_record)
    decision = check.check(REFUND, session=check.new_history("s"), context={"order_paid": True})
    assert decision.reasons == ("refuse",)


def test_a_context_function_that_fails_refuses_with_the_compilers_code(shop_file, shop_record):
    check = ToolCheck(chapter_catalogue(shop_file), key=KEY, rulebook=shop_record)

    def broken():
        raise RuntimeError("database down")

    decision = check.check(REFUND, session=check.new_history("s"), context=broken)
    assert (decision.decision, decision.reasons) == ("refuse", ("facts_unavailable",))


def sheet_check(rows: str) -> ToolCheck:
    record = compiler.compile_rule_sheet(rows.encode(), filename="rules.csv")
    data = {
        "tools": [
            {
                "name": "refund_card",
                "kind": "write",
                "parameters": {
                    "type": "object",
                    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
                },
            }
        ]
    }
    return ToolCheck(data, key=KEY, rulebook=record)


SHEET = (
    "tool,condition,decision,reason\n"
    "refund_card,amount > 100,confirm,refunds above 100 need a manager\n"
    "refund_card,amount <= 100,allow,small refunds run\n"
    "refund_card,amount > 1000,refuse,refunds above 1000 are not ours\n"
)


def call(amount: float, **extra: Any) -> dict:
    return {
        "tool": "refund_card",
        "arguments": {"order_id": "A1", "amount": amount},
        "origins": {"order_id": "typed", "amount": "typed"},
        **extra,
    }


def test_a_rule_sheets_confirm_asks_for_a_person_with_its_reason_instead_of_write():
    check = sheet_check(SHEET)
    decision = check.check(call(500), session=check.new_history("s"))
    assert (decision.decision, decision.reasons) == (
        "confirm",
        ("refunds above 100 need a manager",),
    )
    assert decision.rule == "row 2" and decision.detail["gate"]["row"] == 2


def test_a_rule_sheets_refuse_refuses_with_its_reason():
    check = sheet_check(SHEET)
    decision = check.check(call(5000), session=check.new_history("s"))
    assert (decision.decision, decision.reasons) == ("refuse", ("refunds above 1000 are not ours",))


def test_a_rule_sheets_allow_lets_a_typed_write_run_without_a_person():
    check = sheet_check(SHEET)
    decision = check.check(call(20), session=check.new_history("s"))
    assert (decision.decision, decision.reasons) == ("allow", ("allow",))
    assert decision.detail["step"] == 13 and decision.detail["gate"]


def test_an_allowed_write_still_waits_for_a_person_for_any_reason_other_than_write():
    check = sheet_check(SHEET)
    history = check.new_history("s")
    model = check.check(call(20, origins={"order_id": "typed"}), session=history)
    assert (model.decision, model.reasons) == ("confirm", ("argument_origin: amount",))
    tainted = check.check(call(20, labels=["web"]), session=history)
    assert tainted.reasons == ("tainted_call",)


def test_an_allow_never_overrides_an_earlier_step():
    check = sheet_check(SHEET)
    decision = check.check(
        call(20, arguments={"order_id": "A1", "amount": 20, "x": 1}), session=check.new_history("s")
    )
    assert decision.reasons == ("argument_schema",)
    refusing = ToolCheck(
        check.catalogue, key=KEY, rulebook=check.rulebook, settings={"taint_policy": "refuse"}
    )
    assert refusing.check(call(20, labels=["web"]), session=refusing.new_history("s")).reasons == (
        "tainted_call",
    )


# -- each answer of the gate, with a stand-in gate
# ---------------------------------------------------


class Answer:
    def __init__(self, decision: str, reasons: list[str] | None = None, detail: dict | None = None):
        self.decision = decision
        self.reasons = reasons or []
        self.detail = detail or {}


@pytest.fixture
def stand_in(monkeypatch, lab):
    seen: dict[str, Any] = {}

    def install(answer):
        def gate(record, *, tool, arguments, facts, results, usage):
            seen.update(tool=tool, facts=facts, results=results, usage=usage)
            if isinstance(answer, Exception):
                raise answer
            return answer

        def resolve_facts(spec, *, arguments, results, reads_outside, context):
            return dict(context or {})

        monkeypatch.setattr(check_module, "_rulebook_api", lambda: (gate, resolve_facts))
        return ToolCheck(lab.catalogue, key=KEY, rulebook={"format": "stand-in"})

    install.seen = seen
    return install


PAY = {"tool": "pay", "arguments": {"amount": 5}, "origins": {"amount": "typed"}}
READ = {"tool": "get_order", "arguments": {"order_id": "A1"}, "origins": {"order_id": "typed"}}


def test_a_gate_with_no_opinion_leaves_the_write_to_step_11(stand_in):
    for answer in (None, Answer("pass")):
        check = stand_in(answer)
        assert check.check(PAY, session=check.new_history("s")).reasons == ("write",)


def test_a_gate_confirm_without_reasons_is_gate_clarify_even_on_a_read(stand_in):
    check = stand_in(Answer("confirm", [], {"flow": "ask"}))
    decision = check.check(READ, session=check.new_history("s"))
    assert (decision.decision, decision.reasons, decision.rule) == (
        "confirm",
        ("gate_clarify",),
        "ask",
    )


def test_a_gate_confirm_joins_the_other_reasons_of_step_11(stand_in):
    check = stand_in(Answer("confirm", ["manager"]))
    decision = check.check({**PAY, "origins": {}}, session=check.new_history("s"))
    assert decision.reasons == ("manager", "argument_origin: amount")


def test_a_gate_that_fails_or_answers_nonsense_refuses(stand_in):
    class Coded(Exception):
        code = "rulebook_not_held"

    cases = [
        (RuntimeError("x"), "rulebook_error"),
        (Coded(), "rulebook_not_held"),
        (Answer("maybe"), "rulebook_error"),
    ]
    for answer, reason in cases:
        check = stand_in(answer)
        decision = check.check(PAY, session=check.new_history("s"))
        assert (decision.decision, decision.reasons) == ("refuse", (reason,))


def test_a_rulebook_without_its_compiler_refuses(monkeypatch, lab):
    def missing():
        raise ImportError("no module named rulebooks")

    monkeypatch.setattr(check_module, "_rulebook_api", missing)
    check = ToolCheck(lab.catalogue, key=KEY, rulebook={"format": "colang-1.0"})
    assert check.check(PAY, session=check.new_history("s")).reasons == ("rulebook_unavailable",)


def test_the_gate_is_given_the_usage_and_the_whole_history_without_a_copy(stand_in):
    check = stand_in(None)
    history = check.new_history("s")
    check.record(history, READ, {"order_id": "A1"})
    check.check(PAY, session=history, usage={"count": {"day": 1}})
    assert stand_in.seen["results"] is history.results
    assert stand_in.seen["usage"] == {"count": {"day": 1}}


# -- facts from a part of the history give what the whole history gives
# ------------------------------


SPEC = {
    "order_paid": {"from": "get_order.status == paid", "same": "order_id"},
    "card_on_file": {"from": "get_order.card", "same": "order_id"},
    "any_open": {"from": "get_order.status == open"},
}


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["1", "2", "3"]),
            st.sampled_from(["open", "paid"]),
            st.sampled_from(["", "visa"]),
        ),
        max_size=12,
    ),
    st.sampled_from(["1", "2", "3", "4"]),
)
def test_the_facts_read_from_the_indexed_results_equal_those_from_the_whole_history(
    calls, order_id
):
    data = {
        "tools": [
            {
                "name": "get_order",
                "kind": "read",
                "parameters": {"type": "object", "properties": {"order_id": {}}},
            },
            {
                "name": "refund",
                "kind": "write",
                "parameters": {"type": "object", "properties": {"order_id": {}}},
            },
        ],
        "facts": SPEC,
    }
    check = ToolCheck(data, key=KEY)
    history = check.new_history("s")
    for order, status, card in calls:
        check.record(
            history,
            {"tool": "get_order", "arguments": {"order_id": order}},
            {"status": status, "card": card},
        )
    parsed = check_module.read_call({"tool": "refund", "arguments": {"order_id": order_id}})
    arguments = {"order_id": order_id}
    whole = compiler.resolve_facts(SPEC, arguments=arguments, results=history.results)
    part = compiler.resolve_facts(
        SPEC, arguments=arguments, results=check._fact_results(parsed, history)
    )
    assert part == whole
