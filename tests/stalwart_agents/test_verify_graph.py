"""`Client().verify_graph(...)` in this process: the job read as the console reads it, proved here.

(Against the console, with a real worker: tests/proof_console/test_worker.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stalwart_agents import Agent, Client, ProofUnfinished, RequestRefused

SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop" / "agent.yaml"


@pytest.fixture(scope="module")
def desk() -> Agent:
    return Agent.from_file(SHOP)


def test_the_shops_graph_with_its_catalogue_and_rulebook_gives_the_chapters_verdict(desk):
    report = Client(url="").verify_graph(
        desk.export(),
        catalogue=desk.catalogue(),
        rulebook=desk.rules().record,
        session_steps=60,
    )
    assert report["format"] == "stalwart-verify/1"
    assert report["gate"]["passed"] is True
    assert sorted(f["rule"] for f in report["findings"]) == ["QG023", "QG105"]
    assert report["proof"]["depth"] == 60


def test_a_catalogue_that_does_not_enforce_what_the_graph_claims_is_refused_by_path(desk):
    catalogue = desk.catalogue()
    for tool in catalogue["tools"]:
        tool.pop("after", None)  # the graph's check edges claim the order rule it had
    with pytest.raises(RequestRefused) as caught:
        Client(url="").verify_graph(desk.export(), catalogue=catalogue)
    assert caught.value.status == 400
    assert any(path.startswith("graph.edges[") for path in caught.value.body)


def test_invalid_fields_are_refused_each_under_its_path():
    with pytest.raises(RequestRefused) as caught:
        Client(url="").verify_graph({"format": "qls-graph/1"}, session_steps=0)
    errors = caught.value.body
    assert errors["session_steps"] == ["must be from 1 to 1000"]
    with pytest.raises(RequestRefused) as caught:
        Client(url="").verify_graph({"format": "qls-graph/1", "nodes": [], "edges": []})
    assert "graph.entries" in caught.value.body


def test_an_engine_that_fails_is_never_a_clean_result(desk, monkeypatch):
    import proof.engine

    def broken(*args, **kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(proof.engine, "verify_graph", broken)
    with pytest.raises(ProofUnfinished) as caught:
        Client(url="").verify_graph(desk.export())
    assert caught.value.status == "error" and "out of memory" in str(caught.value)
