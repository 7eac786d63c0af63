"""agent.yaml's `steps:` and `edges:`: the team's own steps and edges, in the graph the proof reads,
each with the line it was written on (`proof/engine/build.py`, `read_team` / `merge_team`)."""

from __future__ import annotations

import pytest

from proof.engine import ConfigInvalid, build_agent_graph

BASE = """agents:
  desk:
    model: "test:scripted"
    tools: [get_order]
tools:
  - name: get_order
    kind: read
    parameters: {type: object, properties: {order_id: {type: string}}, required: [order_id]}
"""


def _graph(extra: str) -> dict:
    return build_agent_graph(BASE + extra, files={})


def _edges(doc: dict, source: str, target: str) -> list[dict]:
    return [e for e in doc["edges"] if e["from"] == source and e["to"] == target]


def test_a_step_becomes_a_team_s_node_with_its_line_and_its_routes_become_edges() -> None:
    doc = _graph(
        "steps:\n"
        "  desk_enrich:\n"
        "    agent: desk\n"
        "    from: [desk_model]\n"
        "    routes:\n"
        "      - desk_end\n"
        "      - {to: desk_model, taken_on: retry, when: [{chooser: [model]}], exit_after: 3}\n"
    )
    node = next(n for n in doc["nodes"] if n["id"] == "desk_enrich")
    assert node["kind"] == "opaque" and node["agent"] == "desk"
    assert node["routes"] == ["desk_end", "desk_model"]
    assert node["at"] == [{"file": "agent.yaml", "line": 10}]
    (into,) = _edges(doc, "desk_model", "desk_enrich")
    assert into["on"] == "step" and into["at"] == [{"file": "agent.yaml", "line": 12}]
    (back,) = _edges(doc, "desk_enrich", "desk_model")
    assert back["on"] == "retry" and back["exit_after"] == 3
    assert back["when"] == [{"chooser": ["model"]}]
    assert back["at"] == [{"file": "agent.yaml", "line": 15}]
    assert [e["on"] for e in _edges(doc, "desk_enrich", "desk_end")] == ["route"]


def test_a_step_without_routes_may_go_anywhere() -> None:
    doc = _graph("steps:\n  desk_enrich: {agent: desk, from: [desk_model]}\n")
    node = next(n for n in doc["nodes"] if n["id"] == "desk_enrich")
    assert "routes" not in node


def test_an_edge_between_two_built_steps_puts_a_counter_on_it() -> None:
    plain = _edges(_graph(""), "desk_model", "desk_check_get_order")
    doc = _graph("edges:\n  - {from: desk_model, to: desk_check_get_order, exit_after: 5}\n")
    counted = _edges(doc, "desk_model", "desk_check_get_order")
    assert len(counted) == len(plain) == 1
    assert counted[0]["exit_after"] == 5 and "exit_after" not in plain[0]


def test_an_edge_of_the_team_s_code_is_added_with_what_it_is_taken_on() -> None:
    doc = _graph("edges:\n  - {from: desk_end, to: desk_tool_get_order, taken_on: shortcut}\n")
    (added,) = _edges(doc, "desk_end", "desk_tool_get_order")
    assert added["on"] == "shortcut" and added["at"] == [{"file": "agent.yaml", "line": 10}]


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ("steps: [desk_enrich]\n", "agent.yaml:9: steps: must map each step's id"),
        ("steps:\n  mine: {agent: desk, go: [desk_end]}\n", "agent.yaml:10: steps.mine.go: is not"),
        ("steps:\n  mine: {routes: [3]}\n", "steps.mine.routes[0]: must be a step id"),
        ("steps:\n  desk_model: {routes: []}\n", "agent.yaml:10: steps.desk_model: must be a new"),
        ("edges: {from: a}\n", "agent.yaml:9: edges: must be a list"),
        ("edges:\n  - {from: desk_end, to: nowhere}\n", "agent.yaml:10: edges[0]: must go"),
    ],
)
def test_a_step_or_an_edge_that_cannot_be_read_names_its_field_and_line(extra, problem) -> None:
    with pytest.raises(ConfigInvalid) as caught:
        _graph(extra)
    assert any(problem in str(p) for p in caught.value.problems), caught.value.problems
