"""Chapter 45, "When no model is ever called": an agent meeting the four conditions runs a
conversation of every plan kind, from `Agent.chat`, with a model adapter that fails if called.

The four conditions: the agents name no model; on_unread is refuse (or answer with the extract
composer); no agent hands off to another; replies are template phrasings.
"""

from __future__ import annotations

import pytest

from router.engine.conversation import model_free
from stalwart_agents import Agent


class NeverCalled:
    """A model adapter that fails the test if anything calls it."""

    name = "scripted:never"

    def __init__(self) -> None:
        self.called: list = []

    def respond(self, request):
        self.called.append(request)
        pytest.fail(f"the model was called for {request.purpose}: {request.turn!r}")


FOUR_CONDITIONS = "on_unread: refuse"
TEMPLATES = "replies: {composer: template}\n"


def test_an_agent_meeting_the_four_conditions_never_calls_a_model(shop_folder):
    never = NeverCalled()
    agent = Agent.from_file(shop_folder(FOUR_CONDITIONS, TEMPLATES), model=never)
    assert model_free(agent.file.catalogue, replies=agent.file.other["replies"]) == []
    seen: dict[str, str] = {}
    replies = []

    def say(turn):
        reply = agent.chat(turn, user="ana")
        replies.append(reply)
        if reply.plan is not None:
            seen.setdefault(reply.plan.kind, turn)
        return reply

    chained = say("refund the full amount of order 4411")
    assert chained.plan.kind == "confirm"
    assert [c["call"]["tool"] for c in chained.checks] == ["get_order", "refund_card"]
    assert say("no").text.startswith("OK, I did not")
    tool = say("show order 4411")
    assert tool.plan.kind == "tool" and [r["tool"] for r in tool.ran] == ["get_order"]
    asked = say("refund order 4411")
    assert asked.plan.kind == "ask" and asked.plan.missing == ("amount",)
    confirmed = say("$15")
    assert confirmed.plan.kind == "confirm" and confirmed.waiting == "confirm"
    done = say("yes")
    assert [r["tool"] for r in done.ran] == ["refund_card"]
    declined = say("refund $5 on order 4412")
    assert declined.plan.kind == "declined" and declined.plan.rule == "refunds"
    again = say("tell me a joke")
    refused = say("tell me a joke")
    assert (again.plan.action, refused.plan.action) == ("say_again", "refuse")
    assert {"tool", "ask", "confirm", "declined", "unread"} <= set(seen)
    # The chain's first plan (its read) is kept in the conversation's plans.
    conversation = next(iter(agent._conversations.values()))
    assert "chain" in {plan.kind for plan in conversation.plans}
    assert never.called == [] and not any(reply.model_called for reply in replies)


def test_breaking_a_condition_is_what_reaches_the_model(shop_folder):
    """The control: the same agent with on_unread: model does call the adapter."""
    never = NeverCalled()
    agent = Agent.from_file(shop_folder("on_unread: model", TEMPLATES), model=never)
    assert any("sends unread turns to a model" in p for p in model_free(agent.file.catalogue))
    agent.chat("tell me a joke", user="ana")
    with pytest.raises(pytest.fail.Exception):
        agent.chat("tell me a joke", user="ana")
    assert len(never.called) == 1


@pytest.mark.parametrize(
    ("agent_lines", "problem"),
    [
        ('model: "scripted:demo"\non_unread: refuse', "names the model"),
        ("on_unread: ask", "sends unread turns to a model (ask)"),
    ],
)
def test_each_condition_is_read_from_the_agent_file(shop_folder, agent_lines, problem):
    agent = Agent.from_file(shop_folder(agent_lines), verify=False)
    assert any(problem in p for p in model_free(agent.file.catalogue))
