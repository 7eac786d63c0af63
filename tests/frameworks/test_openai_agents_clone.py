"""A copy of a guarded Agents SDK agent (`agent.clone(...)`, `dataclasses.replace`) is guarded as
the original: every call of the copy, its host tools' and its MCP servers', goes through the
original's check, with the documented `run_config()` or without it. The real Agents SDK, a
scripted model, the MCP shop a real server over stdio."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from agents import Agent, RunConfig, Runner, WebSearchTool, handoff

from stalwart_agents.guarded import plain_function
from stalwart_agents.openai_agents import StalwartTools, UncheckedToolError
from tests.frameworks.scripted_agents_model import ScriptedModel
from tests.frameworks.test_openai_agents import make
from tests.frameworks.test_openai_agents_every_call import mcp_shop, reached

CONFIGS = [True, False]
CONFIG_IDS = ["run_config", "no_run_config"]


def run_on(agent, given, tools, server, *, config):  # noqa: ANN001, ANN201
    """`given` run by `agent`, the MCP server open; with `tools.run_config()` or with a plain
    `RunConfig` (tracing off: nothing leaves this machine)."""
    plain = RunConfig(tracing_disabled=True)

    async def go():  # noqa: ANN202
        async with server:
            options = tools.run_config(tracing_disabled=True) if config else plain
            return await Runner.run(agent, given, run_config=options)

    return asyncio.run(go())


def desk_with_mcp(shop, functions, model, calls):  # noqa: ANN001, ANN201
    """desk with its `read_inbox` guarded and the MCP shop as its server, guarded."""
    agent, tools, guard = make(shop, functions, model)
    plain = {k: plain_function(f) for k, f in functions.items()}
    tools = StalwartTools(guard, shop.catalogue(), names=["read_inbox"], functions=plain)
    server = mcp_shop(calls)
    agent.tools = tools.tools
    agent.mcp_servers = [server]
    return tools.guard_agent(agent), tools, guard, server


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize(
    "copy",
    [
        lambda a: a.clone(instructions="You are the shop's night desk."),
        lambda a: dataclasses.replace(a, instructions="You are the shop's night desk."),
    ],
    ids=["clone", "replace"],
)
def test_a_copy_of_a_guarded_agent_puts_its_mcp_calls_through_the_check(
    shop, functions, calls, config, copy
):
    model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"),
        ("close_account", {"customer_id": "c-7"}, "c2"),
        "done",
    )
    desk, tools, guard, server = desk_with_mcp(shop, functions, model, calls)
    night = copy(desk)
    assert night.instructions != desk.instructions
    result = run_on(night, "show order 4411 and close my account", tools, server, config=config)
    assert result.final_output == "done"
    assert reached(calls) == ["get_order"]  # close_account: unknown_tool, it never reached it
    assert model.read("unknown_tool")
    assert [e.content["tool"] for e in guard.session.history] == ["get_order"]


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_a_host_tool_given_to_a_clone_is_checked_as_the_originals(
    shop, functions, ran, host, calls, config
):
    model = ScriptedModel(("weather", {"city": "Lisbon"}, "c1"), "sorry")
    desk, tools, _, server = desk_with_mcp(shop, functions, model, calls)
    clone = desk.clone(tools=[*desk.tools, host["weather"]])
    result = run_on(clone, "weather in Lisbon?", tools, server, config=config)
    assert result.final_output == "sorry"
    assert ran == []
    assert model.read("unknown_tool")


def test_a_clone_given_a_tool_no_check_can_stand_in_front_of_is_refused(shop, functions, calls):
    desk, _, _, _ = desk_with_mcp(shop, functions, ScriptedModel("hi"), calls)
    with pytest.raises(UncheckedToolError, match="`web_search`"):
        desk.clone(tools=[*desk.tools, WebSearchTool()])


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("given", [lambda a: a, handoff], ids=["agent", "handoff"])
def test_a_handoff_to_a_clone_of_a_guarded_agent_is_checked_as_that_agents(
    shop, functions, ran, calls, config, given
):
    desk_model = ScriptedModel(("transfer_to_billing", {}, "c1"))
    billing_model = ScriptedModel(("close_account", {"customer_id": "c-7"}, "c2"), "not closed")
    desk, tools, guard = make(shop, functions, desk_model)
    server = mcp_shop(calls)
    billing = Agent(name="billing", mcp_servers=[server], model=billing_model)
    desk.handoffs = [billing]
    desk = tools.guard_agent(desk)
    # After guarding: desk's copy hands off to a copy of billing.
    evening = desk.clone(handoffs=[given(billing.clone(handoff_description="Refunds."))])
    result = run_on(evening, "close my account", tools, server, config=config)
    assert result.last_agent.name == "billing" and result.final_output == "not closed"
    assert reached(calls) == []
    assert billing_model.read("unknown_tool")
    assert list(guard.session.history) == []


def test_a_copy_told_to_drop_its_guard_does_not_run(shop, functions, calls):
    model = ScriptedModel(("close_account", {"customer_id": "c-7"}, "c1"), "closed")
    desk, tools, _, server = desk_with_mcp(shop, functions, model, calls)
    bare = desk.clone(_stalwart_tools=None)
    with pytest.raises(UncheckedToolError, match="without its guard"):
        run_on(bare, "close my account", tools, server, config=False)
    assert reached(calls) == []
