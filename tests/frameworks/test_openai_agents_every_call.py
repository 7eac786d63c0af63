"""Every tool call of an Agents SDK run under Stalwart goes through the one check.

A host's own function tools and the tools of the agent's MCP servers (`mcp_servers=`) are not
`StalwartTools`' tools: the SDK would run them with no check at all. Here they run through the
check as guarded tools do, the real Agents SDK driven by a scripted model, and the MCP server a
real one (`python -m tests.gateway.servers shop`, written with the `mcp` SDK) over stdio.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from agents import Agent, Runner, WebSearchTool, function_tool, handoff
from agents.mcp import MCPServerStdio

from stalwart_agents.guarded import plain_function
from stalwart_agents.openai_agents import StalwartTools, UncheckedToolError
from tests.frameworks.scripted_agents_model import ScriptedModel
from tests.frameworks.test_openai_agents import make, run, streamed

ROOT = Path(__file__).resolve().parents[2]


def mcp_shop(calls):  # noqa: ANN001, ANN201
    """The gateway tests' MCP shop server (get_order, refund_card, close_account, server_pid)."""
    return MCPServerStdio(
        params={
            "command": sys.executable,
            "args": ["-m", "tests.gateway.servers", "shop"],
            "cwd": str(ROOT),
            "env": {"GATEWAY_TEST_CALLS": str(calls), "PYTHONPATH": str(ROOT)},
        },
        name="shop",
        client_session_timeout_seconds=30,
    )


def reached(calls) -> list[str]:  # noqa: ANN001
    """The tools the MCP server was called for."""
    if not calls.exists():
        return []
    return [line.split(" ")[1] for line in calls.read_text(encoding="utf-8").splitlines()]


def run_with(agent, given, tools, server):  # noqa: ANN001, ANN201
    async def go():  # noqa: ANN202
        async with server:
            return await Runner.run(
                agent, given, run_config=tools.run_config(tracing_disabled=True)
            )

    return asyncio.run(go())


# -- a host's own function tools -------------------------------------------------------------------


@pytest.mark.parametrize("runner", [run, streamed], ids=["run", "run_streamed"])
def test_a_host_tool_the_catalogue_does_not_know_is_refused_and_does_not_run(
    shop, functions, ran, host, runner
):
    model = ScriptedModel(("weather", {"city": "Lisbon"}, "c1"), "sorry")
    agent, tools, _ = make(shop, functions, model)
    agent.tools = [*agent.tools, host["weather"]]
    result = runner(tools.guard_agent(agent), "weather in Lisbon?", tools)
    assert result.final_output == "sorry"
    assert ran == []
    assert model.read("unknown_tool")


def test_a_run_of_an_unguarded_agent_with_a_host_tool_does_not_start(shop, functions, ran, host):
    """The documented `run_config()` refuses to run an agent whose tools it cannot check."""
    model = ScriptedModel(("weather", {"city": "Lisbon"}, "c1"), "sunny it is")
    agent, tools, _ = make(shop, functions, model)
    agent.tools = [*agent.tools, host["weather"]]
    with pytest.raises(UncheckedToolError, match="`weather`"):
        run(agent, "weather in Lisbon?", tools)
    assert ran == []


def test_a_host_tool_the_catalogue_knows_gets_the_same_decision_as_a_guarded_one(
    shop, functions, ran, host
):
    model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"),
        ("charge_card", {"order_id": "4411", "amount": 35}, "c2"),
        "charged",
    )
    agent, tools, guard = make(shop, functions, model)
    agent.tools = [t for t in agent.tools if t.name != "charge_card"] + [host["charge_card"]]
    agent = tools.guard_agent(agent)
    result = run(agent, "charge order 4411", tools)
    (item,) = result.interruptions
    prompt = tools.prompt(item)
    assert prompt["call"]["arguments"] == {"order_id": "4411", "amount": 35}
    assert "argument_origin: amount" in prompt["reasons"]
    assert [name for name, _ in ran] == ["get_order"]
    state = result.to_state()
    state.approve(item)
    resumed = run(agent, state, tools)
    assert resumed.final_output == "charged"
    assert ran[-1] == ("charge_card", {"order_id": "4411", "amount": 35})
    history = [e.content["tool"] for e in guard.session.history]
    assert history == ["get_order", "charge_card"]


def test_a_hosted_tool_cannot_be_checked_and_guarding_its_agent_says_so(shop, functions):
    agent, tools, _ = make(shop, functions, ScriptedModel("hi"))
    agent.tools = [*agent.tools, WebSearchTool()]
    with pytest.raises(UncheckedToolError, match="`web_search`"):
        tools.guard_agent(agent)


@pytest.mark.parametrize("given", [lambda a: a, handoff], ids=["agent", "handoff"])
def test_the_tools_of_an_agent_handed_to_are_checked_as_that_agents(
    shop, functions, ran, host, given
):
    desk_model = ScriptedModel(("transfer_to_billing", {}, "c1"))
    billing_model = ScriptedModel(("weather", {"city": "Lisbon"}, "c2"), "no weather here")
    desk, tools, guard = make(shop, functions, desk_model)
    billing = Agent(name="billing", tools=[host["weather"]], model=billing_model)
    desk.handoffs = [given(billing)]
    result = run(tools.guard_agent(desk), "weather in Lisbon?", tools)
    assert result.last_agent.name == "billing" and result.final_output == "no weather here"
    assert ran == []
    assert billing_model.read("unknown_tool")


# -- the tools of the agent's MCP servers --------------------------------------------------------


def test_an_mcp_servers_tools_go_through_the_check(shop, functions, ran, calls):
    model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"),
        ("close_account", {"customer_id": "c-7"}, "c2"),
        ("refund_card", {"order_id": "4411", "amount": 5}, "c3"),
        "done",
    )
    guard_tools = {k: plain_function(f) for k, f in functions.items()}
    agent, tools, guard = make(shop, functions, model)
    tools = StalwartTools(guard, shop.catalogue(), names=["read_inbox"], functions=guard_tools)
    server = mcp_shop(calls)
    agent.tools = tools.tools
    agent.mcp_servers = [server]
    result = run_with(tools.guard_agent(agent), "show order 4411", tools, server)
    assert result.final_output == "done"
    assert reached(calls) == ["get_order"]  # close_account (unknown), refund_card (billing's)
    (entry,) = list(guard.session.history)
    assert (entry.content["agent"], entry.content["tool"]) == ("desk", "get_order")
    assert entry.content["result"]["status"] == "paid"  # the server's answer, recorded
    assert model.read("unknown_tool")


def test_a_run_of_an_unguarded_agent_with_an_mcp_server_does_not_start(shop, functions, calls):
    model = ScriptedModel(("close_account", {"customer_id": "c-7"}, "c1"), "closed")
    agent, tools, _ = make(shop, functions, model)
    server = mcp_shop(calls)
    agent.mcp_servers = [server]
    with pytest.raises(UncheckedToolError, match="`shop`"):
        run_with(agent, "close my account", tools, server)
    assert reached(calls) == []


def test_a_host_tool_and_a_guarded_one_called_in_parallel_each_run_once_checked(
    shop, functions, ran
):
    @function_tool
    def get_order(order_id: str) -> dict:
        """Look up an order."""
        ran.append(("host get_order", {"order_id": order_id}))
        return {"order_id": order_id, "status": "paid"}

    model = ScriptedModel(
        [("get_order", {"order_id": "4411"}, "c1"), ("read_inbox", {}, "c2")], "done"
    )
    agent, tools, guard = make(shop, functions, model)
    agent.tools = [t for t in agent.tools if t.name != "get_order"] + [get_order]
    result = run(tools.guard_agent(agent), "order 4411 and my inbox", tools)
    assert result.final_output == "done"
    assert sorted(name for name, _ in ran) == ["host get_order", "read_inbox"]
    assert sorted(e.content["tool"] for e in guard.session.history) == ["get_order", "read_inbox"]


def test_an_mcp_tool_of_the_agent_handed_to_asks_the_person_and_runs_only_once_approved(
    shop, functions, ran, calls
):
    desk_model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"),
        ("read_inbox", {}, "c2"),
        ("transfer_to_billing", {}, "c3"),
    )
    billing_model = ScriptedModel(("refund_card", {"order_id": "4411", "amount": 999}, "c4"), "ok")
    desk, tools, guard = make(shop, functions, desk_model)
    server = mcp_shop(calls)
    desk.handoffs = [Agent(name="billing", mcp_servers=[server], model=billing_model)]
    desk = tools.guard_agent(desk)
    config = tools.run_config(tracing_disabled=True)

    async def go():  # noqa: ANN202
        async with server:
            result = await Runner.run(desk, "show order 4411 and my inbox", run_config=config)
            (item,) = result.interruptions
            prompt = tools.prompt(item)
            before = reached(calls)
            state = result.to_state()
            state.approve(item)
            return prompt, before, await Runner.run(desk, state, run_config=config)

    prompt, before, resumed = asyncio.run(go())
    assert prompt["call"]["agent"] == "billing" and "tainted_call" in prompt["reasons"]
    assert before == []  # nothing reached the server before the yes
    assert resumed.final_output == "ok"
    assert reached(calls) == ["refund_card"]
    history = [(e.content["agent"], e.content["tool"]) for e in guard.session.history]
    assert history[-1] == ("billing", "refund_card")
