"""Compiling agents, their catalogue and their rulebook into a `qls-graph/1` document.

For each agent (in the order agent.yaml writes them), with node ids the report uses:

    <agent>_router              reads every turn; a session may start at any agent's router
                                (labelled `answers from documents: ...` where `on_unread:
                                answer` has agent.yaml's `documents:` to answer from)
    <agent>_model               the agent's model, when it names one
    <agent>_check_<tool>        the tool check of one tool the agent lists
    <agent>_confirm_<tool>      a person's yes, when the check can ask for one
    <agent>_tool_<tool>         the tool runs
    <agent>_handoff_<other>     the turn passes to another agent
    <agent>_end                 the turn ends; the next turn starts at the same agent's router

Edges: the router plans a tool step (to the check) from the person's words, sends the turn to the
model (a calculation, or what `on_unread` allows), or ends it. The model calls any tool of its
agent (to the check), hands off, or replies. A check passes a call to the tool (`allow`) or to a
person (`confirm`) under the atoms `toolcheck` derives, or refuses it back to whoever chose it; a
person's `yes` runs the tool, `no` returns; a tool's result returns to the model that chose the
call, or ends a planned turn. Every node and edge keeps where it was written: the agent's line,
the line listing the tool, the tool's definition, the rulebook's route or row.

An overlay -- the team's own steps and declarations, a `qls-graph/1` fragment -- is merged in by
`merge_overlay`: its `opaque` nodes with their `routes` (an edge is added for each route), its
edges (an edge between two existing steps patches their `exit_after` / `budget` instead), and its
`declarations` and `budget`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from guard.engine import Catalogue, Settings
from guard.engine.agent_yaml import AgentFile

from .atoms import atom_from, atom_to_json
from .errors import GraphInvalid, Problem
from .graphdoc import FORMAT
from .locations import Location, at_list
from .toolcheck import ALLOW, CONFIRM, derive_check_edges

OVERLAY_KEYS = frozenset({"format", "nodes", "edges", "declarations", "budget"})


@dataclass
class AgentSources:
    """What the builder reads, already loaded: the agent file and where each thing was written."""

    filename: str
    agent_file: AgentFile
    lines: Mapping[str, int]
    settings: Settings
    settings_raw: Mapping[str, Any] | None = None
    tool_defined: Mapping[str, Location] = field(default_factory=dict)
    rulebook: Mapping[str, Any] | None = None  # {file, record, errors}
    budget: Mapping[str, Any] | None = None
    declarations: Mapping[str, Any] | None = None
    sources: Sequence[Mapping[str, str]] = ()
    team: Any = None  # agent.yaml's `steps:` and `edges:`, as a `Team`
    advisories: Sequence[Any] = ()  # agent.yaml's `advisories:`, read

    @property
    def catalogue(self) -> Catalogue:
        return self.agent_file.catalogue

    def where(self, path: str) -> Location | None:
        line = self.lines.get(path)
        return Location(self.filename, line) if line is not None else None


class _Ids:
    def __init__(self) -> None:
        self.used: set[str] = set()

    def make(self, wanted: str) -> str:
        found, n = wanted, 2
        while found in self.used:
            found = f"{wanted}#{n}"
            n += 1
        self.used.add(found)
        return found


def build_graph(src: AgentSources) -> dict[str, Any]:
    """The graph document of the agents in `src` (see the module docstring)."""
    catalogue = src.catalogue
    record = src.rulebook.get("record") if src.rulebook else None
    rulebook_file = src.rulebook.get("file", "rulebook") if src.rulebook else "rulebook"
    ids = _Ids()
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    order = list(src.agent_file.data.get("agents", {}) or {})
    routers: dict[str, str] = {}
    for name in order:
        routers[name] = ids.make(f"{name}_router")

    def node(node_id: str, kind: str, agent: str, at: list[Location | None], **extra: Any) -> str:
        nodes.append({"id": node_id, "kind": kind, "agent": agent, **extra, "at": at_list(at)})
        return node_id

    def edge(a: str, b: str, on: str, at: list[Location | None], **extra: Any) -> None:
        entry: dict[str, Any] = {"from": a, "to": b, "on": on}
        entry.update({k: v for k, v in extra.items() if v not in (None, [], False)})
        entry["at"] = at_list(at)
        edges.append(entry)

    for name in order:
        agent = catalogue.agents[name]
        here = src.where(f"agents.{name}")
        answers = _answers_from_documents(src.agent_file, agent)
        router = node(routers[name], "router", name, [here], **answers)
        model = None
        if agent.model is not None:
            model = node(
                ids.make(f"{name}_model"),
                "model",
                name,
                [src.where(f"agents.{name}.model"), here],
                model=agent.model,
            )
        end = node(ids.make(f"{name}_end"), "end", name, [here])
        if model is not None:
            edge(router, model, "model", [src.where(f"agents.{name}.model")])
        edge(router, end, "reply", [here])
        for position, tool in enumerate(agent.tool_order):
            listed = src.where(f"agents.{name}.tools[{position}]")
            defined = src.tool_defined.get(tool)
            check = node(
                ids.make(f"{name}_check_{tool}"), "check", name, [listed, defined], tool=tool
            )
            run = node(ids.make(f"{name}_tool_{tool}"), "tool", name, [listed, defined], tool=tool)
            edge(router, check, "plan", [listed])
            if model is not None:
                edge(model, check, "call", [listed])
            passes = derive_check_edges(
                catalogue,
                src.settings,
                record,
                tool,
                rulebook_file=rulebook_file,
                defined=(defined,) if defined else (),
            )
            human = None
            if any(p.on == CONFIRM for p in passes):
                human = node(
                    ids.make(f"{name}_confirm_{tool}"), "human", name, [listed, defined], tool=tool
                )
            for passing in passes:
                target = run if passing.on == ALLOW else human
                when = [atom_to_json(a) for a in passing.atoms]
                edge(check, target, passing.on, [listed, *passing.at], when=when)
            _returns(edge, check, "refuse", model, end, listed)
            if human is not None:
                edge(human, run, "yes", [listed])
                _returns(edge, human, "no", model, end, listed)
            _returns(edge, run, "result", model, end, listed)
        for position, other in enumerate(agent.hands_off_to):
            listed = src.where(f"agents.{name}.hands_off_to[{position}]")
            handoff = node(ids.make(f"{name}_handoff_{other}"), "handoff", name, [listed], to=other)
            if model is not None:
                edge(model, handoff, "handoff", [listed])
            edge(handoff, routers[other], "handoff", [listed])
        if model is not None:
            edge(model, end, "reply", [here])
        edge(end, router, "next_turn", [here], turn=True)
    budget = _budget(src.budget)
    doc: dict[str, Any] = {
        "format": FORMAT,
        "name": src.filename,
        "entries": [routers[name] for name in order],
        "nodes": nodes,
        "edges": edges,
        "declarations": dict(src.declarations or {}),
        "catalogue": copy.deepcopy(dict(src.agent_file.data)),
        "settings": copy.deepcopy(dict(src.settings_raw)) if src.settings_raw else None,
        "rulebook": copy.deepcopy(dict(src.rulebook)) if src.rulebook else None,
        "sources": [dict(s) for s in src.sources],
    }
    if budget is not None:
        doc["budget"] = budget
    return doc


def _answers_from_documents(agent_file: AgentFile, agent: Any) -> dict[str, str]:
    """The router node's label for an agent whose unread turns are answered from documents."""
    documents = agent_file.other.get("documents")
    if documents is None or agent.on_unread != "answer":
        return {}
    composer = documents.get("composer", "extract") if isinstance(documents, Mapping) else None
    if composer == "model":
        return {"label": "answers from documents: the model writes from the passages found"}
    return {"label": "answers from documents: the extract composer, no model is called"}


def _returns(edge, source: str, on: str, model: str | None, end: str, listed) -> None:
    """Where a decided call returns: to the model that chose it, else the turn ends."""
    if model is not None:
        edge(source, model, on, [listed], when=[{"chooser": ["model"]}])
    edge(source, end, on, [listed], when=[{"chooser": ["opaque", "person"]}])


def _budget(raw: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    return {"run": raw.get("run"), "agents": dict(raw.get("agents") or {})}


def read_budget(raw: Any) -> tuple[dict[str, Any] | None, list[Problem]]:
    """agent.yaml's `budget:` -- a number of steps per turn, or `{run: N, agents: {name: N}}`."""
    if raw is None:
        return None, []

    def whole(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1

    if whole(raw):
        return {"run": raw, "agents": {}}, []
    if not isinstance(raw, Mapping) or set(raw) - {"run", "agents"}:
        return None, [Problem("budget", "must be a number of steps, or `{run, agents}`")]
    problems: list[Problem] = []
    run = raw.get("run")
    if run is not None and not whole(run):
        problems.append(Problem("budget.run", "must be a whole number of steps, 1 or more"))
    agents = raw.get("agents") or {}
    if not isinstance(agents, Mapping):
        problems.append(Problem("budget.agents", "must map agent names to a number of steps"))
        agents = {}
    for name, steps in agents.items():
        if not whole(steps):
            problems.append(
                Problem(f"budget.agents.{name}", "must be a whole number of steps, 1 or more")
            )
    return {"run": run, "agents": dict(agents)}, problems


def merge_overlay(doc: Mapping[str, Any], overlay: Any) -> dict[str, Any]:
    """The document with the overlay merged in; raise `GraphInvalid` naming overlay paths."""
    problems: list[Problem] = []
    if not isinstance(overlay, Mapping):
        raise GraphInvalid([Problem("$", "an overlay is a JSON object")])
    if overlay.get("format", FORMAT) != FORMAT:
        problems.append(Problem("$.format", f"must be `{FORMAT}`"))
    for key in sorted(set(overlay) - OVERLAY_KEYS, key=str):
        problems.append(Problem(f"$.{key}", "is not a field of an overlay"))
    merged = copy.deepcopy(dict(doc))
    ids = {n["id"] for n in merged["nodes"]}
    new_nodes = overlay.get("nodes") or []
    if not isinstance(new_nodes, list):
        problems.append(Problem("$.nodes", "must be a list of the team's steps"))
        new_nodes = []
    added: list[dict[str, Any]] = []
    positions: list[int] = []
    for index, raw in enumerate(new_nodes):
        path = f"$.nodes[{index}]"
        if not isinstance(raw, Mapping) or raw.get("kind") != "opaque":
            problems.append(Problem(f"{path}.kind", "an overlay adds the team's steps: `opaque`"))
            continue
        if not isinstance(raw.get("id"), str) or not raw["id"] or raw["id"] in ids:
            problems.append(Problem(f"{path}.id", f"must be a new node id, not `{raw.get('id')}`"))
            continue
        ids.add(raw["id"])
        added.append(dict(raw))
        positions.append(index)
    for index, raw in zip(positions, added, strict=True):
        for position, route in enumerate(raw.get("routes") or []):
            if route not in ids:
                problems.append(
                    Problem(
                        f"$.nodes[{index}].routes[{position}]",
                        f"names a node the graph does not have: `{route}`",
                    )
                )
    merged["nodes"].extend(added)
    new_edges = overlay.get("edges") or []
    if not isinstance(new_edges, list):
        problems.append(Problem("$.edges", "must be a list of edges"))
        new_edges = []
    for index, raw in enumerate(new_edges):
        path = f"$.edges[{index}]"
        if not isinstance(raw, Mapping):
            problems.append(Problem(path, "must be an object"))
            continue
        missing = [f"`{raw.get(k)}`" for k in ("from", "to") if raw.get(k) not in ids]
        if missing:
            problems.append(
                Problem(
                    path,
                    "must go `from` and `to` nodes the graph has: the graph has no "
                    + " and no ".join(missing),
                )
            )
            continue
        for position, item in enumerate(raw.get("when") or []):
            _, problem = atom_from(item)
            if problem is not None:
                problems.append(Problem(f"{path}.when[{position}]", problem))
        existing = [e for e in merged["edges"] if e["from"] == raw["from"] and e["to"] == raw["to"]]
        patch = set(raw) <= {"from", "to", "on", "exit_after", "budget", "at"}
        if existing and patch:
            for found in existing:
                if "on" in raw and found.get("on") != raw["on"]:
                    continue
                for key in ("exit_after", "budget"):
                    if key in raw:
                        found[key] = raw[key]
            continue
        merged["edges"].append(dict(raw))
    for raw in added:
        for route in raw.get("routes") or []:
            if route in ids and not any(
                e["from"] == raw["id"] and e["to"] == route for e in merged["edges"]
            ):
                merged["edges"].append({"from": raw["id"], "to": route, "on": "route"})
    declarations = overlay.get("declarations")
    if declarations is not None:
        if not isinstance(declarations, Mapping):
            problems.append(Problem("$.declarations", "must be an object"))
        else:
            mine = merged.setdefault("declarations", {})
            for key, value in declarations.items():
                if isinstance(value, Mapping) and isinstance(mine.get(key), Mapping):
                    mine[key] = {**mine[key], **value}
                elif isinstance(value, list) and isinstance(mine.get(key), list):
                    mine[key] = [*mine[key], *value]
                else:
                    mine[key] = copy.deepcopy(value)
    if overlay.get("budget") is not None:
        merged["budget"] = copy.deepcopy(overlay["budget"])
    if problems:
        raise GraphInvalid(sorted(set(problems)))
    return merged


#: The keys of a team's step in agent.yaml's `steps:`, of a route of one, and of an `edges:` item.
#: An edge's `on` of the graph document is `taken_on` in agent.yaml: YAML reads a bare `on` as
#: the boolean true.
STEP_KEYS = frozenset({"agent", "routes", "from", "description"})
ROUTE_KEYS = frozenset({"to", "taken_on", "when", "exit_after", "budget"})
EDGE_KEYS = frozenset({"from", "to", "taken_on", "when", "exit_after", "budget"})


@dataclass
class Team:
    """agent.yaml's `steps:` and `edges:` as an overlay, with where each of its parts came from:
    `nodes[i]` and `edges[j]` of the overlay are the agent.yaml paths `node_paths[i]` and
    `edge_paths[j]` (so a problem the overlay's merge finds names the file's field and line)."""

    overlay: dict[str, Any]
    node_paths: list[str] = field(default_factory=list)
    edge_paths: list[str] = field(default_factory=list)


def read_team(steps: Any, edges: Any, where) -> tuple[Team | None, list[Problem]]:
    """agent.yaml's `steps:` (the team's own steps: `{agent, from, routes}` by id) and `edges:`
    (edges of the team's code, or a counter on an edge the proof built), as an overlay.

    `where(path)` is the `Location` a field of agent.yaml was written at. A step's `routes` are
    where it may go -- an id, or `{to, on, when, exit_after, budget}` for a route with a condition
    or a counter --; a step without `routes` may go anywhere (QG016). `from` lists the steps that
    lead into it. Shapes are checked here; ids and conditions by `merge_overlay` and `load_graph`.
    """
    if steps is None and edges is None:
        return None, []
    problems: list[Problem] = []
    team = Team({"format": FORMAT, "nodes": [], "edges": []})

    def add_edge(raw: Mapping[str, Any], path: str) -> None:
        entry = {key: copy.deepcopy(raw[key]) for key in EDGE_KEYS if key in raw}
        if "taken_on" in entry:
            entry["on"] = entry.pop("taken_on")
        entry["at"] = at_list([where(path)])
        team.overlay["edges"].append(entry)
        team.edge_paths.append(path)

    if steps is not None and not isinstance(steps, Mapping):
        problems.append(Problem("steps", "must map each step's id to `{agent, from, routes}`"))
        steps = {}
    for name, spec in (steps or {}).items():
        path = f"steps.{name}"
        if not isinstance(spec, Mapping):
            problems.append(Problem(path, "must be `{agent, from, routes}`"))
            continue
        for key in sorted(set(spec) - STEP_KEYS, key=str):
            problems.append(Problem(f"{path}.{key}", "is not a field of a step"))
        node: dict[str, Any] = {"id": str(name), "kind": "opaque", "at": at_list([where(path)])}
        if spec.get("agent") is not None:
            node["agent"] = spec["agent"]
        routes = spec.get("routes")
        if routes is not None:
            if not isinstance(routes, list):
                problems.append(Problem(f"{path}.routes", "must be a list of step ids"))
                routes = []
            node["routes"] = []
            for position, route in enumerate(routes):
                here = f"{path}.routes[{position}]"
                if isinstance(route, str):
                    node["routes"].append(route)
                    continue
                if not isinstance(route, Mapping) or not isinstance(route.get("to"), str):
                    problems.append(Problem(here, "must be a step id, or `{to, when, exit_after}`"))
                    continue
                for key in sorted(set(route) - ROUTE_KEYS, key=str):
                    problems.append(Problem(f"{here}.{key}", "is not a field of a route"))
                node["routes"].append(route["to"])
                add_edge({"taken_on": "route", **route, "from": str(name)}, here)
        team.overlay["nodes"].append(node)
        team.node_paths.append(path)
        sources = spec.get("from") or []
        if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
            problems.append(Problem(f"{path}.from", "must be a list of step ids"))
            sources = []
        for position, source in enumerate(sources):
            add_edge(
                {"from": source, "to": str(name), "taken_on": "step"}, f"{path}.from[{position}]"
            )
    if edges is not None and not isinstance(edges, list):
        problems.append(
            Problem("edges", "must be a list of `{from, to, taken_on, when, exit_after}`")
        )
        edges = []
    for index, raw in enumerate(edges or []):
        path = f"edges[{index}]"
        if not isinstance(raw, Mapping):
            problems.append(
                Problem(path, "must be `{from, to, taken_on, when, exit_after, budget}`")
            )
            continue
        for key in sorted(set(raw) - EDGE_KEYS, key=str):
            problems.append(Problem(f"{path}.{key}", "is not a field of an edge"))
        add_edge(raw, path)
    return (team if not problems else None), problems


def merge_team(doc: Mapping[str, Any], team: Team | None, where) -> dict[str, Any]:
    """The document with agent.yaml's `steps:` and `edges:` merged in; `ConfigInvalid` naming the
    file's fields and lines (`where(path)` -> `Location`) when an id or a condition is wrong."""
    from .errors import ConfigInvalid

    if team is None:
        return dict(doc)
    try:
        return merge_overlay(doc, team.overlay)
    except GraphInvalid as error:
        raise ConfigInvalid([_relabel(p, team, where) for p in error.problems]) from None


def _relabel(problem: Problem, team: Team, where) -> Problem:
    """An overlay's `$.nodes[i].routes[j]` / `$.edges[k].when[0]` as agent.yaml's field."""
    import re

    match = re.match(r"^\$\.(nodes|edges)\[(\d+)\](.*)$", problem.path)
    if match is None:
        return problem
    paths = team.node_paths if match.group(1) == "nodes" else team.edge_paths
    index = int(match.group(2))
    if index >= len(paths):
        return problem
    rest = match.group(3)
    if match.group(1) == "nodes" and rest in (".id", ".kind"):
        rest = ""
    field_path = paths[index] + rest
    location = where(field_path) or where(paths[index])
    label = f"{location}: {field_path}" if location is not None else field_path
    return Problem(label, problem.message)
