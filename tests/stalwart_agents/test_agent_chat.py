"""`Agent.chat`: router, plan, tool check, then the tool's own function; no model is called."""

from __future__ import annotations

from pathlib import Path

from stalwart_agents import Agent

SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop" / "agent.yaml"


def test_a_read_runs_the_tool_without_a_model():
    agent = Agent.from_file(SHOP)
    reply = agent.chat("show order 4411", user="ana", agent="desk")
    assert not reply.model_called
    assert [r["tool"] for r in reply.ran] == ["get_order"]
    assert "4411" in reply.text and "paid" in reply.text


def test_pt_br_is_read_when_chosen_and_not_guessed():
    agent = Agent.from_file(SHOP)
    chosen = agent.chat("mostre o pedido 4411", user="bia", agent="desk", language="pt-BR")
    assert [r["tool"] for r in chosen.ran] == ["get_order"]
    assert "40,00" in chosen.text
    guessed = agent.chat("mostre o pedido 4411", user="caio", agent="desk")
    assert guessed.ran == [] and not guessed.model_called


def test_a_turn_nothing_reads_is_asked_again_then_refused_without_a_model():
    agent = Agent.from_file(SHOP)
    first = agent.chat("write me a poem", user="dan", agent="desk")
    second = agent.chat("write me a poem", user="dan", agent="desk")
    assert first.ran == [] and second.ran == []
    assert not first.model_called and not second.model_called
    assert first.text != second.text


def test_each_user_has_a_conversation_of_their_own():
    agent = Agent.from_file(SHOP)
    agent.chat("write me a poem", user="eva", agent="desk")
    fresh = agent.chat("write me a poem", user="fab", agent="desk")
    again = agent.chat("write me a poem", user="eva", agent="desk")
    assert fresh.text != again.text
