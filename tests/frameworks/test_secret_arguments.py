"""A catalogue's `secret` arguments never reach what a framework keeps or shows in clear: the
interrupt a confirm becomes (stored by LangGraph's checkpointer, returned to the host, traced)."""

from __future__ import annotations

import json

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from stalwart_agents import Client
from stalwart_agents.guarded import Guard
from stalwart_agents.langgraph import StalwartMiddleware
from tests.frameworks.test_langgraph import call, scripted

CARD = "4111111111111111"
CATALOGUE = {
    "agents": {"desk": {"tools": ["pay"]}},
    "tools": [
        {
            "name": "pay",
            "kind": "write",
            "description": "Pays an invoice.",
            "secret": ["card_number"],
            "parameters": {
                "type": "object",
                "properties": {"invoice": {"type": "string"}, "card_number": {"type": "string"}},
                "required": ["invoice", "card_number"],
            },
        }
    ],
}


def paying_agent(paid: list[dict]):  # noqa: ANN201
    """A guarded agent whose model pays invoice A-1 with a card (`pay`, a confirm); each
    payment made is noted in `paid`."""

    def pay(invoice: str, card_number: str) -> dict:
        """Pays an invoice."""
        paid.append({"invoice": invoice, "card_number": card_number})
        return {"paid": invoice}

    guard = Guard(Client().session("desk", catalogue=CATALOGUE))
    model = scripted(call("pay", {"invoice": "A-1", "card_number": CARD}, "c1"))
    return create_agent(
        model,
        [StructuredTool.from_function(pay)],
        middleware=[StalwartMiddleware(guard)],
        checkpointer=InMemorySaver(),
    )


def test_a_secret_argument_is_masked_in_the_interrupt_and_the_call_still_runs_with_it():
    paid: list[dict] = []
    agent = paying_agent(paid)
    config = {"configurable": {"thread_id": "secret-1"}}
    out = agent.invoke({"messages": [HumanMessage("pay invoice A-1")]}, config)
    (waiting,) = out["__interrupt__"]
    shown = json.dumps(waiting.value)
    assert CARD not in shown, shown
    assert waiting.value["call"]["arguments"] == {"invoice": "A-1", "card_number": "[secret]"}
    assert waiting.value["arguments"]["card_number"]["value"] == "[secret]"
    saved = json.dumps([t.value for t in agent.get_state(config).interrupts], default=str)
    assert CARD not in saved
    agent.invoke(Command(resume=True), config)
    assert paid == [{"invoice": "A-1", "card_number": CARD}]  # the tool has the real value
