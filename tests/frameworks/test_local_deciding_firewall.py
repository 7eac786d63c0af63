"""The organisation's published firewall policy at the framework doors (LangGraph, Agents SDK),
deciding from the console's signed bundle: `Guard` puts every call to it (`door_firewall`), as
`Agent.chat` and the gateway do. A `deny` refuses the call and nothing runs, the deny on the
console's feed; a `sanitize` runs the call with the cleaned arguments; a `require_approval` that
only the firewall makes is put to the person as the tool check's own questions are; nothing
published, and the calls run as before. Each call is put to the firewall once (and once more
after a person's yes, as the gateway does)."""

from __future__ import annotations

import asyncio

import pytest
from agents import Runner
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from stalwart_agents.client import ConnectedSession, SelectorUnavailableError
from stalwart_agents.guarded import Guard, plain_function
from stalwart_agents.langgraph import StalwartMiddleware
from tests.frameworks.scripted_agents_model import ScriptedModel
from tests.frameworks.test_langgraph import call, scripted
from tests.frameworks.test_openai_agents import make
from tests.runtime.test_decide_local import (  # noqa: F401
    console,
    denied_in_feed,
    local_client,
    publish,
    until,
)

pytestmark = pytest.mark.django_db(transaction=True)

NO_LOOKUPS = {
    "priority": 10,
    "name": "no lookups",
    "tool_name_glob": "get_order",
    "verdict": "deny",
}
ASK_FIRST = {
    "priority": 10,
    "name": "ask first",
    "tool_name_glob": "get_order",
    "verdict": "require_approval",
}
NO_SECRETS = {
    "priority": 10,
    "name": "no secrets",
    "tool_name_glob": "get_order",
    "verdict": "sanitize",
    "sanitize": {"patterns": ["SECRET-[0-9]+"]},
}
CONFIG = {"configurable": {"thread_id": "t-1"}}


def replace_policy(console, actor_for, *rules: dict) -> None:  # noqa: ANN001, F811
    """The active policy's next version, published on the console with these rules."""
    from firewall import services as firewall_services

    actor = actor_for(console["admin"], console["organisation"])
    policy = firewall_services.active_policy(organisation=console["organisation"])
    data = {"name": policy.name, "default_verdict": "allow", "rules": list(rules)}
    firewall_services.policy_draft_import(actor=actor, policy=policy, data=data)
    firewall_services.policy_publish(actor=actor, policy=policy)


def counted(guard: Guard) -> list[tuple[str, dict]]:
    """The calls the guard's session puts to the organisation's firewall, noted as they go."""
    session = guard.session
    assert isinstance(session, ConnectedSession)
    evaluated: list[tuple[str, dict]] = []
    evaluate = session.evaluate

    def noting(tool, arguments, **given):  # noqa: ANN001, ANN003, ANN202
        evaluated.append((tool, dict(arguments)))
        return evaluate(tool, arguments, **given)

    session.evaluate = noting  # type: ignore[method-assign]
    return evaluated


def langgraph_turn(client, shop, functions, arguments: dict, *, yes: bool = False):  # noqa: ANN001, ANN201
    """One LangGraph turn (`create_agent` with the middleware) whose model calls `get_order`;
    with `yes`, a question put to the person is answered yes. (What the model was told, the
    calls put to the firewall, the prompts the person was shown.)"""
    guard = Guard.for_agent(shop, "desk", client=client)
    evaluated = counted(guard)
    tools = [StructuredTool.from_function(f, name=n, description=n) for n, f in functions.items()]
    model = scripted(call("get_order", arguments, "c1"))
    agent = create_agent(
        model, tools, middleware=[StalwartMiddleware(guard)], checkpointer=InMemorySaver()
    )
    out = agent.invoke({"messages": [HumanMessage("show me order 4411")]}, CONFIG)
    prompts = [waiting.value for waiting in out.get("__interrupt__") or ()]
    if prompts and yes:
        out = agent.invoke(Command(resume=True), CONFIG)
    messages = [str(m.content) for m in out["messages"] if isinstance(m, ToolMessage)]
    return messages, evaluated, prompts


def agents_sdk_turn(client, shop, functions, arguments: dict, *, yes: bool = False):  # noqa: ANN001, ANN201
    """One Agents SDK run whose model calls `get_order` (needs_approval, guardrail, invoke);
    with `yes`, an interruption is approved the SDK's way and the run resumed."""
    model = ScriptedModel(("get_order", arguments, "c1"), "done")
    agent, tools, guard = make(shop, functions, model, client=client)
    evaluated = counted(guard)

    def run(given):  # noqa: ANN001, ANN202
        config = tools.run_config(tracing_disabled=True)
        return asyncio.run(Runner.run(agent, given, run_config=config))

    result = run("show me order 4411")
    prompts = [tools.prompt(item) for item in result.interruptions]
    if prompts and yes:
        state = result.to_state()
        for item in result.interruptions:
            state.approve(item)
        result = run(state)
    outputs = [
        str(item.output) for item in result.new_items if type(item).__name__ == "ToolCallOutputItem"
    ]
    rejected = [
        str(getattr(item, "output", ""))
        for item in result.new_items
        if type(item).__name__ != "ToolCallOutputItem"
    ]
    return outputs + rejected, evaluated, prompts


DOORS = pytest.mark.parametrize(
    "turn", [langgraph_turn, agents_sdk_turn], ids=["langgraph", "agents_sdk"]
)


@DOORS
def test_a_published_deny_refuses_the_call_and_the_deny_reaches_the_feed(
    console,  # noqa: ANN001, F811
    actor_for,  # noqa: ANN001
    shop,  # noqa: ANN001
    functions,  # noqa: ANN001
    ran,  # noqa: ANN001
    turn,  # noqa: ANN001
):
    publish(console, actor_for, NO_LOOKUPS)
    with local_client(console) as client:
        said, evaluated, prompts = turn(client, shop, functions, {"order_id": "4411"})
        assert ran == [] and prompts == []  # the tool function never ran, nobody was asked
        assert any("firewall: no lookups" in text and "Nothing ran" in text for text in said), said
        assert evaluated == [("get_order", {"order_id": "4411"})]  # once for the call
        until(lambda: denied_in_feed(console, "get_order", "no lookups"), 15.0)


@DOORS
def test_with_nothing_published_the_calls_run_as_before(
    console,  # noqa: ANN001, F811
    shop,  # noqa: ANN001
    functions,  # noqa: ANN001
    ran,  # noqa: ANN001
    turn,  # noqa: ANN001
):
    with local_client(console) as client:
        said, _, prompts = turn(client, shop, functions, {"order_id": "4411"})
        assert prompts == []
        assert ran == [("get_order", {"order_id": "4411"})], said
        assert any('"status": "paid"' in text for text in said), said


@DOORS
def test_a_published_sanitize_runs_the_call_with_the_cleaned_arguments(
    console,  # noqa: ANN001, F811
    actor_for,  # noqa: ANN001
    shop,  # noqa: ANN001
    functions,  # noqa: ANN001
    ran,  # noqa: ANN001
    turn,  # noqa: ANN001
):
    publish(console, actor_for, NO_SECRETS)
    with local_client(console) as client:
        given = {"order_id": "4411 SECRET-1"}
        said, evaluated, prompts = turn(client, shop, functions, given, yes=True)
        # The tool check judged the cleaned arguments (an order id the person did not say: it
        # asks), and the person was shown the cleaned call.
        (prompt,) = prompts
        assert prompt["call"]["arguments"] == {"order_id": "4411 [redacted:custom]"}, prompt
        assert ran == [("get_order", {"order_id": "4411 [redacted:custom]"})], said
        # put to the firewall for the call, and once more after the person's yes (as the
        # gateway looks again before it forwards an approved call)
        assert len(evaluated) == 2 and evaluated[0] == ("get_order", given), evaluated


@DOORS
def test_a_require_approval_only_the_firewall_makes_is_put_to_the_person(
    console,  # noqa: ANN001, F811
    actor_for,  # noqa: ANN001
    shop,  # noqa: ANN001
    functions,  # noqa: ANN001
    ran,  # noqa: ANN001
    turn,  # noqa: ANN001
):
    """The tool check allows the read; only the published policy holds it for a person. The
    door asks (the framework's own question, naming the rule): nothing runs until a yes, and a
    yes runs exactly that call."""
    publish(console, actor_for, ASK_FIRST)
    with local_client(console) as client:
        said, _, prompts = turn(client, shop, functions, {"order_id": "4411"})
        assert ran == [], said
        (prompt,) = prompts
        assert "firewall: ask first" in prompt["reasons"], prompt
        assert prompt["call"]["arguments"] == {"order_id": "4411"}
        said, evaluated, prompts = turn(client, shop, functions, {"order_id": "4411"}, yes=True)
        assert len(prompts) == 1
        assert ran == [("get_order", {"order_id": "4411"})], said
        # put to the firewall for the call, and once more after the person's yes
        assert evaluated == [("get_order", {"order_id": "4411"})] * 2, evaluated


def test_a_require_approval_where_the_check_asks_too_is_one_question_and_one_yes(
    console,  # noqa: ANN001, F811
    actor_for,  # noqa: ANN001
    shop,  # noqa: ANN001
    functions,  # noqa: ANN001
    ran,  # noqa: ANN001
):
    """The tool check asks about a charge with an amount the model wrote, and the published
    policy holds charges for a person: one question, both reasons; the yes runs it."""
    publish(
        console,
        actor_for,
        {
            "priority": 10,
            "name": "charges need a yes",
            "tool_name_glob": "charge_card",
            "verdict": "require_approval",
        },
    )
    tools = {name: plain_function(f) for name, f in functions.items()}
    with local_client(console) as client:
        guard = Guard.for_agent(shop, "desk", client=client, tools=tools)
        guard.read("charge order 4411")
        assert guard.call_with("get_order", {"order_id": "4411"}).status == "ran"
        asked = guard.call_with("charge_card", {"order_id": "4411", "amount": 35})
        assert asked.status == "confirm", asked
        assert "argument_origin: amount" in asked.reasons
        assert "firewall: charges need a yes" in asked.reasons
        assert [name for name, _ in ran] == ["get_order"]
        done = guard.resume(asked, True)
        assert done.status == "ran", done
        assert ran[-1] == ("charge_card", {"order_id": "4411", "amount": 35})


def test_a_deny_published_while_the_person_was_asked_refuses_the_call_after_the_yes(
    console,  # noqa: ANN001, F811
    actor_for,  # noqa: ANN001
    shop,  # noqa: ANN001
    functions,  # noqa: ANN001
    ran,  # noqa: ANN001
):
    """After a person's yes the firewall is asked again, as the gateway asks before it forwards
    an approved call: a deny published meanwhile refuses it, and nothing runs."""
    publish(console, actor_for, ASK_FIRST)
    tools = {name: plain_function(f) for name, f in functions.items()}
    with local_client(console) as client:
        guard = Guard.for_agent(shop, "desk", client=client, tools=tools)
        guard.read("show me order 4411")
        asked = guard.call_with("get_order", {"order_id": "4411"})
        assert asked.status == "confirm" and asked.reasons == ("firewall: ask first",), asked
        feed = guard.session.feed
        before = feed.current().firewall
        replace_policy(console, actor_for, NO_LOOKUPS)
        until(lambda: feed.current().firewall != before, 15.0)
        refused = guard.resume(asked, True)
        assert (refused.status, refused.reasons) == ("refused", ("firewall: no lookups",))
        assert ran == []


def test_a_firewall_that_cannot_answer_runs_nothing(
    console,  # noqa: ANN001, F811
    actor_for,  # noqa: ANN001
    shop,  # noqa: ANN001
    functions,  # noqa: ANN001
    ran,  # noqa: ANN001
):
    """The published policy's answer is not one (no verdict): the call is not made, at the
    check or the run, though the tool check alone would allow it."""
    publish(console, actor_for, NO_SECRETS)
    tools = {name: plain_function(f) for name, f in functions.items()}
    with local_client(console) as client:
        guard = Guard.for_agent(shop, "desk", client=client, tools=tools)
        guard.read("show me order 4411")
        guard.session.evaluate = lambda *_, **__: {}  # type: ignore[method-assign]
        with pytest.raises(SelectorUnavailableError, match="cannot answer"):
            guard.check("get_order", {"order_id": "4411"})
        with pytest.raises(SelectorUnavailableError, match="cannot answer"):
            guard.call_with("get_order", {"order_id": "4411"})
        assert ran == []


def test_sessions_that_do_not_decide_from_the_bundle_are_not_gated_here(shop, functions, ran):
    """In this process (a `LocalSession`), the guard puts nothing to a published policy: the
    firewall of the organisation is not in play, the call runs as before."""
    tools = {name: plain_function(f) for name, f in functions.items()}
    guard = Guard.for_agent(shop, "desk", tools=tools)
    assert not isinstance(guard.session, ConnectedSession)
    guard.read("show me order 4411")
    assert guard.call_with("get_order", {"order_id": "4411"}).status == "ran"
    assert guard._walled == {}


def test_a_published_cap_cost_is_held_with_the_checks_own_figures(
    console,  # noqa: ANN001, F811
    actor_for,  # noqa: ANN001
):
    """The published policy caps a run's cost: a call that would take the run past the cap is
    refused (`cost_exceeded`) and does not run; one within it runs."""
    from tests.runtime.test_runtime_session import inbox_catalogue

    publish(
        console,
        actor_for,
        {
            "priority": 10,
            "name": "a small budget",
            "tool_name_glob": "get_order",
            "verdict": "cap_cost",
            "cap_cost_cents": 800,
        },
    )
    catalogue = inbox_catalogue()
    for tool in catalogue["tools"]:
        if tool["name"] == "get_order":
            tool["cost"] = 500
    ran: list[str] = []
    with local_client(console) as client:
        session = client.session("assistant", catalogue=catalogue)
        guard = Guard(session, tools={"get_order": lambda a: ran.append(a["order_id"]) or a})
        guard.read("show me order A1")
        assert guard.call_with("get_order", {"order_id": "A1"}).status == "ran"
        guard.read("and order A2")
        over = guard.call_with("get_order", {"order_id": "A2"})
        assert (over.status, over.reasons) == ("refused", ("cost_exceeded",)), over
        assert ran == ["A1"]
