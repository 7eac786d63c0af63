"""An Agents SDK run state resumed (`state.approve(item)`, `Runner.run(agent, state)`) runs an
approved call only through the check: resumed with an agent whose tools are not all checked (the
agent rebuilt from its saved state without `tools.guard_agent`), with `tools.run_config()` or
without it, the run stops with `UncheckedToolError` and the call is not made. The real Agents SDK,
a scripted model."""

from __future__ import annotations

import asyncio
import json

import pytest
from agents import Agent, RunConfig, Runner, RunState

from stalwart_agents.openai_agents import UncheckedToolError
from tests.frameworks.scripted_agents_model import ScriptedModel
from tests.frameworks.test_openai_agents import make, run

CONFIGS = [True, False]
CONFIG_IDS = ["run_config", "no_run_config"]


def interrupted(shop, functions, host):  # noqa: ANN001, ANN201
    """desk (the host's own `charge_card` among its tools, guarded) asked about a charge: the
    saved state, the model, the `StalwartTools` and desk's guarded tools but that one."""
    model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"),
        ("charge_card", {"order_id": "4411", "amount": 35}, "c2"),
        "charged",
    )
    desk, tools, _ = make(shop, functions, model)
    own = [t for t in desk.tools if t.name != "charge_card"]
    desk.tools = [*own, host["charge_card"]]
    result = run(tools.guard_agent(desk), "charge order 4411", tools)
    (item,) = result.interruptions
    assert "argument_origin: amount" in tools.prompt(item)["reasons"]
    return json.dumps(result.to_state().to_json()), model, tools, own


def resume(agent, saved, tools, *, config):  # noqa: ANN001, ANN201
    """The saved state resumed by `agent`, its one interruption approved."""
    options = (
        tools.run_config(tracing_disabled=True) if config else RunConfig(tracing_disabled=True)
    )

    async def go():  # noqa: ANN202
        state = await RunState.from_json(agent, json.loads(saved))
        state.approve(state.get_interruptions()[0])
        return await Runner.run(agent, state, run_config=options)

    return asyncio.run(go())


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_an_approved_call_resumed_by_an_agent_not_guarded_is_not_made(
    shop, functions, ran, host, config
):
    saved, model, tools, own = interrupted(shop, functions, host)
    # Another process rebuilds desk from the same parts, and forgets `tools.guard_agent`.
    rebuilt = Agent(name="desk", tools=[*own, host["charge_card"]], model=model)
    with pytest.raises(UncheckedToolError, match="`charge_card`.*`desk`"):
        resume(rebuilt, saved, tools, config=config)
    assert [name for name, _ in ran] == ["get_order"]


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_an_approved_call_resumed_by_the_agent_guarded_runs_as_approved(
    shop, functions, ran, host, config
):
    saved, model, tools, own = interrupted(shop, functions, host)
    rebuilt = tools.guard_agent(Agent(name="desk", tools=[*own, host["charge_card"]], model=model))
    result = resume(rebuilt, saved, tools, config=config)
    assert result.final_output == "charged"
    assert ran[-1] == ("charge_card", {"order_id": "4411", "amount": 35})
    history = [e.content["tool"] for e in tools.guard.session.history]
    assert history == ["get_order", "charge_card"]
