"""Fixtures of the proofs' console tests: the shop's graph and a graph with a planted flaw."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop" / "agent.yaml"
CORPUS = ROOT / "tests" / "proof" / "corpus"


@cache
def _shop() -> tuple[str, str, str]:
    from stalwart_agents import Agent

    desk = Agent.from_file(SHOP)
    return (
        json.dumps(desk.export()),
        json.dumps(desk.catalogue()),
        json.dumps(desk.rules().record),
    )


def shop_job() -> dict[str, Any]:
    """The chapter's shop, as `Client().verify_graph` sends it: the gate passes, 2 warnings."""
    graph, catalogue, record = _shop()
    return {
        "graph": json.loads(graph),
        "catalogue": json.loads(catalogue),
        "rulebook": json.loads(record),
    }


@cache
def _planted() -> str:
    from proof.engine import build_agent_graph

    folder = CORPUS / "qg011_fires"
    return json.dumps(build_agent_graph((folder / "agent.yaml").read_text(), files={}))


def planted_graph() -> dict[str, Any]:
    """A low-privilege desk hands off to an agent that exports without a person: QG011."""
    return json.loads(_planted())


@pytest.fixture
def actors(organisation, people, actor_for):  # noqa: ANN001, ANN201
    return {
        role: actor_for(user, organisation) for role, user in people.items() if role != "outsider"
    }
