"""The Agents SDK door: a call asked about and never approved leaves nothing behind that a later
call (another run, the same call id) can use to run without its own check."""

from __future__ import annotations

import asyncio

from agents import Agent, Runner

from stalwart_agents import Client
from stalwart_agents.guarded import Guard
from stalwart_agents.openai_agents import StalwartTools
from tests.frameworks.scripted_agents_model import ScriptedModel

PARAMETERS = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["to", "amount"],
}
CATALOGUE = {
    "agents": {"desk": {"tools": ["pay", "wire"]}},
    "tools": [
        {"name": "pay", "kind": "write", "description": "Pays.", "parameters": PARAMETERS},
        {
            "name": "wire",
            "kind": "write",
            "description": "Wires money abroad.",
            "parameters": PARAMETERS,
            "checks": [{"spend": {"argument": "amount", "at_most": 100, "per": "run"}}],
        },
    ],
}


def run(agent, given, tools):  # noqa: ANN001, ANN201
    return asyncio.run(Runner.run(agent, given, run_config=tools.run_config(tracing_disabled=True)))


def test_a_rejected_calls_id_reused_later_does_not_run_another_tool_past_its_check():
    ran: list[tuple[str, dict]] = []
    functions = {
        "pay": lambda arguments: ran.append(("pay", arguments)) or {"paid": True},
        "wire": lambda arguments: ran.append(("wire", arguments)) or {"wired": True},
    }
    guard = Guard(Client().session("desk", catalogue=CATALOGUE))
    tools = StalwartTools(guard, CATALOGUE, functions=functions)
    arguments = {"to": "acct-9", "amount": 300}
    model = ScriptedModel(("pay", arguments, "c9"), "not paid", ("wire", arguments, "c9"), "done")
    agent = Agent(
        name="desk",
        instructions="You are the desk.",
        tools=tools.tools,
        model=model,
        input_guardrails=[tools.input_guardrail()],
    )
    first = run(agent, "pay acct-9 300", tools)
    (item,) = first.interruptions
    state = first.to_state()
    state.reject(item)  # the person says no: nothing runs
    run(agent, state, tools)
    assert ran == []
    # A later run: the model asks for `wire` with the same arguments and the same call id.
    assert guard.check("wire", arguments).reasons == ["spend_exceeded"]
    run(agent, "and now?", tools)
    assert ran == []  # refused by its own check: it never ran, as `pay` or as itself
    assert [entry.content["tool"] for entry in guard.session.history] == []
