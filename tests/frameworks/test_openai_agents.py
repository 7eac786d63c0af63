"""The OpenAI Agents SDK under the guard: the real package, a scripted `Model` of our own."""

from __future__ import annotations

import asyncio
import json

import pytest
from agents import Agent, Runner, RunState
from agents.exceptions import ModelBehaviorError

from stalwart_agents.guarded import Guard, plain_function
from stalwart_agents.openai_agents import StalwartTools
from tests.frameworks.scripted_agents_model import ScriptedModel


def make(shop, functions, model, **guard_options):  # noqa: ANN001, ANN003, ANN201
    guard = Guard.for_agent(shop, "desk", **guard_options)
    tools = StalwartTools(
        guard,
        shop.catalogue(),
        functions={name: plain_function(f) for name, f in functions.items()},
    )
    agent = Agent(
        name="desk",
        instructions="You are the shop's desk.",
        tools=tools.tools,
        model=model,
        input_guardrails=[tools.input_guardrail()],
    )
    return agent, tools, guard


def run(agent, given, tools):  # noqa: ANN001, ANN201
    return asyncio.run(Runner.run(agent, given, run_config=tools.run_config(tracing_disabled=True)))


def test_a_read_runs_its_output_is_recorded_and_the_input_is_read_as_a_turn(shop, functions, ran):
    model = ScriptedModel(("get_order", {"order_id": "4411"}, "c1"), "done")
    agent, tools, guard = make(shop, functions, model)
    result = run(agent, "show order 4411", tools)
    assert result.final_output == "done"
    assert ran == [("get_order", {"order_id": "4411"})]
    assert guard.session.turns == ["show order 4411"]
    (entry,) = list(guard.session.history)
    assert entry.content["result"]["status"] == "paid"


def test_a_write_with_a_model_written_amount_interrupts_and_runs_only_after_approval(
    shop, functions, ran
):
    model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"),
        ("charge_card", {"order_id": "4411", "amount": 35}, "c2"),
        "charged",
    )
    agent, tools, _ = make(shop, functions, model)
    result = run(agent, "charge order 4411", tools)
    (item,) = result.interruptions
    prompt = tools.prompt(item)
    assert prompt["call"]["arguments"] == {"order_id": "4411", "amount": 35}
    assert prompt["arguments"]["amount"]["origin"] == "model"
    assert "argument_origin: amount" in prompt["reasons"]
    assert [name for name, _ in ran] == ["get_order"]
    state = result.to_state()
    state.approve(item)
    resumed = run(agent, state, tools)
    assert resumed.final_output == "charged"
    assert ran[-1] == ("charge_card", {"order_id": "4411", "amount": 35})


def test_a_rejected_call_runs_nothing(shop, functions, ran):
    model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"),
        ("charge_card", {"order_id": "4411", "amount": 35}, "c2"),
        "not charged",
    )
    agent, tools, _ = make(shop, functions, model)
    result = run(agent, "charge order 4411", tools)
    state = result.to_state()
    state.reject(result.interruptions[0])
    run(agent, state, tools)
    assert [name for name, _ in ran] == ["get_order"]


def test_an_approved_call_resumed_with_changed_arguments_does_not_run(shop, functions, ran):
    model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"),
        ("charge_card", {"order_id": "4411", "amount": 4}, "c2"),
        "charged",
    )
    agent, tools, _ = make(shop, functions, model)
    result = run(agent, "charge order 4411", tools)
    saved = json.dumps(result.to_state().to_json())
    tampered = saved.replace('\\"amount\\": 4}', '\\"amount\\": 4000}')
    assert tampered != saved
    state = asyncio.run(RunState.from_json(agent, json.loads(tampered)))
    with pytest.raises(ModelBehaviorError):  # the SDK itself sees another invocation
        state.approve(state.get_interruptions()[0])
        run(agent, state, tools)
    assert [name for name, _ in ran] == ["get_order"]


def test_the_guard_refuses_a_resumed_call_whose_arguments_differ_from_the_approved_one(
    shop, functions, ran
):
    guard = Guard.for_agent(
        shop, "desk", tools={k: plain_function(f) for k, f in functions.items()}
    )
    guard.call_with("get_order", {"order_id": "4411"})
    waiting = guard.call_with("charge_card", {"order_id": "4411", "amount": 4})
    changed = guard.resume(
        waiting, {"approved": True, "arguments": {"order_id": "4411", "amount": 4000}}
    )
    assert changed.status == "refused" and "token_mismatch" in changed.reasons
    assert [name for name, _ in ran] == ["get_order"]


def test_a_write_after_an_injected_email_interrupts_as_tainted(shop, functions, ran):
    model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"),
        ("read_inbox", {}, "c2"),
        ("charge_card", {"order_id": "4411", "amount": 999}, "c3"),
        "done",
    )
    agent, tools, _ = make(shop, functions, model)
    result = run(agent, "show order 4411 and my inbox", tools)
    (item,) = result.interruptions
    assert "tainted_call" in tools.prompt(item)["reasons"]
    assert "charge_card" not in [name for name, _ in ran]


def test_under_taint_policy_refuse_the_guardrail_rejects_it_with_the_reasons(shop, functions, ran):
    model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"),
        ("read_inbox", {}, "c2"),
        ("charge_card", {"order_id": "4411", "amount": 999}, "c3"),
        "done",
    )
    agent, tools, _ = make(shop, functions, model, settings={"taint_policy": "refuse"})
    result = run(agent, "show order 4411 and my inbox", tools)
    assert result.interruptions == []
    assert "charge_card" not in [name for name, _ in ran]
    assert model.read("tainted_call")  # the rejection message reached the model
    rejected = [
        r for r in result.tool_input_guardrail_results if r.output.behavior["type"] != "allow"
    ]
    assert rejected and "tainted_call" in rejected[0].output.behavior["message"]


def test_a_tool_not_in_the_catalogue_is_refused_and_the_model_told_why(shop, functions, ran):
    model = ScriptedModel(("delete_order", {"order_id": "4411"}, "c1"), "sorry")
    agent, tools, _ = make(shop, functions, model)
    result = run(agent, "delete order 4411", tools)
    assert result.final_output == "sorry"
    assert ran == []
    assert model.read("unknown_tool")
