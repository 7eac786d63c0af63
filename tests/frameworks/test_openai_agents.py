"""The OpenAI Agents SDK under the guard: the real package, a scripted `Model` of our own."""

from __future__ import annotations

import asyncio
import json

import pytest
from agents import Agent, Runner, RunState
from agents.exceptions import ModelBehaviorError

from stalwart_agents.guarded import Guard, plain_function
from stalwart_agents.openai_agents import StalwartTools
from tests.frameworks.conftest import noting
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


def streamed(agent, given, tools, **options):  # noqa: ANN001, ANN003, ANN201
    """A run through `Runner.run_streamed`, its events read to the end (the same hooks run)."""

    async def go():  # noqa: ANN202
        result = Runner.run_streamed(
            agent, given, run_config=tools.run_config(tracing_disabled=True, **options)
        )
        async for _ in result.stream_events():
            pass
        return result

    return asyncio.run(go())


def test_a_read_runs_its_output_is_recorded_and_the_input_is_read_as_a_turn(shop, functions, ran):
    model = ScriptedModel(("get_order", {"order_id": "4411"}, "c1"), "done")
    agent, tools, guard = make(shop, functions, model)
    result = run(agent, "show order 4411", tools)
    assert result.final_output == "done"
    assert ran == [("get_order", {"order_id": "4411"})]
    assert guard.session.turns == ["show order 4411"]
    (entry,) = list(guard.session.history)
    assert entry.content["result"]["status"] == "paid"


@pytest.mark.parametrize("runner", [run, streamed], ids=["run", "run_streamed"])
def test_a_write_with_a_model_written_amount_interrupts_and_runs_only_after_approval(
    shop, functions, ran, runner
):
    model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"),
        ("charge_card", {"order_id": "4411", "amount": 35}, "c2"),
        "charged",
    )
    agent, tools, _ = make(shop, functions, model)
    result = runner(agent, "charge order 4411", tools)
    (item,) = result.interruptions
    prompt = tools.prompt(item)
    assert prompt["call"]["arguments"] == {"order_id": "4411", "amount": 35}
    assert prompt["arguments"]["amount"]["origin"] == "model"
    assert "argument_origin: amount" in prompt["reasons"]
    assert [name for name, _ in ran] == ["get_order"]
    state = result.to_state()
    state.approve(item)
    resumed = runner(agent, state, tools)
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


@pytest.mark.parametrize("runner", [run, streamed], ids=["run", "run_streamed"])
def test_under_taint_policy_refuse_the_guardrail_rejects_it_with_the_reasons(
    shop, functions, ran, runner
):
    model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"),
        ("read_inbox", {}, "c2"),
        ("charge_card", {"order_id": "4411", "amount": 999}, "c3"),
        "done",
    )
    agent, tools, _ = make(shop, functions, model, settings={"taint_policy": "refuse"})
    result = runner(agent, "show order 4411 and my inbox", tools)
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


# -- handoffs: one conversation across agents ------------------------------------------------------


def desk_and_billing(shop, functions, desk_model, billing_model):  # noqa: ANN001, ANN201
    """desk hands off to billing the SDK's way; billing's guard is desk's `handoff`: one session."""
    desk, desk_tools, guard = make(shop, functions, desk_model)
    refunds: list = []
    billing_guard = guard.handoff(
        "billing", tools={"refund_card": lambda a: refunds.append(a) or {"refunded": a["amount"]}}
    )
    billing_tools = StalwartTools(billing_guard, shop.catalogue())
    billing = Agent(name="billing", tools=billing_tools.tools, model=billing_model)
    desk.handoffs = [billing]
    return desk, billing, desk_tools, billing_tools, refunds


def test_a_handoff_continues_the_conversations_signed_history(shop, functions, ran):
    desk_model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"), ("transfer_to_billing", {}, "c2")
    )
    billing_model = ScriptedModel("billing here")
    desk, _, desk_tools, billing_tools, _ = desk_and_billing(
        shop, functions, desk_model, billing_model
    )
    result = run(desk, "show order 4411", desk_tools)
    assert result.last_agent.name == "billing" and result.final_output == "billing here"
    assert billing_tools.guard.session is desk_tools.guard.session
    history = [(e.content["agent"], e.content["tool"]) for e in desk_tools.guard.session.history]
    assert history == [("desk", "get_order")]
    assert desk_tools.guard.session.turns == ["show order 4411"]


def test_outside_content_read_before_a_handoff_taints_the_next_agents_write(shop, functions, ran):
    desk_model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"),
        ("read_inbox", {}, "c2"),
        ("transfer_to_billing", {}, "c3"),
    )
    billing_model = ScriptedModel(("refund_card", {"order_id": "4411", "amount": 999}, "c4"), "ok")
    desk, billing, desk_tools, billing_tools, refunds = desk_and_billing(
        shop, functions, desk_model, billing_model
    )
    result = run(desk, "show order 4411 and my inbox", desk_tools)
    (item,) = result.interruptions
    prompt = billing_tools.prompt(item)
    assert prompt["call"]["agent"] == "billing"
    assert "tainted_call" in prompt["reasons"]
    assert refunds == []
    state = result.to_state()
    state.approve(item)
    resumed = run(desk, state, desk_tools)
    assert resumed.final_output == "ok"
    assert refunds == [{"order_id": "4411", "amount": 999}]  # exactly the call approved
    tools = [(e.content["agent"], e.content["tool"]) for e in desk_tools.guard.session.history]
    assert tools[-1] == ("billing", "refund_card")


def test_the_agent_handed_to_is_refused_a_tool_it_does_not_have_and_told_why(shop, functions, ran):
    desk_model = ScriptedModel(("transfer_to_billing", {}, "c1"))
    billing_model = ScriptedModel(("charge_card", {"order_id": "4411", "amount": 5}, "c2"), "no")
    desk, _, desk_tools, billing_tools, _ = desk_and_billing(
        shop, functions, desk_model, billing_model
    )
    result = asyncio.run(
        Runner.run(
            desk, "charge order 4411", run_config=billing_tools.run_config(tracing_disabled=True)
        )
    )
    assert result.final_output == "no"
    assert ran == []
    assert billing_model.read("unknown_tool")


# -- the run and thread ids ------------------------------------------------------------------------


def test_each_decision_carries_the_runs_trace_and_group_ids(shop, functions, ran):
    model = ScriptedModel(
        ("get_order", {"order_id": "4411"}, "c1"),
        ("charge_card", {"order_id": "4411", "amount": 35}, "c2"),
        "charged",
    )
    agent, tools, guard = make(shop, functions, model)
    decisions = noting(guard.session, "check_tool_call")
    result = streamed(agent, "charge order 4411", tools, trace_id="trace_4411", group_id="chat-9")
    (item,) = result.interruptions
    assert tools.prompt(item)["run"] == {"run_id": "trace_4411", "thread_id": "chat-9"}
    assert decisions and all(
        d.detail["run"] == {"run_id": "trace_4411", "thread_id": "chat-9"} for d in decisions
    )
