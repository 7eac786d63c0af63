"""Each answer of the tool check as the record it is: decision, reasons, detail and rule.

A decision is a record, not a boolean (DESIGN.md): chapter 45's table gives each step its number
and its reasons, and the detail names the step, the check that decided and what it saw, so the
event feed, the console and `stalwart check` can say why. Mutation testing found most of these
fields unguarded; this table pins them, one row per way the check answers.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import guard.engine.check as check_module
import rulebooks.compiler as compiler
from guard.engine import ToolCheck
from guard.engine.checks import NAMES

from .conftest import KEY, NOW

ORDER = {"type": "object", "properties": {"order_id": {"type": "string"}}}
PAY = {"type": "object", "properties": {"amount": {"type": "number"}}}
CATALOGUE = {
    "agents": {
        "desk": {"tools": ["get_order", "pay", "old", "browse"]},
        "billing": {"tools": ["pay"]},
    },
    "tools": [
        {"name": "get_order", "kind": "read", "parameters": ORDER},
        {"name": "pay", "kind": "write", "parameters": PAY},
        {"name": "old", "kind": "read", "withdrawn": True},
        {"name": "browse", "kind": "read", "reads_outside": ["web"]},
        {"name": "elsewhere", "kind": "read"},
    ],
}
TYPED_PAY = {
    "tool": "pay",
    "agent": "desk",
    "arguments": {"amount": 5},
    "origins": {"amount": "typed"},
}


def check_with(**options: Any) -> ToolCheck:
    return ToolCheck(CATALOGUE, key=KEY, **options)


def answer(call: dict[str, Any], check: ToolCheck | None = None, **options: Any):
    check = check or check_with()
    session = options.pop("session", None) or check.new_history("s")
    decision = check.check(call, session=session, now=options.pop("now", NOW), **options)
    return decision.decision, decision.reasons, dict(decision.detail), decision.rule


def test_a_withdrawn_tool_is_refused_at_admission_naming_it():
    assert answer({"tool": "old", "agent": "desk"}) == (
        "refuse",
        ("withdrawn",),
        {"check": "withdrawn", "tool": "old"},
        "withdrawn",
    )


def test_step_1_refusals_name_the_tool_or_the_agents():
    assert answer({"tool": "delete_all", "agent": "desk"}) == (
        "refuse",
        ("unknown_tool",),
        {"step": 1, "check": "allowed_tools", "tool": "delete_all"},
        "allowed_tools",
    )
    assert answer({"tool": "get_order", "arguments": {"order_id": "A1"}}) == (
        "refuse",
        ("agent_required",),
        {"step": 1, "check": "allowed_tools", "agents": ["billing", "desk"]},
        "allowed_tools",
    )
    assert answer({"tool": "pay", "agent": "ghost"}) == (
        "refuse",
        ("agent_required",),
        {"step": 1, "check": "allowed_tools", "agent": "ghost", "problem": "unknown agent"},
        "allowed_tools",
    )
    assert answer({"tool": "elsewhere", "agent": "desk"}) == (
        "refuse",
        ("unknown_tool",),
        {"step": 1, "check": "allowed_tools", "tool": "elsewhere", "agent": "desk"},
        "allowed_tools",
    )


def test_a_lapsed_licence_names_its_last_day():
    check = check_with(settings={"licence": {"valid_until": "2026-02-28"}})
    assert answer(TYPED_PAY, check) == (
        "refuse",
        ("licence_lapsed",),
        {"step": 1, "check": "allowed_tools", "valid_until": "2026-02-28"},
        "allowed_tools",
    )
    # The licence is judged on the UTC date of `now`, whatever its timezone.
    late_in_brazil = dt.datetime(2026, 2, 28, 22, 0, tzinfo=dt.timezone(dt.timedelta(hours=-3)))
    assert answer(TYPED_PAY, check, now=late_in_brazil)[1] == ("licence_lapsed",)
    assert answer(TYPED_PAY, check, now=dt.datetime(2026, 2, 28, 23, 0))[1] == ("write",)


def test_a_history_that_does_not_verify_names_the_entry_and_the_problem():
    check = check_with()
    history = check.new_history("s")
    check.record(
        history, {"tool": "get_order", "agent": "desk", "arguments": {"order_id": "A1"}}, {}
    )
    tampered = history.to_json()
    tampered["entries"][0]["content"]["arguments"]["order_id"] = "A2"
    decision, reasons, detail, rule = answer(TYPED_PAY, check, session=tampered, head=history.head)
    assert (decision, reasons, rule) == ("refuse", ("history_invalid",), "session_record")
    assert detail["step"] == 2 and detail["check"] == "session_record" and detail["index"] == 0
    assert isinstance(detail["problem"], str) and detail["problem"]


def test_step_3_names_the_pointer_and_every_error():
    decision = answer({**TYPED_PAY, "arguments": {"amount": "five"}})
    assert decision == (
        "refuse",
        ("argument_schema",),
        {
            "step": 3,
            "check": "arguments",
            "pointer": "/amount",
            "errors": [
                {"pointer": "/amount", "keyword": "type", "message": "must be of type `number`"}
            ],
        },
        "arguments",
    )


def test_step_4_names_where_the_destination_is_and_how_it_was_seen():
    call = {
        "tool": "get_order",
        "agent": "desk",
        "arguments": {"order_id": "mail ana@corp.example"},
    }
    assert answer(call) == (
        "refuse",
        ("undeclared_destination",),
        {
            "step": 4,
            "check": "destinations",
            "pointer": "/order_id",
            "form": "email",
            "destination": "corp.example",
        },
        "destinations",
    )


def test_step_4_finds_a_destination_even_with_the_address_check_off():
    call = {"tool": "get_order", "agent": "desk", "arguments": {"order_id": "https://x.example/1"}}
    checks = sorted(NAMES - {"address"})
    assert answer(call, checks=checks)[1] == ("undeclared_destination",)


def test_step_9_refuses_tainted_writes_naming_the_labels():
    check = check_with(settings={"taint_policy": "refuse"})
    assert answer({**TYPED_PAY, "labels": ["web"]}, check) == (
        "refuse",
        ("tainted_call",),
        {"step": 9, "check": "outside_content", "labels": ["web"]},
        "outside_content",
    )


def test_step_10_answers_with_the_token_and_names_only_real_mismatches():
    check = check_with()
    history = check.new_history("s")
    token = check.issue_token(TYPED_PAY, session=history, now=NOW, ttl=60)
    assert answer(TYPED_PAY, check, session=history, token=token) == (
        "allow",
        ("confirmed",),
        {"step": 10, "check": "confirmation"},
        None,
    )
    later = NOW + dt.timedelta(seconds=61)
    assert answer(TYPED_PAY, check, session=history, token=token, now=later) == (
        "refuse",
        ("token_expired",),
        {"step": 10, "check": "confirmation"},
        "confirmation",
    )
    other = {**TYPED_PAY, "arguments": {"amount": 6}}
    assert answer(other, check, session=history, token=token)[2] == {
        "step": 10,
        "check": "confirmation",
        "mismatch": ["arguments"],
    }


def test_step_11_shows_the_arguments_and_the_labels_and_names_no_rule():
    history_check = check_with()
    history = history_check.new_history("s")
    history_check.record(history, {"tool": "browse", "agent": "desk"}, "<html>")
    assert answer(TYPED_PAY, history_check, session=history) == (
        "confirm",
        ("tainted_call",),
        {"step": 11, "arguments": {"amount": {"value": 5, "origin": "typed"}}, "labels": ["web"]},
        None,
    )


def test_step_12_allows_a_verified_undo_as_compensation():
    data = {
        "tools": [
            {"name": "ship", "kind": "write", "compensation": "unship"},
            {"name": "unship", "kind": "write"},
        ]
    }
    check = ToolCheck(data, key=KEY)
    history = check.new_history("s")
    check.record(history, {"tool": "ship"}, {})
    assert answer({"tool": "unship", "compensation_of": 0}, check, session=history) == (
        "allow",
        ("compensation",),
        {"step": 12, "check": "undo"},
        None,
    )


def test_step_13_allows_a_read():
    call = {"tool": "get_order", "agent": "desk", "arguments": {"order_id": "A1"}}
    assert answer(call) == ("allow", ("allow",), {"step": 13}, None)


# -- the gate's answers in the record ---------------------------------------------------------------

SHEET = b"tool,condition,decision,reason\npay,amount <= 10,allow,small payments run\n"


def test_a_rule_sheets_allow_names_its_row_and_only_where_it_decided():
    record = compiler.compile_rule_sheet(SHEET, filename="rules.csv")
    check = check_with(rulebook=record)
    decision, reasons, detail, rule = answer(TYPED_PAY, check)
    assert (decision, reasons, rule, detail["step"]) == ("allow", ("allow",), "row 2", 13)
    assert detail["gate"]["row"] == 2
    model_chose = {**TYPED_PAY, "origins": {}}
    assert answer(model_chose, check) == (
        "confirm",
        ("argument_origin: amount",),
        {"step": 11, "arguments": {"amount": {"value": 5, "origin": "model"}}},
        None,
    )


class Answer:
    def __init__(self, decision: str, reasons=(), detail=None):
        self.decision = decision
        self.reasons = list(reasons)
        self.detail = detail or {}


@pytest.fixture
def gate_answers(monkeypatch):
    def install(result) -> ToolCheck:
        def gate(record, **_):
            return result

        def resolve_facts(spec, **_):
            return {}

        monkeypatch.setattr(check_module, "_rulebook_api", lambda: (gate, resolve_facts))
        return check_with(rulebook={"format": "stand-in"})

    return install


def test_a_gate_refusal_without_reasons_or_rule_is_named_by_the_check(gate_answers):
    assert answer(TYPED_PAY, gate_answers(Answer("refuse", [], {"line": 3}))) == (
        "refuse",
        ("refuse",),
        {"line": 3, "step": 8, "check": "your_rules"},
        "your_rules",
    )


def test_a_gate_answer_that_is_no_answer_refuses_saying_so(gate_answers):
    for result in (object(), Answer("maybe")):
        assert answer(TYPED_PAY, gate_answers(result)) == (
            "refuse",
            ("rulebook_error",),
            {"step": 8, "check": "your_rules", "problem": "the gate gave no answer"},
            "your_rules",
        )


def test_a_licence_lapses_by_the_utc_date_whatever_the_servers_timezone(monkeypatch):
    import time

    check = check_with(settings={"licence": {"valid_until": "2026-02-28"}})
    utc_morning = dt.datetime(2026, 3, 1, 1, 0, tzinfo=dt.UTC)
    monkeypatch.setenv("TZ", "America/Sao_Paulo")
    time.tzset()
    try:
        assert answer(TYPED_PAY, check, now=utc_morning)[1] == ("licence_lapsed",)
        assert answer(TYPED_PAY, check, now=dt.datetime(2026, 2, 28, 23, 0, tzinfo=dt.UTC))[1] == (
            "write",
        )
    finally:
        monkeypatch.undo()
        time.tzset()
