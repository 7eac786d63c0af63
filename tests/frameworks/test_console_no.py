"""Against the console, a person's explicit no to the interrupt runs nothing, as in this process,
even when the console's queue holds a yes for the request (the person withdrew the call)."""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from stalwart_agents.guarded import Guard
from stalwart_agents.langgraph import StalwartMiddleware
from tests.frameworks.test_console_approvals import PAID, console_client  # noqa: F401
from tests.frameworks.test_langgraph import call, scripted


def test_an_explicit_no_runs_nothing_against_the_console(
    shop,
    console_client,  # noqa: F811
    approver,
    client_for,
):
    refunded = []

    def refund_card(order_id: str, amount: float) -> dict:
        """Refunds an amount of an order."""
        refunded.append((order_id, amount))
        return {"order_id": order_id, "refunded": amount}

    guard = Guard.for_agent(shop, "billing", client=console_client, wait_timeout=5)
    guard.context.observe("get_order", {"order_id": "4411"}, PAID)
    model = scripted(call("refund_card", {"order_id": "4411", "amount": 40.0}, "c1"))
    agent = create_agent(
        model,
        [StructuredTool.from_function(refund_card)],
        middleware=[StalwartMiddleware(guard)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "remote-no"}}
    out = agent.invoke({"messages": [HumanMessage("refund order 4411")]}, config)
    (waiting,) = out["__interrupt__"]
    answered = client_for(approver).post(f"/v1/approvals/{waiting.value['approval']}/approve")
    assert answered.status_code == 200, answered.content
    out = agent.invoke(Command(resume=False), config)
    assert refunded == []
    last = [m for m in out["messages"] if isinstance(m, ToolMessage)][-1]
    assert "approval_denied" in last.content
