"""LangGraph and LangChain v1 under the guard: the real packages, a scripted chat model."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command

from stalwart_agents.guarded import Guard
from stalwart_agents.langgraph import (
    StalwartMiddleware,
    StalwartToolNode,
    build_stalwart_graph,
    graph_shape,
)
from tests.frameworks.conftest import noting


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model, taking the tools it is bound to (it answers from its script)."""

    seen: list = []

    def bind_tools(self, tools, **kwargs):  # noqa: ANN001, ANN003, ANN201
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001, ANN003, ANN202
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def call(name, args, ident):  # noqa: ANN001, ANN201
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": ident}])


def scripted(*steps):  # noqa: ANN002, ANN201
    return ScriptedChatModel(messages=iter([*steps, AIMessage(content="done")]), seen=[])


def make_agent(shop, functions, model, **guard_options):  # noqa: ANN001, ANN003, ANN201
    guard = Guard.for_agent(shop, "desk", **guard_options)
    tools = [StructuredTool.from_function(f, name=n, description=n) for n, f in functions.items()]
    agent = create_agent(
        model, tools, middleware=[StalwartMiddleware(guard)], checkpointer=InMemorySaver()
    )
    return agent, guard


CONFIG = {"configurable": {"thread_id": "t-1"}}


def tool_messages(out):  # noqa: ANN001, ANN201
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def test_a_read_the_model_chose_runs_and_its_result_is_recorded(shop, functions, ran):
    agent, guard = make_agent(
        shop, functions, scripted(call("get_order", {"order_id": "4411"}, "c1"))
    )
    out = agent.invoke({"messages": [HumanMessage("show order 4411")]}, CONFIG)
    assert ran == [("get_order", {"order_id": "4411"})]
    assert '"status": "paid"' in tool_messages(out)[0].content
    assert guard.session.turns == ["show order 4411"]  # the HumanMessage was read as a turn
    assert [entry.content["tool"] for entry in guard.session.history] == ["get_order"]


def test_a_write_with_an_amount_the_model_wrote_interrupts_and_runs_only_after_a_yes(
    shop, functions, ran
):
    model = scripted(
        call("get_order", {"order_id": "4411"}, "c1"),
        call("charge_card", {"order_id": "4411", "amount": 35}, "c2"),
    )
    agent, _ = make_agent(shop, functions, model)
    out = agent.invoke({"messages": [HumanMessage("charge order 4411")]}, CONFIG)
    (waiting,) = out["__interrupt__"]
    prompt = waiting.value
    assert prompt["call"]["tool"] == "charge_card"
    assert prompt["arguments"]["amount"]["value"] == 35
    assert prompt["arguments"]["amount"]["origin"] == "model"
    assert "argument_origin: amount" in prompt["reasons"]
    assert [name for name, _ in ran] == ["get_order"]  # nothing charged yet
    out = agent.invoke(Command(resume=True), CONFIG)
    assert ran[-1] == ("charge_card", {"order_id": "4411", "amount": 35})
    assert '"charged"' in tool_messages(out)[-1].content


def test_a_resumed_call_with_changed_arguments_is_refused(shop, functions, ran):
    model = scripted(
        call("get_order", {"order_id": "4411"}, "c1"),
        call("charge_card", {"order_id": "4411", "amount": 35}, "c2"),
    )
    agent, _ = make_agent(shop, functions, model)
    agent.invoke({"messages": [HumanMessage("charge order 4411")]}, CONFIG)
    changed = {"approved": True, "arguments": {"order_id": "4411", "amount": 4000}}
    out = agent.invoke(Command(resume=changed), CONFIG)
    assert [name for name, _ in ran] == ["get_order"]
    refusal = tool_messages(out)[-1]
    assert refusal.status == "error" and "token_mismatch" in refusal.content


def test_a_no_runs_nothing(shop, functions, ran):
    model = scripted(
        call("get_order", {"order_id": "4411"}, "c1"),
        call("charge_card", {"order_id": "4411", "amount": 35}, "c2"),
    )
    agent, _ = make_agent(shop, functions, model)
    agent.invoke({"messages": [HumanMessage("charge order 4411")]}, CONFIG)
    out = agent.invoke(Command(resume=False), CONFIG)
    assert [name for name, _ in ran] == ["get_order"]
    assert "approval_denied" in tool_messages(out)[-1].content


def test_a_write_after_an_injected_email_interrupts_as_tainted(shop, functions, ran):
    model = scripted(
        call("get_order", {"order_id": "4411"}, "c1"),
        call("read_inbox", {}, "c2"),
        call("charge_card", {"order_id": "4411", "amount": 999}, "c3"),
    )
    agent, guard = make_agent(shop, functions, model)
    out = agent.invoke({"messages": [HumanMessage("show order 4411 and my inbox")]}, CONFIG)
    (waiting,) = out["__interrupt__"]
    assert "tainted_call" in waiting.value["reasons"]
    assert "charge_card" not in [name for name, _ in ran]
    inbox = [e for e in guard.session.history if e.content["tool"] == "read_inbox"]
    assert inbox[0].content["labels"] == ["email"]  # recorded with the outside-content label


def test_under_taint_policy_refuse_the_injected_write_is_refused_and_the_model_told(
    shop, functions, ran
):
    model = scripted(
        call("get_order", {"order_id": "4411"}, "c1"),
        call("read_inbox", {}, "c2"),
        call("charge_card", {"order_id": "4411", "amount": 999}, "c3"),
    )
    agent, _ = make_agent(shop, functions, model, settings={"taint_policy": "refuse"})
    out = agent.invoke({"messages": [HumanMessage("show order 4411 and my inbox")]}, CONFIG)
    assert "__interrupt__" not in out
    assert "charge_card" not in [name for name, _ in ran]
    assert "tainted_call" in tool_messages(out)[-1].content
    assert any("tainted_call" in str(m.content) for m in model.seen[-1])  # the model read why


def test_a_tool_not_in_the_catalogue_is_refused_and_the_model_told_why(shop, functions, ran):
    model = scripted(call("delete_order", {"order_id": "4411"}, "c1"))
    agent, _ = make_agent(shop, functions, model)
    out = agent.invoke({"messages": [HumanMessage("delete order 4411")]}, CONFIG)
    assert ran == []
    refusal = tool_messages(out)[0]
    assert refusal.status == "error" and "unknown_tool" in refusal.content
    assert any("unknown_tool" in str(m.content) for m in model.seen[-1])


def test_the_tool_node_drop_in_guards_every_call(shop, functions, ran):
    guard = Guard.for_agent(shop, "desk")
    tools = [StructuredTool.from_function(f, name=n, description=n) for n, f in functions.items()]
    model = scripted(call("charge_card", {"order_id": "4411", "amount": 35}, "c1"))

    def think(state):  # noqa: ANN001, ANN202
        return {"messages": [model.invoke(state["messages"])]}

    def after(state):  # noqa: ANN001, ANN202
        return "tools" if state["messages"][-1].tool_calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("model", think)
    graph.add_node("tools", StalwartToolNode(tools, guard=guard))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", after, ["tools", END])
    graph.add_edge("tools", "model")
    app = graph.compile(checkpointer=InMemorySaver())
    out = app.invoke({"messages": [HumanMessage("charge order 4411")]}, CONFIG)
    # charge_card is declared `after: get_order`: refused before any person is asked
    assert ran == []
    assert "order_rule" in tool_messages(out)[0].content


def test_the_graph_built_from_agent_yaml_is_the_graph_proved():
    from stalwart_agents import Agent
    from stalwart_agents.agent import NotVerified
    from tests.frameworks.conftest import SHOP

    proved = Agent.from_file(SHOP)  # verify=True: proved before it is built
    graph = build_stalwart_graph(proved, models={"desk": scripted()}, checkpointer=InMemorySaver())
    nodes, edges = graph_shape(graph)
    assert (nodes, edges) == graph_shape(proved.export())
    assert len(nodes) == 19 and ("desk_check_charge_card", "desk_confirm_charge_card") in edges
    with pytest.raises(NotVerified, match="proved agent"):
        build_stalwart_graph(Agent.from_file(SHOP, verify=False), models={})


def test_a_turn_the_router_reads_never_reaches_the_model(shop):
    model = scripted()
    graph = build_stalwart_graph(
        shop, require_proof=False, models={"desk": model}, checkpointer=InMemorySaver()
    )
    out = graph.invoke({"messages": [HumanMessage("show order 4411")]}, CONFIG)
    assert model.seen == []
    assert '"status": "paid"' in out["messages"][-1].content


def test_a_planned_write_in_the_graph_asks_the_person_then_runs_exactly_it(shop):
    graph = build_stalwart_graph(
        shop, require_proof=False, models={"desk": scripted()}, checkpointer=InMemorySaver()
    )
    out = graph.invoke({"messages": [HumanMessage("charge 40 on order 4411")]}, CONFIG)
    (waiting,) = out["__interrupt__"]
    assert waiting.value["call"] == {
        "tool": "charge_card",
        "agent": "desk",
        "arguments": {"order_id": "4411", "amount": 40},
    }
    assert waiting.value["arguments"]["amount"]["origin"] == "typed"
    desk = graph.stalwart_guards["desk"]
    assert [e.content["tool"] for e in desk.session.history] == ["get_order"]  # the chain's read
    out = graph.invoke(Command(resume="yes"), CONFIG)
    assert [e.content["tool"] for e in desk.session.history] == ["get_order", "charge_card"]
    assert '"charged": 40' in out["messages"][-1].content


def test_the_graph_refuses_what_the_model_calls_outside_the_catalogue(shop):
    model = scripted(call("delete_order", {"order_id": "4411"}, "c1"))
    graph = build_stalwart_graph(
        shop,
        require_proof=False,
        models={"desk": model},
        checkpointer=InMemorySaver(),
    )
    guards = graph.stalwart_guards
    assert set(guards) == {"desk", "billing"}
    out = graph.invoke({"messages": [HumanMessage("what is the weather")]}, CONFIG)
    # desk's on_unread is refuse: the router answers, the model is never called
    assert model.seen == [] and "__interrupt__" not in out


@pytest.mark.parametrize("answer", [True, "yes", {"approved": True}])
def test_every_form_of_yes_is_read_as_one(shop, functions, ran, answer):
    guard = Guard.for_agent(
        shop, "desk", tools={"get_order": lambda a: {"order_id": "4411", "card": "v"}}
    )
    guard.call_with("get_order", {"order_id": "4411"})
    waiting = guard.call_with(
        "charge_card", {"order_id": "4411", "amount": 1}, function=lambda a: "ok"
    )
    assert waiting.status == "confirm"
    assert guard.resume(waiting, answer, function=lambda a: "ok").status == "ran"


def test_the_catalogues_tools_made_for_langchain_run_under_the_middleware(shop):
    from stalwart_agents.langgraph import langchain_tools

    guard = Guard.for_agent(shop, "desk")
    tools = langchain_tools(guard, shop.catalogue())
    assert [t.name for t in tools] == ["get_order", "charge_card", "send_receipt", "read_inbox"]
    model = scripted(call("get_order", {"order_id": "4411"}, "c1"), call("read_inbox", {}, "c2"))
    agent = create_agent(
        model, tools, middleware=[StalwartMiddleware(guard)], checkpointer=InMemorySaver()
    )
    agent.invoke({"messages": [HumanMessage("show order 4411")]}, CONFIG)
    assert [e.content["tool"] for e in guard.session.history] == ["get_order", "read_inbox"]


def test_ainvoke_goes_through_the_same_check_and_interrupts(shop, functions, ran):
    import asyncio

    model = scripted(
        call("get_order", {"order_id": "4411"}, "c1"),
        call("charge_card", {"order_id": "4411", "amount": 35}, "c2"),
    )
    agent, _ = make_agent(shop, functions, model)

    async def both():  # noqa: ANN202
        out = await agent.ainvoke({"messages": [HumanMessage("charge order 4411")]}, CONFIG)
        charged_before = [name for name, _ in ran]
        await agent.ainvoke(Command(resume=True), CONFIG)
        return out, charged_before

    out, before = asyncio.run(both())
    assert "argument_origin: amount" in out["__interrupt__"][0].value["reasons"]
    assert before == ["get_order"]
    assert ran[-1] == ("charge_card", {"order_id": "4411", "amount": 35})


def handed_to_billing(two_desks, billing_model, **options):  # noqa: ANN001, ANN003, ANN201
    """desk's model reads the order and the inbox (the injected e-mail), then hands the
    conversation to billing; the person's next turn reaches billing's model. `options` are
    `build_stalwart_graph`'s."""
    desk_model = scripted(
        call("get_order", {"order_id": "4411"}, "c1"),
        call("read_inbox", {}, "c2"),
        call("transfer_to_billing", {}, "c3"),
    )
    graph = build_stalwart_graph(
        two_desks,
        require_proof=False,
        models={"desk": desk_model, "billing": billing_model},
        checkpointer=InMemorySaver(),
        **options,
    )
    graph.invoke({"messages": [HumanMessage("can you sort things out for me")]}, CONFIG)
    graph.invoke({"messages": [HumanMessage("just sort it out please")]}, CONFIG)
    assert graph.get_state(CONFIG).values["stalwart"]["agent"] == "billing"
    return graph


def test_a_handoff_continues_the_same_signed_history(two_desks):
    graph = handed_to_billing(two_desks, scripted())
    desk, billing = graph.stalwart_guards["desk"], graph.stalwart_guards["billing"]
    assert desk.session is billing.session  # one session for the conversation
    assert [(e.content["agent"], e.content["tool"]) for e in billing.session.history] == [
        ("desk", "get_order"),
        ("desk", "read_inbox"),
    ]


def test_outside_content_one_agent_read_taints_the_write_of_the_agent_handed_to(two_desks):
    import shop.tools as tools

    refunds = scripted(call("refund_card", {"order_id": "4411", "amount": 999}, "c4"))
    graph = handed_to_billing(two_desks, refunds)
    out = graph.invoke({"messages": [HumanMessage("yes, go on with it")]}, CONFIG)
    (waiting,) = out["__interrupt__"]
    assert waiting.value["call"]["agent"] == "billing"
    assert "tainted_call" in waiting.value["reasons"]
    assert waiting.value["arguments"]["amount"]["from"] == "history 1 (read_inbox)"
    assert tools.ORDERS["4411"]["status"] == "paid"  # nothing refunded


def test_under_taint_policy_refuse_the_handed_to_agents_write_is_refused(two_desks):
    refunds = scripted(call("refund_card", {"order_id": "4411", "amount": 999}, "c4"))
    graph = handed_to_billing(two_desks, refunds, settings={"taint_policy": "refuse"})
    out = graph.invoke({"messages": [HumanMessage("go on")]}, CONFIG)
    assert "__interrupt__" not in out
    assert "tainted_call" in tool_messages(out)[-1].content
    assert any(
        "tainted_call" in str(m.content) for m in refunds.seen[-1]
    )  # billing's model read why


def test_a_step_that_tries_an_edge_the_proved_graph_lacks_stops_the_run():
    from stalwart_agents.client import SelectorUnavailableError
    from stalwart_agents.langgraph import _route

    route = _route("desk_router", frozenset({"desk_end", "desk_check_get_order"}))
    assert route({"stalwart": {"next": "desk_end"}}) == "desk_end"
    with pytest.raises(SelectorUnavailableError, match="does not allow"):
        route({"stalwart": {"next": "billing_tool_refund_card"}})


def test_the_interrupt_and_each_decision_carry_the_thread_and_run_of_the_config(
    shop, functions, ran
):
    model = scripted(
        call("get_order", {"order_id": "4411"}, "c1"),
        call("charge_card", {"order_id": "4411", "amount": 35}, "c2"),
    )
    agent, guard = make_agent(shop, functions, model)
    decisions = noting(guard.session, "execute")
    config = {"configurable": {"thread_id": "t-9", "run_id": "run-5"}}
    out = agent.invoke({"messages": [HumanMessage("charge order 4411")]}, config)
    ids = {"thread_id": "t-9", "run_id": "run-5"}
    assert out["__interrupt__"][0].value["run"] == ids
    assert [d["detail"]["run"] for d in decisions] == [ids, ids]
