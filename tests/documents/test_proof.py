"""The proof knows which agents answer from documents: their router step says so in the graph."""

from __future__ import annotations

from stalwart_agents import Agent


def routers(agent: Agent) -> dict[str, dict]:
    return {n["agent"]: n for n in agent.export()["nodes"] if n["kind"] == "router"}


def test_an_agent_answering_from_documents_is_labelled_in_its_graph(shop):
    agent = Agent.from_file(shop)  # proved before its first turn, as by default
    label = routers(agent)["desk"]["label"]
    assert label == "answers from documents: the extract composer, no model is called"


def test_an_agent_that_refuses_unread_turns_is_not(shop):
    text = shop.read_text(encoding="utf-8").replace("on_unread: answer", "on_unread: refuse")
    shop.write_text(text, encoding="utf-8")
    assert "label" not in routers(Agent.from_file(shop))["desk"]
