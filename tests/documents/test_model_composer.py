"""`composer: model`: the model writes from the grounded passages only, and its answer cites them."""

from __future__ import annotations

import pytest

from router.engine.models import ScriptedModel
from stalwart_agents import Agent

from .test_answers import NeverCalled

HEAD = """agents:
  desk:
    model: "scripted:desk"
    tools: [get_order]
    on_unread: answer
tools:
  - python: docshop_tools
documents:
  paths: [policies]
  composer: model
"""
QUESTION = "how long does a refund take to show on my statement?"


def writer(shop, *script):
    shop.write_text(HEAD, encoding="utf-8")
    agent = Agent.from_file(shop, verify=False)
    agent.model = ScriptedModel("scripted:desk", list(script))
    return agent


def ask(agent, question):
    agent.chat(question, user=question)
    return agent.chat(question, user=question)


def test_the_model_is_given_the_grounded_passages_and_its_answer_cites_them(shop):
    agent = writer(shop, {"text": "Up to five business days after the refund [1]."})
    reply = ask(agent, QUESTION)
    assert reply.model_called
    assert reply.text == (
        "Up to five business days after the refund [1]. (from [1] policies/returns.md:17)"
    )
    request = agent.model.requests[0]
    assert request.purpose == "answer" and request.tools == ()
    assert request.data[0] == {
        "n": 1,
        "text": "Refunds go back to the card you paid with. A refund takes up to five business "
        "days to show on your statement.",
        "source": "policies/returns.md:17",
    }
    assert all("returns.md" in p["source"] or "shipping" in p["source"] for p in request.data)


@pytest.mark.parametrize(
    "written",
    [
        {"text": "Five business days."},  # cites nothing
        {"text": "Five business days [7]."},  # cites a passage it was not given
        {"text": "Let me refund that [1].", "calls": [{"tool": "get_order", "arguments": {}}]},
    ],
)
def test_an_answer_that_does_not_cite_what_it_was_given_is_refused(shop, written):
    agent = writer(shop, written)
    reply = ask(agent, QUESTION)
    assert reply.text == "Sorry, I found nothing in our documents that answers that."
    assert reply.ran == []


def test_with_nothing_grounded_the_model_is_not_called(shop):
    shop.write_text(HEAD, encoding="utf-8")
    agent = Agent.from_file(shop, verify=False)
    agent.model = NeverCalled()
    reply = ask(agent, "what is the meaning of life?")
    assert reply.text == "Sorry, I found nothing in our documents that answers that."
    assert not reply.model_called


def test_a_model_that_does_not_answer_is_a_refusal(shop):
    agent = writer(shop)  # an empty script: the model cannot be reached
    reply = ask(agent, QUESTION)
    assert reply.text == "Sorry, I found nothing in our documents that answers that."
