"""Parallel tool calls of one model turn against the console (`STALWART_URL`): LangGraph's
`ToolNode` runs them in threads, and each is checked by the console after the ones before it were
reported (a run's spend cannot be passed by calling at once)."""

from __future__ import annotations

import time

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.graph import END, START, MessagesState, StateGraph

from stalwart_agents import Client
from stalwart_agents.guarded import Guard
from stalwart_agents.langgraph import StalwartToolNode

CATALOGUE = {
    "agents": {"desk": {"tools": ["buy"]}},
    "tools": [
        {
            "name": "buy",
            "kind": "read",
            "description": "Buys credits.",
            "parameters": {
                "type": "object",
                "properties": {"item": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["item", "amount"],
            },
            "checks": [{"spend": {"argument": "amount", "at_most": 500, "per": "run"}}],
        }
    ],
}


@pytest.fixture
def console_client(live_server, admin, organisation, actor_for):
    from console import services as console_services

    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="parallel", role="editor"
    )
    return Client(url=live_server.url, api_key=key)


@pytest.mark.django_db(transaction=True)
def test_parallel_calls_through_the_console_cannot_spend_past_the_runs_limit(console_client):
    bought: list[tuple[str, float]] = []

    def buy(item: str, amount: float) -> dict:
        """Buys credits."""
        time.sleep(0.3)  # the other call reaches the console meanwhile
        bought.append((item, amount))
        return {"bought": amount}

    guard = Guard(console_client.session("desk", catalogue=CATALOGUE))
    guard.read("buy A 300 and B 300")
    node = StalwartToolNode([StructuredTool.from_function(buy)], guard=guard)
    graph = StateGraph(MessagesState)
    graph.add_node("tools", node)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    turn = AIMessage(
        content="",
        tool_calls=[
            {"name": "buy", "args": {"item": "A", "amount": 300}, "id": "c1"},
            {"name": "buy", "args": {"item": "B", "amount": 300}, "id": "c2"},
        ],
    )
    out = graph.compile().invoke({"messages": [turn]})
    answers = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(bought) == 1, bought
    assert ["spend_exceeded" in m.content for m in answers].count(True) == 1
