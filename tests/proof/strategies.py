"""Random small agents (agent.yaml data, a rulebook, an overlay) for the property tests."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import strategies as st

from guard.engine import load_catalogue, load_settings
from guard.engine.agent_yaml import AgentFile
from guard.engine.checks import NAMES
from proof.engine import merge_overlay
from proof.engine.build import AgentSources, build_graph, read_budget
from proof.engine.graphdoc import remember_catalogue
from rulebooks.compiler import compile_source

KINDS = ("read", "write", "sends_out")
CHOOSERS = ("person", "model", "opaque")


def _tool(draw, name: str, others: list[str]) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "name": name,
        "kind": draw(st.sampled_from(KINDS)),
        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
    }
    if others and draw(st.booleans()):
        after = draw(st.sampled_from(others))
        bind = draw(st.booleans())
        tool["after"] = [{"tool": after, "bind": {"id": "arguments.id"}} if bind else after]
    if others and draw(st.integers(0, 3)) == 0:
        tool["not_after"] = [draw(st.sampled_from(others))]
    if draw(st.integers(0, 3)) == 0:
        tool["at_most"] = draw(st.integers(1, 2))
    if draw(st.integers(0, 3)) == 0:
        tool["reads_outside"] = [draw(st.sampled_from(["web", "email"]))]
    if tool["kind"] != "read":
        if others and draw(st.integers(0, 2)) == 0:
            tool["compensation"] = draw(st.sampled_from(others))
        tool["irreversible"] = draw(st.booleans())
    return tool


@st.composite
def agents(draw) -> dict[str, Any]:
    """`{"data", "files", "seed", "depth", "turns"}`: a random small agent file, as data."""
    tool_names = [f"t{i}" for i in range(draw(st.integers(1, 4)))]
    tools = [_tool(draw, n, [o for o in tool_names if o != n]) for n in tool_names]
    agent_names = [f"a{i}" for i in range(draw(st.integers(1, 3)))]
    agents_data: dict[str, Any] = {}
    for name in agent_names:
        agent: dict[str, Any] = {
            "tools": draw(
                st.lists(st.sampled_from(tool_names), min_size=1, max_size=3, unique=True)
            ),
            "privilege": draw(st.sampled_from(["low", "normal", "high"])),
        }
        if draw(st.booleans()):
            agent["model"] = "test:model"
            others = [o for o in agent_names if o != name]
            if others:
                agent["hands_off_to"] = draw(
                    st.lists(st.sampled_from(others), max_size=2, unique=True)
                )
        agents_data[name] = agent
    data: dict[str, Any] = {"agents": agents_data, "tools": tools}
    files: dict[str, str] = {}
    if draw(st.booleans()):
        source, target = draw(st.sampled_from(tool_names)), draw(st.sampled_from(tool_names))
        data["facts"] = {"ok": {"from": f"{source}.ok"}}
        negated = "not " if draw(st.booleans()) else ""
        files["p.co"] = f"define flow f\n  user x\n  if {negated}$ok\n    execute {target}\n"
        data["rulebook"] = "p.co"
        if any("reads_outside" in t for t in tools if t["name"] == source):
            del data["facts"], data["rulebook"], files["p.co"]
    budget = draw(st.sampled_from([None, "run", "agents"]))
    if budget == "run":
        data["budget"] = draw(st.integers(2, 8))
    elif budget == "agents":
        data["budget"] = {"agents": {draw(st.sampled_from(agent_names)): draw(st.integers(2, 6))}}
    checks = draw(st.sampled_from([None, ["order"], ["your_rules", "outside_content"], []]))
    if checks is not None:
        data["settings"] = {
            "checks": checks,
            "taint_policy": draw(st.sampled_from(["confirm", "refuse"])),
        }
    return {
        "data": data,
        "files": files,
        "depth": draw(st.integers(2, 9)),
        "turns": draw(st.integers(1, 3)),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


def random_overlay(doc: dict[str, Any], rnd) -> dict[str, Any]:
    """Team steps and extra edges, chosen with `rnd` among the document's nodes."""
    ids = [n["id"] for n in doc["nodes"]]
    agents_of = {n["id"]: n.get("agent") for n in doc["nodes"]}
    nodes = []
    for index in range(rnd.randint(0, 2)):
        routes = None if rnd.random() < 0.3 else rnd.sample(ids, k=min(len(ids), rnd.randint(1, 3)))
        nodes.append(
            {
                "id": f"team{index}",
                "kind": "opaque",
                "agent": agents_of[rnd.choice(ids)],
                "routes": routes,
            }
        )
    all_ids = ids + [n["id"] for n in nodes]
    edges = []
    for _ in range(rnd.randint(0, 3)):
        edge: dict[str, Any] = {"from": rnd.choice(all_ids), "to": rnd.choice(all_ids), "on": "x"}
        if rnd.random() < 0.3:
            edge["when"] = [{"chooser": rnd.sample(CHOOSERS, k=rnd.randint(1, 2))}]
        if rnd.random() < 0.3:
            edge["exit_after"] = rnd.randint(1, 3)
        edges.append(edge)
    for node in nodes:
        if rnd.random() < 0.7:
            edges.append({"from": rnd.choice(ids), "to": node["id"], "on": "step"})
    return {"nodes": nodes, "edges": edges}


def build_doc(data: dict[str, Any], files: dict[str, str]) -> dict[str, Any]:
    """The graph document of agent-file data, built without writing and reading YAML (fast)."""
    settings_raw = data.get("settings")
    settings = load_settings(settings_raw, known_checks=NAMES)
    catalogue_data = {k: data[k] for k in ("agents", "tools", "facts") if k in data}
    catalogue = load_catalogue(catalogue_data)
    remember_catalogue(catalogue_data, settings, catalogue)
    agent_file = AgentFile(catalogue=catalogue, data=catalogue_data, rulebook=data.get("rulebook"))
    rulebook = None
    if data.get("rulebook"):
        name = data["rulebook"]
        rulebook = {
            "file": name,
            "record": compile_source(files[name], filename=name),
            "errors": [],
        }
    budget, _ = read_budget(data.get("budget"))
    sources = AgentSources(
        filename="agent.yaml",
        agent_file=agent_file,
        lines={},
        settings=settings,
        settings_raw=settings_raw,
        rulebook=rulebook,
        budget=budget,
    )
    return build_graph(sources)


def random_graph(example: dict[str, Any]) -> dict[str, Any]:
    doc = build_doc(example["data"], example["files"])
    return merge_overlay(doc, random_overlay(doc, random.Random(example["seed"])))
