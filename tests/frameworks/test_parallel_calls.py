"""Parallel tool calls of one model turn: LangGraph's `ToolNode` runs them in threads, and each is
still decided after the ones before it ran (a run's spend cannot be passed by calling at once)."""

from __future__ import annotations

import asyncio
import threading
import time

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.graph import END, START, MessagesState, StateGraph

from stalwart_agents import Client
from stalwart_agents.guarded import Guard
from stalwart_agents.langgraph import StalwartToolNode

CATALOGUE = {
    "agents": {"desk": {"tools": ["pay"]}},
    "tools": [
        {
            "name": "pay",
            "kind": "write",
            "description": "Pays an invoice.",
            "parameters": {
                "type": "object",
                "properties": {"invoice": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["invoice", "amount"],
            },
            "checks": [{"spend": {"argument": "amount", "at_most": 500, "per": "run"}}],
        }
    ],
}


def test_parallel_calls_in_one_turn_cannot_spend_past_the_runs_limit():
    paid: list[tuple[str, float]] = []

    def pay(invoice: str, amount: float) -> dict:
        """Pays an invoice."""
        time.sleep(0.2)  # a real payment takes a while: the other call starts meanwhile
        paid.append((invoice, amount))
        return {"paid": amount}

    guard = Guard(Client().session("desk", catalogue=CATALOGUE), approver=lambda prompt: True)
    guard.read("pay invoice A-1 300 and invoice B-2 300")
    node = StalwartToolNode([StructuredTool.from_function(pay)], guard=guard)
    graph = StateGraph(MessagesState)
    graph.add_node("tools", node)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    turn = AIMessage(
        content="",
        tool_calls=[
            {"name": "pay", "args": {"invoice": "A-1", "amount": 300}, "id": "c1"},
            {"name": "pay", "args": {"invoice": "B-2", "amount": 300}, "id": "c2"},
        ],
    )
    out = graph.compile().invoke({"messages": [turn]})
    answers = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(paid) == 1, paid  # 600 is past the run's 500: the second call is refused
    assert sum(amount for _, amount in paid) <= 500
    refused = [m for m in answers if m.status == "error"]
    assert len(refused) == 1 and "Nothing ran" in refused[0].content


def test_parallel_async_calls_cannot_spend_past_the_runs_limit_either():
    paid: list[tuple[str, float]] = []

    async def pay(invoice: str, amount: float) -> dict:
        """Pays an invoice."""
        await asyncio.sleep(0.2)
        paid.append((invoice, amount))
        return {"paid": amount}

    guard = Guard(Client().session("desk", catalogue=CATALOGUE), approver=lambda prompt: True)
    guard.read("pay invoice A-1 300 and invoice B-2 300")
    node = StalwartToolNode([StructuredTool.from_function(coroutine=pay)], guard=guard)
    graph = StateGraph(MessagesState)
    graph.add_node("tools", node)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    turn = AIMessage(
        content="",
        tool_calls=[
            {"name": "pay", "args": {"invoice": "A-1", "amount": 300}, "id": "c1"},
            {"name": "pay", "args": {"invoice": "B-2", "amount": 300}, "id": "c2"},
        ],
    )
    out = asyncio.run(asyncio.wait_for(graph.compile().ainvoke({"messages": [turn]}), 30))
    answers = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(paid) == 1, paid
    assert ["spend_exceeded" in m.content for m in answers].count(True) == 1


def test_a_tool_that_runs_a_guarded_graph_of_the_same_session_does_not_wait_on_itself():
    """A graph used as a tool (its own tool node, the same session) runs its calls in its own
    threads while the outer call is running: they are serialised among themselves, and never
    wait for the outer call that waits for them."""
    read = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    catalogue = {
        "agents": {"desk": {"tools": ["outer", "inner"]}},
        "tools": [
            {"name": "outer", "kind": "read", "parameters": read},
            {"name": "inner", "kind": "read", "parameters": read},
        ],
    }
    guard = Guard(Client().session("desk", catalogue=catalogue))

    def graph_of(tool: StructuredTool):  # noqa: ANN202
        graph = StateGraph(MessagesState)
        graph.add_node("tools", StalwartToolNode([tool], guard=guard))
        graph.add_edge(START, "tools")
        graph.add_edge("tools", END)
        return graph.compile()

    def asked(name: str, q: str, ident: str) -> dict:
        return {"messages": [AIMessage(content="", tool_calls=[{"name": name, "args": {"q": q}, "id": ident}])]}  # fmt: skip

    def inner(q: str) -> str:
        """Looks inside."""
        return "inner " + q

    inner_graph = graph_of(StructuredTool.from_function(inner))

    def outer(q: str) -> str:
        """Asks the inner graph."""
        return inner_graph.invoke(asked("inner", q, "i1"))["messages"][-1].content

    answers: list[str] = []
    worker = threading.Thread(
        target=lambda: answers.append(
            graph_of(StructuredTool.from_function(outer))
            .invoke(asked("outer", "x", "o1"))["messages"][-1]
            .content
        ),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "the inner call waited for the outer one"
    assert answers == ["inner x"]
    assert [entry.content["tool"] for entry in guard.session.history] == ["inner", "outer"]
