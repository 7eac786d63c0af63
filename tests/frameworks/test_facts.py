"""`stalwart_agents.facts.Context`: the file's `facts:` read from the tools' answers, for the doors."""

from __future__ import annotations

import pytest

from rulebooks.compiler.errors import FactsInvalid
from stalwart_agents.client import SelectorUnavailableError
from stalwart_agents.facts import Context, facts_of
from stalwart_agents.guarded import Guard

PAID = {"order_id": "4411", "status": "paid", "card": "visa-0042", "amount": 40.0}
OPEN = {"order_id": "4412", "status": "open", "card": "", "amount": 12.5}


def test_the_agent_files_facts_are_what_the_context_reads(shop):
    assert facts_of(shop) == {
        "card_on_file": {"from": "get_order.card", "same": "order_id"},
        "order_paid": {"from": "get_order.status == paid", "same": "order_id"},
    }


def test_a_fact_is_false_until_the_tool_answered_and_bound_to_the_call_it_names(shop):
    context = Context(facts=facts_of(shop))
    assert context.for_call({"order_id": "4411"}) == {"card_on_file": False, "order_paid": False}
    context.observe("get_order", {"order_id": "4411"}, PAID)
    context.observe("get_order", {"order_id": "4412"}, OPEN)
    assert context.for_call({"order_id": "4411"}) == {"card_on_file": True, "order_paid": True}
    assert context.for_call({"order_id": "4412"}) == {"card_on_file": False, "order_paid": False}


def test_where_code_and_the_file_say_the_same_fact_the_file_wins(shop):
    context = Context(facts=facts_of(shop), context={"order_paid": True, "vip": True})
    assert context.for_call({"order_id": "4411"}) == {
        "order_paid": False,
        "card_on_file": False,
        "vip": True,
    }


def test_a_fact_is_never_read_from_a_tool_that_reads_outside():
    with pytest.raises(FactsInvalid, match="reads outside content"):
        Context(facts={"ok": {"from": "read_inbox.subject"}}, reads_outside=["read_inbox"])


def test_call_with_takes_its_facts_from_the_context_so_the_rulebook_decides_on_them(shop):
    context = Context(facts=facts_of(shop))
    guard = Guard.for_agent(shop, "billing", context=context)
    refund = {"order_id": "4411", "amount": 40.0}
    unpaid = guard.call_with("refund_card", refund, function=lambda a: "refunded")
    assert unpaid.status == "refused" and unpaid.detail.get("flow") == "refunds"
    context.observe("get_order", {"order_id": "4411"}, PAID)
    paid = guard.call_with("refund_card", refund, function=lambda a: "refunded")
    assert paid.status == "confirm"
    other = guard.call_with(
        "refund_card", {"order_id": "4412", "amount": 1.0}, function=lambda a: "refunded"
    )
    assert other.status == "refused"  # the status of 4411 never allows a refund of 4412


def test_a_context_function_that_fails_makes_no_call(shop):
    def broken():
        raise RuntimeError("the CRM is down")

    guard = Guard.for_agent(shop, "billing", context=Context(facts_of(shop), context=broken))
    refunded = []
    try:
        outcome = guard.call_with(
            "refund_card", {"order_id": "4411", "amount": 1.0}, function=refunded.append
        )
    except SelectorUnavailableError as exc:  # the runtime could not answer: no call is made
        assert "the CRM is down" in str(exc)
    else:
        assert outcome.status == "refused" and outcome.reasons == ("facts_unavailable",)
    assert refunded == []


def test_the_chapters_langgraph_sentences_run_as_written(shop):
    """ "O middleware de guarda, build_stalwart_graph e Guard.call_with também recebem context=, e
    stalwart_agents.facts.Context(facts=agent.facts) lê para eles os facts: do arquivo.\""""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import StructuredTool
    from langgraph.checkpoint.memory import InMemorySaver

    from stalwart_agents.langgraph import StalwartMiddleware, build_stalwart_graph
    from tests.frameworks.test_langgraph import call, scripted

    context = Context(facts=shop.facts)
    context.observe("get_order", {"order_id": "4411"}, PAID)

    def refund_card(order_id: str, amount: float) -> dict:
        """Refunds an amount of an order."""
        return {"refunded": amount}

    def run(middleware):  # noqa: ANN001, ANN202
        model = scripted(call("refund_card", {"order_id": "4411", "amount": 33.0}, "c1"))
        agent = create_agent(
            model,
            [StructuredTool.from_function(refund_card)],
            middleware=[middleware],
            checkpointer=InMemorySaver(),
        )
        config = {"configurable": {"thread_id": "facts"}}
        return agent.invoke({"messages": [HumanMessage("refund order 4411")]}, config)

    with_facts = run(StalwartMiddleware(Guard.for_agent(shop, "billing"), context=context))
    assert "argument_origin: amount" in with_facts["__interrupt__"][0].value["reasons"]
    without = run(StalwartMiddleware(Guard.for_agent(shop, "billing")))
    refusal = [m for m in without["messages"] if isinstance(m, ToolMessage)][-1]
    assert "__interrupt__" not in without and "refuse" in refusal.content  # flow refunds
    guard = Guard.for_agent(shop, "billing")
    outcome = guard.call_with(
        "refund_card",
        {"order_id": "4411", "amount": 33.0},
        function=lambda a: "ok",
        context=context,
    )
    assert outcome.status == "confirm"
    graph = build_stalwart_graph(shop, require_proof=False, models={}, context={"order_paid": True})
    assert graph.stalwart_guards["billing"].context.code == {"order_paid": True}
