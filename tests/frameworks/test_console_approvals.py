"""With `STALWART_URL`, a LangGraph interrupt is answered by the console's approvals queue."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from console.models import Event
from guard.models import ApprovalRequest
from stalwart_agents import Client
from stalwart_agents.guarded import Guard
from stalwart_agents.langgraph import StalwartMiddleware
from tests.frameworks.test_langgraph import call, scripted

PAID = {"order_id": "4411", "status": "paid", "card": "visa-0042", "amount": 40.0}


@pytest.fixture
def console_client(live_server, admin, organisation, actor_for):
    from console import services as console_services

    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="frameworks", role="editor"
    )
    return Client(url=live_server.url, api_key=key)


def test_the_interrupt_carries_the_console_request_and_the_resume_waits_for_its_answer(
    shop, console_client, approver, client_for
):
    refunded = []

    def refund_card(order_id: str, amount: float) -> dict:
        """Refunds an amount of an order."""
        refunded.append((order_id, amount))
        return {"order_id": order_id, "refunded": amount}

    guard = Guard.for_agent(shop, "billing", client=console_client, wait_timeout=20)
    guard.context.observe("get_order", {"order_id": "4411"}, PAID)  # the fact the rulebook reads
    model = scripted(call("refund_card", {"order_id": "4411", "amount": 40.0}, "c1"))
    agent = create_agent(
        model,
        [StructuredTool.from_function(refund_card)],
        middleware=[StalwartMiddleware(guard)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "remote-1", "run_id": "run-77"}}
    out = agent.invoke({"messages": [HumanMessage("refund order 4411")]}, config)
    (waiting,) = out["__interrupt__"]
    approval = waiting.value["approval"]
    assert approval and "argument_origin: amount" in waiting.value["reasons"]
    assert refunded == []
    answered = client_for(approver).post(f"/v1/approvals/{approval}/approve")
    assert answered.status_code == 200, answered.content
    out = agent.invoke(Command(resume=True), config)
    assert refunded == [("4411", 40.0)]
    assert (
        '"refunded": 40.0' in [m for m in out["messages"] if isinstance(m, ToolMessage)][-1].content
    )
    # The resumed step re-ran the call: the console still holds the one request the person saw.
    assert [str(r.public_id) for r in ApprovalRequest.objects.all()] == [approval]
    events = Event.objects.filter(source="toolcheck", tool="refund_card").order_by("id")
    assert [e.verdict for e in events] == ["confirm", "succeeded"]
    assert {(e.thread_id, e.run_id) for e in events} == {("remote-1", "run-77")}


def test_an_agents_sdk_interruption_is_answered_by_the_console_queue(
    shop, console_client, approver, client_for
):
    import asyncio

    from agents import Agent as SdkAgent
    from agents import Runner

    from stalwart_agents.openai_agents import StalwartTools
    from tests.frameworks.scripted_agents_model import ScriptedModel

    refunded = []
    guard = Guard.for_agent(
        shop,
        "billing",
        client=console_client,
        wait_timeout=20,
        tools={"refund_card": lambda arguments: refunded.append(arguments) or {"refunded": 1}},
    )
    guard.context.observe("get_order", {"order_id": "4411"}, PAID)
    tools = StalwartTools(guard, shop.catalogue())
    model = ScriptedModel(("refund_card", {"order_id": "4411", "amount": 40.0}, "c1"), "done")
    agent = SdkAgent(name="billing", tools=tools.tools, model=model)
    config = tools.run_config(tracing_disabled=True, trace_id="trace_1", group_id="chat-1")
    result = asyncio.run(Runner.run(agent, "refund order 4411", run_config=config))
    (item,) = result.interruptions
    approval = tools.prompt(item)["approval"]
    assert approval and refunded == []
    assert client_for(approver).post(f"/v1/approvals/{approval}/approve").status_code == 200
    state = result.to_state()
    state.approve(item)
    resumed = asyncio.run(Runner.run(agent, state, run_config=config))
    assert resumed.final_output == "done"
    assert refunded == [{"order_id": "4411", "amount": 40.0}]
    assert [str(r.public_id) for r in ApprovalRequest.objects.all()] == [approval]
    events = Event.objects.filter(source="toolcheck", tool="refund_card")
    assert events and {(e.thread_id, e.run_id) for e in events} == {("chat-1", "trace_1")}


def test_a_built_graph_keeps_one_console_session_across_a_handoff(
    two_desks, console_client, approver, client_for
):
    import shop.tools as tools
    from langgraph.types import Command

    from guard.models import GuardSession
    from stalwart_agents.langgraph import build_stalwart_graph
    from tests.frameworks.test_langgraph import scripted

    desk_model = scripted(
        call("get_order", {"order_id": "4411"}, "c1"),
        call("read_inbox", {}, "c2"),
        call("transfer_to_billing", {}, "c3"),
    )
    billing_model = scripted(call("refund_card", {"order_id": "4411", "amount": 40.0}, "c4"))
    graph = build_stalwart_graph(
        two_desks,
        require_proof=False,
        models={"desk": desk_model, "billing": billing_model},
        client=console_client,
        checkpointer=InMemorySaver(),
    )
    for guard in graph.stalwart_guards.values():
        guard.wait_timeout = 20
    config = {"configurable": {"thread_id": "graph-1"}}
    for turn in ("can you sort things out for me", "just sort it out please", "go on"):
        out = graph.invoke({"messages": [HumanMessage(turn)]}, config)
    (waiting,) = out["__interrupt__"]
    assert "tainted_call" in waiting.value["reasons"]
    approval = waiting.value["approval"]
    assert client_for(approver).post(f"/v1/approvals/{approval}/approve").status_code == 200
    graph.invoke(Command(resume=True), config)
    assert tools.ORDERS["4411"]["status"] == "refunded"
    (session,) = GuardSession.objects.all()  # one session, one signed history
    entries = [e["content"] for e in session.history["entries"]]
    assert [(e["agent"], e["tool"]) for e in entries] == [
        ("desk", "get_order"),
        ("desk", "read_inbox"),
        ("billing", "refund_card"),
    ]
    assert [str(r.public_id) for r in ApprovalRequest.objects.all()] == [approval]
    events = Event.objects.filter(source="toolcheck")
    assert {e.thread_id for e in events} == {"graph-1"}
    assert {e.agent for e in events.filter(tool="refund_card")} == {"billing"}


def test_a_step_resumed_by_another_process_files_no_second_request(
    shop, console_client, approver, client_for
):
    """The resume runs where the first guard is gone (a server that rebuilds its guard per
    request, the checkpointer kept): the console answers the same call at the same point with
    the request the person already approved, and the call runs once, without asking again."""
    from stalwart_agents.client import RemoteSession

    refunded = []

    def refund_card(order_id: str, amount: float) -> dict:
        """Refunds an amount of an order."""
        refunded.append((order_id, amount))
        return {"order_id": order_id, "refunded": amount}

    saver = InMemorySaver()  # stands for a checkpointer both processes share
    config = {"configurable": {"thread_id": "remote-2"}}

    def app(guard, model):  # noqa: ANN001, ANN202
        return create_agent(
            model,
            [StructuredTool.from_function(refund_card)],
            middleware=[StalwartMiddleware(guard)],
            checkpointer=saver,
        )

    first = Guard.for_agent(shop, "billing", client=console_client, wait_timeout=20)
    first.context.observe("get_order", {"order_id": "4411"}, PAID)
    model = scripted(call("refund_card", {"order_id": "4411", "amount": 40.0}, "c1"))
    out = app(first, model).invoke({"messages": [HumanMessage("refund order 4411")]}, config)
    approval = out["__interrupt__"][0].value["approval"]
    assert client_for(approver).post(f"/v1/approvals/{approval}/approve").status_code == 200
    again = Guard(
        RemoteSession(console_client, first.session.id, "billing"),
        context=first.context,
        wait_timeout=20,
    )
    app(again, scripted()).invoke(Command(resume=True), config)
    assert refunded == [("4411", 40.0)]
    assert [str(r.public_id) for r in ApprovalRequest.objects.all()] == [approval]
