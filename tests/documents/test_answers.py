"""Answers from documents through `Agent.chat`: a grounded passage and its source line, or a refusal.

The shop's policies are a Markdown returns policy, an HTML shipping page and a two-page PDF
warranty (made by the test). A turn the router cannot read is first asked again; said again, it is
answered from the documents -- with the `extract` composer no model is ever called.
"""

from __future__ import annotations

import pytest

from stalwart_agents import Agent


class NeverCalled:
    """A model adapter that fails the test if anything calls it."""

    name = "scripted:never"

    def respond(self, request):
        raise AssertionError(f"the model was called for {request.purpose}: {request.turn!r}")


def ask(agent: Agent, question: str):
    first = agent.chat(question, user=question)
    assert first.plan.action == "say_again"
    return agent.chat(question, user=question)


@pytest.fixture
def agent(shop):
    built = Agent.from_file(shop)
    built.model = NeverCalled()
    return built


ANSWERED = [
    (
        "how long does a refund take to show on my statement?",
        "A refund takes up to five business days to show on your statement.",
        "policies/returns.md:17",
    ),
    (
        "how many days do I have to return an item?",
        "You can return an unworn item within 30 days of delivery for a full refund.",
        "policies/returns.md:7",
    ),
    (
        "is shipping free for big orders?",
        "Shipping is free for orders above 100 dollars; below that, a flat fee of 5 dollars "
        "applies.",
        "policies/shipping.html:11",
    ),
    (
        "when does express delivery arrive?",
        "Express delivery arrives the next business day.",
        "policies/shipping.html:16",
    ),
    (
        "how long is the warranty on a blender?",
        "Every blender carries a two year warranty against defects.",
        "policies/warranty.pdf page 1, line 2",
    ),
    (
        "for how long can spare blades be ordered?",
        "Spare jugs and blades can be ordered for ten years after purchase.",
        "policies/warranty.pdf page 2, line 2",
    ),
]


@pytest.mark.parametrize(("question", "text", "source"), ANSWERED)
def test_a_question_the_documents_answer_gets_the_passage_and_its_source_line(
    agent, question, text, source
):
    reply = ask(agent, question)
    assert reply.text == f"{text} (from {source})"
    assert reply.plan.action == "answer" and reply.plan.answer["source"] == source
    assert not reply.model_called and reply.ran == []


def test_the_cited_line_holds_the_sentence_in_the_file(agent, shop):
    reply = ask(agent, "how long does a refund take to show on my statement?")
    file, line = reply.plan.answer["source"].rsplit(":", 1)
    written = (shop.parent / file).read_text(encoding="utf-8").splitlines()[int(line) - 1]
    assert reply.plan.answer["text"] in written


REFUSED = [
    "what is the meaning of life?",
    "can I pay with bitcoin?",
    "do gift cards expire?",  # only a <script> of the HTML page says so: never read
    "refund",  # one word grounds nothing
    "who is the chief executive of the shop?",
]


@pytest.mark.parametrize("question", REFUSED)
def test_a_question_nothing_grounds_is_refused(agent, question):
    reply = ask(agent, question)
    assert reply.text == "Sorry, I found nothing in our documents that answers that."
    assert "no_grounded_answer" in reply.plan.reasons or reply.plan.action == "refuse"
    assert not reply.model_called


def test_a_turn_the_router_reads_still_runs_its_tool_not_the_documents(agent):
    reply = agent.chat("show order 4411", user="reader")
    assert [r["tool"] for r in reply.ran] == ["get_order"]


def test_with_the_extract_composer_no_model_is_called_whatever_the_turn(agent):
    """Chapter 45's four conditions hold (no model named, `answer` with `extract`, no hand-off,
    template replies): a conversation of every kind the shop can plan never calls a model."""
    from router.engine.conversation import model_free

    assert model_free(agent.file.catalogue, composer=agent.extras.documents.composer) == []
    turns = [
        "show order 4411",  # a tool step
        "show me the order",  # an ask: which order
        "how many orders are there",  # no listing read to count over: asked again
        "write me a poem",  # said again: nothing in the documents grounds it, refused
        "write me a poem",  # a new request: asked again
        "how long does a refund take to show on my statement?",
        "how long does a refund take to show on my statement?",
    ]
    kinds = set()
    for turn in turns:
        reply = agent.chat(turn, user="every-kind")
        assert not reply.model_called
        kinds.add((reply.plan.kind, reply.plan.action))
    assert {("tool", None), ("ask", None), ("unread", "say_again"), ("unread", "answer")} <= kinds
    assert ("unread", "refuse") in kinds
