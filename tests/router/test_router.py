"""The router's decisions that the test set does not show one turn at a time."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guard.engine import ToolCheck
from router.engine import (
    KINDS,
    LanguageNotRead,
    Plan,
    Router,
    RouterError,
    SettingInvalid,
)

from .conftest import DOCUMENTS, KEY, TODAY, erp_catalogue, shop_file, shop_rulebook


@pytest.fixture(scope="module")
def shop():
    return Router(shop_file(), rulebook=shop_rulebook(), today=TODAY)


@pytest.fixture(scope="module")
def loja():
    return Router(shop_file(), rulebook=shop_rulebook(), language="pt-BR", today=TODAY)


def test_a_plan_is_a_record_with_the_agreed_keys(shop):
    data = shop.plan("show order 4411").to_dict()
    assert {"kind", "call", "missing", "question", "reasons", "language", "why"} <= set(data)
    assert data["call"] == {
        "tool": "get_order",
        "agent": "desk",
        "arguments": {"order_id": "4411"},
        "origins": {"order_id": "typed"},
    }
    assert data["why"] and data["language"] == "en"
    assert Plan.from_dict(data).to_dict() == data


def test_values_keep_what_was_typed(loja):
    plan = loja.plan("estorne R$ 1.234,56 do pedido nº 4411")
    assert plan.call["arguments"]["amount"] == 1234.56
    assert plan.said == {"amount": "R$ 1.234,56", "order_id": "4411"}


def test_a_turn_in_the_other_language_is_not_read(shop, loja):
    assert shop.plan("estorne 40,00 do pedido 4411").kind == "unread"
    assert loja.plan("refund $40 on order 4411").kind == "unread"


def test_the_router_refuses_a_language_it_has_no_grammar_for():
    with pytest.raises(LanguageNotRead):
        Router(shop_file(), language="pt-PT")


def test_a_setting_the_router_does_not_take_is_refused():
    with pytest.raises(SettingInvalid):
        Router(shop_file(), on_unread="guess")
    with pytest.raises(RouterError):
        Router(shop_file(), agent="nobody")


def test_an_ask_is_completed_by_the_next_turn_that_gives_its_values(shop):
    asked = shop.plan("send the receipt for order 4411")
    assert (asked.kind, asked.missing) == ("ask", ("email",))
    again = shop.plan("ana@x.com", history=[asked.to_dict()])
    assert again.tool == "send_receipt"
    assert again.call["arguments"] == {"order_id": "4411", "email": "ana@x.com"}
    assert shop.plan("ana@x.com").kind == "unread"


def test_a_chain_is_fed_back_its_results_and_the_plan_they_make_replaces_it(shop):
    check = ToolCheck(shop.catalogue, key=KEY)
    history = check.new_history("s")
    first = shop.plan("refund the full amount of order 4411")
    assert first.kind == "chain" and first.missing == ("amount",)
    check.record(history, dict(first.steps[0]), {"order_id": "4411", "status": "paid",
                                                  "amount": 40.0, "card": "v"})  # fmt: skip
    second = shop.plan("refund the full amount of order 4411", results=history)
    assert second.kind == "confirm"
    assert second.call["arguments"] == {"order_id": "4411", "amount": 40.0}
    assert second.call["origins"] == {"order_id": "typed", "amount": "tool"}


def test_a_refund_with_no_amount_typed_asks_for_it_even_where_a_read_reports_one(shop):
    results = [{"tool": "get_order", "arguments": {"order_id": "4411"},
                "result": {"status": "paid", "amount": 40.0, "card": "v"}}]  # fmt: skip
    for turn in ("refund order 4411", "charge order 4411"):
        plan = shop.plan(turn, results=results)
        assert (plan.kind, plan.missing) == ("ask", ("amount",)), turn
        assert plan.call["arguments"] == {"order_id": "4411"}
    whole = shop.plan("refund order 4411 in full", results=results)
    assert whole.kind == "confirm" and whole.call["origins"]["amount"] == "tool"


def test_a_refund_the_rules_refuse_whatever_the_amount_is_declined_before_asking_how_much(shop):
    results = [{"tool": "get_order", "arguments": {"order_id": "4412"},
                "result": {"status": "open", "amount": 12.5}}]  # fmt: skip
    plan = shop.plan("refund order 4412", results=results)
    assert (plan.kind, plan.rule) == ("declined", "refunds")


def test_a_refusal_of_the_rulebook_names_its_rule(shop):
    results = [{"tool": "get_order", "arguments": {"order_id": "4412"},
                "result": {"status": "open", "amount": 12.5}}]  # fmt: skip
    plan = shop.plan("refund order 4412", results=results)
    assert (plan.kind, plan.rule, plan.reasons) == ("declined", "refunds", ("refuse",))
    assert plan.detail["flow"] == "refunds"


def test_an_order_rule_on_a_write_that_did_not_run_declines(shop):
    plan = shop.plan("email the receipt for order 4411 to ana@x.com")
    assert (plan.kind, plan.rule, plan.reasons) == (
        "declined",
        "after charge_card",
        ("order_rule",),
    )


def test_a_value_the_tool_would_refuse_is_asked_for_again():
    router = Router(erp_catalogue(), today=TODAY)
    plan = router.plan("close work order 4411 saying done")
    assert (plan.kind, plan.missing, plan.reasons) == ("ask", ("order_id",), ("invalid: order_id",))
    assert "`4411`" in plan.question


def test_a_calculation_is_declined_with_compute_off_without_a_sandbox():
    plan = Router(erp_catalogue(), today=TODAY).plan("how many open work orders are there")
    assert plan.kind == "declined"
    assert plan.reasons[0].startswith("compute off:")


def test_a_calculation_needs_the_agents_model_too():
    plan = Router(erp_catalogue(), today=TODAY, sandbox=print).plan("count the open orders")
    assert plan.kind == "declined"
    assert plan.reasons == ("compute off: the agent names no model to write the function",)


def test_a_turn_nothing_reads_is_asked_again_once_then_on_unread_decides(shop):
    first = shop.plan("tell me a joke")
    assert (first.kind, first.action) == ("unread", "say_again")
    assert "`joke`" in first.question
    assert shop.plan("tell me a joke", asked_again=True).action == "refuse"


def test_an_agent_that_says_nothing_takes_the_organisations_setting_or_refuse():
    data = erp_catalogue()
    del data["agents"]["ops"]["on_unread"]
    quiet = Router(data, today=TODAY)
    assert quiet.plan("tell me a joke", asked_again=True).action == "refuse"
    answering = Router(data, today=TODAY, on_unread="answer", documents=DOCUMENTS)
    answer = answering.plan(
        "how long does a refund take to show on the statement", asked_again=True
    )
    assert answer.action == "answer"
    assert answer.answer["source"] == "refunds.md"
    taken = quiet.plan("tell me a joke", asked_again=True, on_unread="answer")
    assert (taken.action, taken.reasons) == ("refuse", ("unread: unknown_words", "no_documents"))


def test_the_agents_own_setting_wins_over_the_organisations():
    router = Router(erp_catalogue(), today=TODAY, on_unread="answer", documents=DOCUMENTS)
    assert router.plan("how long does a refund take", asked_again=True).action == "refuse"


def test_model_and_ask_need_a_model_named():
    data = erp_catalogue()
    data["agents"]["ops"]["on_unread"] = "model"
    assert Router(data, today=TODAY).plan("hi there", asked_again=True).reasons[-1] == "no_model"
    data["agents"]["ops"]["model"] = "scripted:ops"
    assert Router(data, today=TODAY).plan("tell me a joke", asked_again=True).action == "model"
    data["agents"]["ops"]["on_unread"] = "ask"
    asked = Router(data, today=TODAY).plan("tell me a joke", asked_again=True)
    assert (asked.action, asked.needs_model) == ("ask", False)


def test_an_agent_reads_its_own_tools_and_those_it_hands_off_to():
    desk = Router(shop_file(), rulebook=shop_rulebook(), agent="desk", today=TODAY)
    assert desk.plan("refund $20 on order 4411").call["agent"] == "billing"
    billing = Router(shop_file(), rulebook=shop_rulebook(), agent="billing", today=TODAY)
    declined = billing.plan("show order 4411")
    assert (declined.kind, declined.rule) == ("declined", "allowed_tools")


def test_relative_days_count_from_today():
    router = Router(erp_catalogue(), today=dt.date(2026, 3, 4))
    assert router.plan("list orders since yesterday").call["arguments"] == {"since": "2026-03-03"}
    later = router.plan("list orders since yesterday", today=dt.date(2026, 4, 1))
    assert later.call["arguments"] == {"since": "2026-03-31"}


def test_a_very_long_turn_is_not_read(shop):
    plan = shop.plan("show order 4411 " * 300)
    assert (plan.kind, plan.reasons) == ("unread", ("unread: too_long",))


def test_a_turn_must_be_text(shop):
    with pytest.raises(RouterError):
        shop.plan(None)


words = st.sampled_from(
    ["refund", "estorne", "order", "pedido", "4411", "$20", "40,00", "don't", "não", "and", "e",
     "show", "mostre", "close", "feche", "the", "a", "o", "please", "pfv", "encomenda", "OS",
     "742", "ana@x.com", "saying", "dizendo", "hi", "how many", "quantas", "#team", "?", "!"]
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(words, max_size=10), st.text(max_size=30))
def test_any_turn_gets_a_plan_and_never_an_error(shop, loja, parts, noise):
    for router in (shop, loja):
        for turn in (" ".join(parts), noise, " ".join(parts) + " " + noise):
            plan = router.plan(turn)
            assert plan.kind in KINDS
            plan.to_dict()


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="qwxzkjvy ", min_size=1, max_size=40))
def test_words_nobody_knows_never_plan_a_call(shop, loja, turn):
    for router in (shop, loja):
        plan = router.plan(turn)
        assert plan.call is None or not router.profiles[plan.tool].write


def test_a_router_that_cannot_answer_raises_and_makes_no_plan(monkeypatch):
    from router.engine import SelectorUnavailableError

    router = Router(shop_file(), today=TODAY)

    def broken(turn, today):
        raise KeyError("lexicon")

    monkeypatch.setattr(router.reader, "read", broken)
    with pytest.raises(SelectorUnavailableError):
        router.plan("show order 4411")
