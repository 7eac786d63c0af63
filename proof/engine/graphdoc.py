"""The `qls-graph/1` document: its shape, its digest, and strict validation into a `Graph`.

A document is plain JSON::

    {
      "format": "qls-graph/1",
      "name": "agent.yaml",                                   # a label, optional
      "entries": ["desk_router", "billing_router"],           # where a session may start
      "budget": {"run": null, "agents": {"desk": 20}},        # steps per turn, optional
      "nodes": [
        {"id": "desk_router", "kind": "router", "agent": "desk",
         "at": [{"file": "agent.yaml", "line": 3}]},
        {"id": "desk_check_get_order", "kind": "check", "agent": "desk", "tool": "get_order"},
        {"id": "team_step", "kind": "opaque", "agent": "desk", "routes": ["desk_end"]}, ...
      ],
      "edges": [
        {"from": "desk_model", "to": "desk_check_get_order", "on": "call", "when": [],
         "exit_after": null, "budget": null, "turn": false, "at": [...]}, ...
      ],
      "declarations": {"arguments": {}, "tools": {}, "stores": {}, "modules": [], "agents": {}},
      "catalogue": {...},               # what `guard.engine.load_catalogue` reads
      "settings": {...} | null,         # what `guard.engine.load_settings` reads
      "rulebook": {"file": "policy.co", "record": {...} | null, "errors": [...]} | null,
      "sources": [{"file": "agent.yaml", "sha256": "..."}]
    }

Node kinds: `router` (reads a turn), `model` (the agent's model), `check` (a tool's check),
`human` (a person confirms a call), `tool` (the tool runs), `handoff` (to another agent, `to`),
`end` (the turn ends), `opaque` (a step of the team's own: `routes` lists where it may go, or is
null when it does not say). Edge conditions are in `atoms`. An edge with `turn: true` starts the
next turn and goes from an `end` to a `router`. `exit_after` / `budget` close an edge after that
many traversals in one turn.

A document given by a caller is never trusted: `load_graph` checks every field and reference,
loads the embedded catalogue, settings and rulebook record with their own loaders, and refuses a
check edge that claims a condition the tool check does not enforce. Every problem is collected and
named by its JSON path (`$.edges[4].when[0]`) in one `GraphInvalid`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from guard.engine import Catalogue, CatalogueInvalid, Settings, load_catalogue, load_settings
from guard.engine.catalogue import CHANNEL_AUTH
from guard.engine.checks import NAMES
from guard.engine.errors import SettingsInvalid
from rulebooks.compiler import record_problems

from .atoms import CHECK_ATOMS, Atom, atom_from, canonical_atoms
from .errors import GraphInvalid, Problem
from .locations import Location, locations_from
from .toolcheck import derive_check_edges

FORMAT = "qls-graph/1"
NODE_KINDS = ("router", "model", "check", "human", "tool", "handoff", "end", "opaque")
#: Kinds that must name a tool.
TOOL_KINDS = frozenset({"check", "human", "tool"})
NODE_KEYS = frozenset({"id", "kind", "agent", "tool", "to", "routes", "model", "at", "label"})
EDGE_KEYS = frozenset({"from", "to", "on", "when", "turn", "exit_after", "budget", "at"})
DOC_KEYS = frozenset(
    {
        "format",
        "name",
        "entries",
        "budget",
        "nodes",
        "edges",
        "declarations",
        "catalogue",
        "settings",
        "rulebook",
        "sources",
    }
)
DECLARATION_KEYS = frozenset({"arguments", "tools", "stores", "modules", "agents"})
ARGUMENT_KINDS = ("code", "shell", "sql", "query", "path", "url", "template")
CODE_KINDS = frozenset({"code", "shell"})
QUERY_KINDS = frozenset({"sql", "query", "path", "url", "template"})
TOOL_DECLARATION_KEYS = frozenset(
    {"confidential", "reads_store", "writes_store", "bound_to_user", "source", "server", "pin"}
)
STORE_KEYS = frozenset({"persistent", "multi_tenant"})
MAX_NODES = 200_000
MAX_EDGES = 2_000_000


def canonical_text(doc: Mapping[str, Any]) -> str:
    """The document as canonical JSON: sorted keys, no spaces."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def graph_digest(doc: Mapping[str, Any]) -> str:
    """`sha256:<hex>` of the canonical JSON of the document."""
    return "sha256:" + hashlib.sha256(canonical_text(doc).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Node:
    index: int
    id: str
    kind: str
    agent: str | None
    tool: str | None = None
    to: str | None = None
    routes: tuple[str, ...] | None = None
    at: tuple[Location, ...] = ()


@dataclass(frozen=True)
class Edge:
    index: int
    source: int
    target: int
    on: str
    when: tuple[Atom, ...]
    turn: bool = False
    exit_after: int | None = None
    budget: int | None = None
    at: tuple[Location, ...] = ()

    @property
    def limit(self) -> int | None:
        """How many times the edge may be taken in one turn (the smaller of its two counters)."""
        found = [n for n in (self.exit_after, self.budget) if n is not None]
        return min(found) if found else None


@dataclass(frozen=True)
class Declarations:
    arguments: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    stores: Mapping[str, Mapping[str, bool]] = field(default_factory=dict)
    modules: tuple[Mapping[str, Any], ...] = ()
    agents: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Rulebook:
    file: str
    record: Mapping[str, Any] | None
    errors: tuple[tuple[int | None, str], ...] = ()


@dataclass(frozen=True)
class Graph:
    """A validated graph document, indexed for the engines."""

    doc: Mapping[str, Any]
    digest: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    entries: tuple[int, ...]
    catalogue: Catalogue
    settings: Settings
    rulebook: Rulebook | None
    declarations: Declarations
    budget_run: int | None
    budget_agents: Mapping[str, int]
    out_edges: tuple[tuple[int, ...], ...]
    by_id: Mapping[str, int]

    @property
    def name(self) -> str:
        return str(self.doc.get("name") or "graph")

    @property
    def record(self) -> Mapping[str, Any] | None:
        return self.rulebook.record if self.rulebook is not None else None

    def node(self, node_id: str) -> Node:
        return self.nodes[self.by_id[node_id]]

    def find(self, kind: str, agent: str | None = None, tool: str | None = None) -> list[Node]:
        return [
            n
            for n in self.nodes
            if n.kind == kind
            and (agent is None or n.agent == agent)
            and (tool is None or n.tool == tool)
        ]


class _Checker:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def whole(self, value: Any, path: str, *, minimum: int = 1) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.add(path, f"must be a whole number of {minimum} or more")
            return None
        return value

    def at(self, raw: Any, path: str) -> tuple[Location, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list):
            self.add(path, "must be a list of `{file, line}`")
            return ()
        for index, item in enumerate(raw):
            where = f"{path}[{index}]"
            if not isinstance(item, Mapping) or set(item) != {"file", "line"}:
                self.add(where, "must be `{file, line}`")
                continue
            if not isinstance(item["file"], str) or not item["file"]:
                self.add(f"{where}.file", "must be a file name")
            line = item["line"]
            if isinstance(line, bool) or not isinstance(line, int) or line < 1:
                self.add(f"{where}.line", "must be a line number of 1 or more")
        return locations_from(raw)


class _Catalogues:
    """Loaded catalogues by the digest of what they were loaded from (a small LRU).

    Loading checks every tool's JSON Schema, which is the slowest part of validating a large
    graph; a catalogue is immutable once loaded, so the same content is loaded once.
    """

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self.items: OrderedDict[str, Catalogue] = OrderedDict()
        self.lock = threading.Lock()

    @staticmethod
    def key(raw: Any, settings: Settings | None) -> str | None:
        try:
            text = canonical_text(
                {
                    "catalogue": raw,
                    "tool_kinds": settings.tool_kinds if settings else None,
                    "infer": settings.infer if settings else False,
                }
            )
        except (TypeError, ValueError):
            return None
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get(self, key: str | None) -> Catalogue | None:
        if key is None:
            return None
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
            return found

    def put(self, key: str | None, catalogue: Catalogue) -> None:
        if key is None:
            return
        with self.lock:
            self.items[key] = catalogue
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)


CATALOGUES = _Catalogues()


def remember_catalogue(raw: Any, settings: Settings | None, catalogue: Catalogue) -> None:
    """Record that `raw` (with these settings) loads into `catalogue`, so a graph that embeds it
    does not load it again."""
    CATALOGUES.put(_Catalogues.key(raw, settings), catalogue)


def _catalogue(raw: Any, checker: _Checker, settings: Settings | None) -> Catalogue | None:
    key = _Catalogues.key(raw, settings)
    known = CATALOGUES.get(key)
    if known is not None:
        return known
    try:
        if settings is None:
            loaded = load_catalogue(raw)
        else:
            loaded = load_catalogue(raw, tool_kinds=settings.tool_kinds, infer=settings.infer)
        CATALOGUES.put(key, loaded)
        return loaded
    except CatalogueInvalid as error:
        for issue in error.issues:
            path = f"$.catalogue.{issue.path}" if issue.path else "$.catalogue"
            checker.add(path, issue.message)
        return None


def _settings(raw: Any, checker: _Checker) -> Settings | None:
    try:
        return load_settings(raw, known_checks=NAMES)
    except SettingsInvalid as error:
        for issue in error.issues:
            path = f"$.settings.{issue.path}" if issue.path else "$.settings"
            checker.add(path, issue.message)
        return None


def _rulebook(raw: Any, checker: _Checker) -> Rulebook | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or set(raw) - {"file", "record", "errors"}:
        checker.add("$.rulebook", "must be `{file, record, errors}` or null")
        return None
    file = raw.get("file")
    if not isinstance(file, str) or not file:
        checker.add("$.rulebook.file", "must be the rulebook's file name")
        file = "rulebook"
    record = raw.get("record")
    if record is not None:
        for problem in record_problems(record):
            checker.add("$.rulebook.record", problem)
    errors: list[tuple[int | None, str]] = []
    raw_errors = raw.get("errors", [])
    if not isinstance(raw_errors, list):
        checker.add("$.rulebook.errors", "must be a list of `{line, message}`")
        raw_errors = []
    for index, item in enumerate(raw_errors):
        where = f"$.rulebook.errors[{index}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("message"), str):
            checker.add(where, "must be `{line, message}`")
            continue
        line = item.get("line")
        if line is not None and (isinstance(line, bool) or not isinstance(line, int)):
            checker.add(f"{where}.line", "must be a line number or null")
            line = None
        errors.append((line, item["message"]))
    if record is None and not errors:
        checker.add("$.rulebook", "must hold a compiled record or the errors that stopped it")
    return Rulebook(file, record if isinstance(record, Mapping) else None, tuple(errors))


def catalogue_declarations(catalogue: Catalogue | None) -> Declarations:
    """What the catalogue itself declares (agent.yaml's tool marks `confidential`,
    `reads_store`, `writes_store`, `bound_to_user`, `source`, `server`, `pin`, its `stores:`,
    its agents' `channel`, and the arguments whose schema says what they hold): the very
    declarations the tool check loads, which the proof reads under the document's own."""
    if catalogue is None:
        return Declarations()
    arguments = {n: dict(t.argument_kinds) for n, t in catalogue.tools.items() if t.argument_kinds}
    tools: dict[str, dict[str, Any]] = {}
    for name, tool in catalogue.tools.items():
        marks: dict[str, Any] = {}
        for key in ("confidential", "bound_to_user"):
            if getattr(tool, key):
                marks[key] = True
        for key in ("reads_store", "writes_store", "source", "server", "pin"):
            if getattr(tool, key) is not None:
                marks[key] = getattr(tool, key)
        if marks:
            tools[name] = marks
    stores = {
        name: {"persistent": store.persistent, "multi_tenant": store.multi_tenant}
        for name, store in catalogue.stores.items()
    }
    agents = {
        name: {"channel": dict(agent.channel)}
        for name, agent in catalogue.agents.items()
        if agent.channel is not None
    }
    return Declarations(arguments, tools, stores, (), agents)


def _declarations(raw: Any, checker: _Checker, catalogue: Catalogue | None) -> Declarations:
    """The document's `declarations`, laid over the catalogue's own (`catalogue_declarations`):
    a tool's, a store's or an agent's entry in the document wins over the catalogue's, key by key."""
    base = catalogue_declarations(catalogue)
    given = _given_declarations(raw, checker, catalogue, base.stores)
    arguments = {
        t: {**base.arguments.get(t, {}), **given.arguments.get(t, {})}
        for t in {*base.arguments, *given.arguments}
    }
    tools = {
        t: {**base.tools.get(t, {}), **given.tools.get(t, {})} for t in {*base.tools, *given.tools}
    }
    stores = {**base.stores, **given.stores}
    agents = {**base.agents, **given.agents}
    return Declarations(arguments, tools, stores, given.modules, agents)


def _given_declarations(
    raw: Any, checker: _Checker, catalogue: Catalogue | None, known_stores: Mapping[str, Any]
) -> Declarations:
    if raw is None:
        return Declarations()
    if not isinstance(raw, Mapping):
        checker.add("$.declarations", "must be an object")
        return Declarations()
    for key in sorted(set(raw) - DECLARATION_KEYS, key=str):
        checker.add(f"$.declarations.{key}", "is not a kind of declaration")
    tools = catalogue.tools if catalogue is not None else {}
    arguments: dict[str, dict[str, str]] = {}
    for tool, args in (raw.get("arguments") or {}).items():
        path = f"$.declarations.arguments.{tool}"
        if catalogue is not None and tool not in tools:
            checker.add(path, f"names a tool the catalogue does not have: `{tool}`")
            continue
        if not isinstance(args, Mapping):
            checker.add(path, "must map argument names to a kind")
            continue
        declared = tools[tool].arguments.declared if tool in tools else ()
        for arg, kind in args.items():
            if kind not in ARGUMENT_KINDS:
                checker.add(f"{path}.{arg}", "must be one of " + ", ".join(ARGUMENT_KINDS))
            elif catalogue is not None and arg not in declared:
                checker.add(f"{path}.{arg}", f"is not an argument of `{tool}`")
            else:
                arguments.setdefault(tool, {})[arg] = kind
    stores: dict[str, dict[str, bool]] = {}
    for name, spec in (raw.get("stores") or {}).items():
        path = f"$.declarations.stores.{name}"
        if not isinstance(spec, Mapping) or set(spec) - STORE_KEYS:
            checker.add(path, "must be `{persistent, multi_tenant}`")
            continue
        if not all(isinstance(v, bool) for v in spec.values()):
            checker.add(path, "`persistent` and `multi_tenant` must be true or false")
            continue
        stores[str(name)] = dict(spec)
    tool_decls: dict[str, dict[str, Any]] = {}
    for tool, spec in (raw.get("tools") or {}).items():
        path = f"$.declarations.tools.{tool}"
        if catalogue is not None and tool not in tools:
            checker.add(path, f"names a tool the catalogue does not have: `{tool}`")
            continue
        if not isinstance(spec, Mapping) or set(spec) - TOOL_DECLARATION_KEYS:
            checker.add(path, "must use only " + ", ".join(sorted(TOOL_DECLARATION_KEYS)))
            continue
        for key in ("confidential", "bound_to_user"):
            if key in spec and not isinstance(spec[key], bool):
                checker.add(f"{path}.{key}", "must be true or false")
        for key in ("reads_store", "writes_store"):
            if key in spec and spec[key] not in stores and spec[key] not in known_stores:
                checker.add(f"{path}.{key}", f"names a store not declared: `{spec[key]}`")
        for key in ("source", "server", "pin"):
            if key in spec and (not isinstance(spec[key], str) or not spec[key]):
                checker.add(f"{path}.{key}", "must be a non-empty text")
        tool_decls[str(tool)] = dict(spec)
    modules: list[dict[str, Any]] = []
    raw_modules = raw.get("modules") or []
    if not isinstance(raw_modules, list):
        checker.add("$.declarations.modules", "must be a list of `{name, source, pin}`")
        raw_modules = []
    for index, spec in enumerate(raw_modules):
        path = f"$.declarations.modules[{index}]"
        if not isinstance(spec, Mapping) or set(spec) - {"name", "source", "pin"}:
            checker.add(path, "must be `{name, source, pin}`")
            continue
        if not isinstance(spec.get("name"), str) or not spec["name"]:
            checker.add(f"{path}.name", "must name the module")
            continue
        modules.append(dict(spec))
    agents: dict[str, dict[str, Any]] = {}
    for agent, spec in (raw.get("agents") or {}).items():
        path = f"$.declarations.agents.{agent}"
        if catalogue is not None and agent not in catalogue.agents:
            checker.add(path, f"names an agent the catalogue does not have: `{agent}`")
            continue
        channel = spec.get("channel") if isinstance(spec, Mapping) else None
        if not isinstance(spec, Mapping) or set(spec) != {"channel"}:
            checker.add(path, "must be `{channel: {url, auth}}`")
            continue
        if not isinstance(channel, Mapping) or set(channel) - {"url", "auth"}:
            checker.add(f"{path}.channel", "must be `{url, auth}`")
            continue
        if not isinstance(channel.get("url"), str) or not channel["url"]:
            checker.add(f"{path}.channel.url", "must be the channel's address")
            continue
        if channel.get("auth", "none") not in CHANNEL_AUTH:
            checker.add(f"{path}.channel.auth", "must be one of " + ", ".join(CHANNEL_AUTH))
            continue
        agents[str(agent)] = {"channel": dict(channel)}
    return Declarations(arguments, tool_decls, stores, tuple(modules), agents)


def _budget(raw: Any, checker: _Checker, catalogue: Catalogue | None):
    if raw is None:
        return None, {}
    if not isinstance(raw, Mapping) or set(raw) - {"run", "agents"}:
        checker.add("$.budget", "must be `{run, agents}`")
        return None, {}
    run = checker.whole(raw.get("run"), "$.budget.run")
    agents: dict[str, int] = {}
    raw_agents = raw.get("agents") or {}
    if not isinstance(raw_agents, Mapping):
        checker.add("$.budget.agents", "must map agent names to a number of steps")
        raw_agents = {}
    for name, steps in raw_agents.items():
        if catalogue is not None and name not in catalogue.agents:
            checker.add(
                f"$.budget.agents.{name}", f"names an agent the catalogue does not have: `{name}`"
            )
            continue
        value = checker.whole(steps, f"$.budget.agents.{name}")
        if value is not None:
            agents[str(name)] = value
    return run, agents


def _node(raw: Any, index: int, checker: _Checker, catalogue: Catalogue | None) -> Node | None:
    path = f"$.nodes[{index}]"
    if not isinstance(raw, Mapping):
        checker.add(path, "must be an object")
        return None
    for key in sorted(set(raw) - NODE_KEYS, key=str):
        checker.add(f"{path}.{key}", "is not a field of a node")
    node_id, kind = raw.get("id"), raw.get("kind")
    if not isinstance(node_id, str) or not node_id:
        checker.add(f"{path}.id", "must be a non-empty text")
        return None
    if kind not in NODE_KINDS:
        checker.add(f"{path}.kind", "must be one of " + ", ".join(NODE_KINDS))
        return None
    agent = raw.get("agent")
    ok = True
    if agent is None and kind != "opaque":
        checker.add(f"{path}.agent", f"a `{kind}` node must name its agent")
        ok = False
    elif agent is not None:
        if not isinstance(agent, str):
            checker.add(f"{path}.agent", "must be an agent's name")
            ok = False
        elif catalogue is not None and agent not in catalogue.agents:
            checker.add(f"{path}.agent", f"names an agent the catalogue does not have: `{agent}`")
            ok = False
    tool = raw.get("tool")
    if kind in TOOL_KINDS:
        if not isinstance(tool, str):
            checker.add(f"{path}.tool", f"a `{kind}` node must name its tool")
            ok = False
        elif catalogue is not None and tool not in catalogue.tools:
            checker.add(f"{path}.tool", f"names a tool the catalogue does not have: `{tool}`")
            ok = False
    elif tool is not None:
        checker.add(f"{path}.tool", f"a `{kind}` node names no tool")
        ok = False
    to = raw.get("to")
    if kind == "handoff":
        if not isinstance(to, str):
            checker.add(f"{path}.to", "a `handoff` node must name the agent it hands off to")
            ok = False
        elif catalogue is not None and to not in catalogue.agents:
            checker.add(f"{path}.to", f"names an agent the catalogue does not have: `{to}`")
            ok = False
    elif to is not None:
        checker.add(f"{path}.to", f"a `{kind}` node hands off to no one")
        ok = False
    routes = raw.get("routes")
    if kind == "opaque":
        if routes is not None and (
            not isinstance(routes, list) or not all(isinstance(r, str) for r in routes)
        ):
            checker.add(f"{path}.routes", "must be a list of node ids, or null")
            ok = False
    elif routes is not None:
        checker.add(f"{path}.routes", "only a team's step (`opaque`) declares routes")
        ok = False
    model = raw.get("model")
    if model is not None and (kind != "model" or not isinstance(model, str)):
        checker.add(f"{path}.model", "only a `model` node names a model, as a text")
    if raw.get("label") is not None and not isinstance(raw.get("label"), str):
        checker.add(f"{path}.label", "must be a text")
    at = checker.at(raw.get("at"), f"{path}.at")
    if not ok:
        return None
    return Node(
        index,
        node_id,
        kind,
        agent,
        tool if kind in TOOL_KINDS else None,
        to if kind == "handoff" else None,
        tuple(routes) if kind == "opaque" and isinstance(routes, list) else None,
        at,
    )


def load_graph(doc: Any) -> Graph:
    """Validate a `qls-graph/1` document into a `Graph`; raise `GraphInvalid` with every problem."""
    checker = _Checker()
    if not isinstance(doc, Mapping):
        raise GraphInvalid([Problem("$", "a graph document is a JSON object")])
    if doc.get("format") != FORMAT:
        checker.add("$.format", f"must be `{FORMAT}`")
    for key in sorted(set(doc) - DOC_KEYS, key=str):
        checker.add(f"$.{key}", "is not a field of a graph document")
    if doc.get("name") is not None and not isinstance(doc.get("name"), str):
        checker.add("$.name", "must be a text")
    settings = _settings(doc.get("settings"), checker)
    catalogue = _catalogue(doc.get("catalogue", {}), checker, settings)
    rulebook = _rulebook(doc.get("rulebook"), checker)
    declarations = _declarations(doc.get("declarations"), checker, catalogue)
    budget_run, budget_agents = _budget(doc.get("budget"), checker, catalogue)
    raw_nodes = doc.get("nodes")
    raw_edges = doc.get("edges")
    if not isinstance(raw_nodes, list):
        checker.add("$.nodes", "must be a list of nodes")
        raw_nodes = []
    if not isinstance(raw_edges, list):
        checker.add("$.edges", "must be a list of edges")
        raw_edges = []
    if len(raw_nodes) > MAX_NODES:
        raise GraphInvalid([Problem("$.nodes", f"holds more than {MAX_NODES} nodes")])
    if len(raw_edges) > MAX_EDGES:
        raise GraphInvalid([Problem("$.edges", f"holds more than {MAX_EDGES} edges")])
    nodes: list[Node] = []
    by_id: dict[str, int] = {}
    for index, raw in enumerate(raw_nodes):
        node = _node(raw, index, checker, catalogue)
        if node is None:
            continue
        if node.id in by_id:
            checker.add(f"$.nodes[{index}].id", f"repeats the node `{node.id}`")
            continue
        node = dataclasses.replace(node, index=len(nodes))
        by_id[node.id] = node.index
        nodes.append(node)
    for node in nodes:
        for position, route in enumerate(node.routes or ()):
            if route not in by_id:
                place = _place(raw_nodes, node.id)
                checker.add(
                    f"$.nodes[{place}].routes[{position}]",
                    f"names a node the graph does not have: `{route}`",
                )
    entries: list[int] = []
    raw_entries = doc.get("entries")
    if not isinstance(raw_entries, list) or not raw_entries:
        checker.add("$.entries", "must list the routers a session may start at")
        raw_entries = []
    for index, entry in enumerate(raw_entries):
        if entry not in by_id:
            checker.add(f"$.entries[{index}]", f"names a node the graph does not have: `{entry}`")
        elif nodes[by_id[entry]].kind != "router":
            checker.add(f"$.entries[{index}]", f"names `{entry}`, which is not a router")
        elif by_id[entry] not in entries:
            entries.append(by_id[entry])
    derived: dict[tuple[str, str], list[Any]] = {}
    edges: list[Edge] = []
    for index, raw in enumerate(raw_edges):
        edge = _edge(raw, index, checker, nodes, by_id, catalogue, settings, rulebook, derived)
        if edge is not None:
            edges.append(dataclasses.replace(edge, index=len(edges)))
    if checker.problems or catalogue is None or settings is None:
        raise GraphInvalid(sorted(set(checker.problems), key=_path_order))
    out: list[list[int]] = [[] for _ in nodes]
    for edge in edges:
        out[edge.source].append(edge.index)
    return Graph(
        doc=doc,
        digest=graph_digest(doc),
        nodes=tuple(nodes),
        edges=tuple(edges),
        entries=tuple(entries),
        catalogue=catalogue,
        settings=settings,
        rulebook=rulebook,
        declarations=declarations,
        budget_run=budget_run,
        budget_agents=budget_agents,
        out_edges=tuple(tuple(o) for o in out),
        by_id=by_id,
    )


def _place(raw_nodes: list[Any], node_id: str) -> int:
    for index, raw in enumerate(raw_nodes):
        if isinstance(raw, Mapping) and raw.get("id") == node_id:
            return index
    return -1


def _edge(raw, index, checker, nodes, by_id, catalogue, settings, rulebook, derived):
    path = f"$.edges[{index}]"
    if not isinstance(raw, Mapping):
        checker.add(path, "must be an object")
        return None
    for key in sorted(set(raw) - EDGE_KEYS, key=str):
        checker.add(f"{path}.{key}", "is not a field of an edge")
    ends = []
    for key in ("from", "to"):
        value = raw.get(key)
        if value not in by_id:
            checker.add(f"{path}.{key}", f"names a node the graph does not have: `{value}`")
        ends.append(by_id.get(value))
    on = raw.get("on", "")
    if not isinstance(on, str):
        checker.add(f"{path}.on", "must be a text")
        on = ""
    turn = raw.get("turn", False)
    if not isinstance(turn, bool):
        checker.add(f"{path}.turn", "must be true or false")
        turn = False
    exit_after = checker.whole(raw.get("exit_after"), f"{path}.exit_after")
    budget = checker.whole(raw.get("budget"), f"{path}.budget")
    at = checker.at(raw.get("at"), f"{path}.at")
    atoms: list[Atom] = []
    raw_when = raw.get("when", [])
    if not isinstance(raw_when, list):
        checker.add(f"{path}.when", "must be a list of conditions")
        raw_when = []
    for position, item in enumerate(raw_when):
        atom, problem = atom_from(item)
        if problem is not None:
            checker.add(f"{path}.when[{position}]", problem)
            continue
        if atom[0] in ("ran", "not_ran", "below") and catalogue is not None:
            if atom[1] not in catalogue.tools:
                checker.add(
                    f"{path}.when[{position}]",
                    f"names a tool the catalogue does not have: `{atom[1]}`",
                )
                continue
        atoms.append(atom)
    if None in ends:
        return None
    source, target = (nodes[i] for i in ends)
    if turn and (source.kind != "end" or target.kind != "router"):
        checker.add(f"{path}.turn", "a turn edge goes from an `end` to a `router`")
        return None
    if turn and (exit_after is not None or budget is not None):
        checker.add(f"{path}.turn", "a turn edge carries no counter: the turns are counted")
        return None
    claimed = [a for a in atoms if a[0] in CHECK_ATOMS]
    if claimed and catalogue is not None and settings is not None:
        _justify(claimed, path, on, source, checker, catalogue, settings, rulebook, derived)
    return Edge(
        index,
        source.index,
        target.index,
        on,
        canonical_atoms(atoms),
        turn,
        exit_after,
        budget,
        at,
    )


def _justify(claimed, path, on, source, checker, catalogue, settings, rulebook, derived) -> None:
    """A check edge may claim only what the tool check enforces (see `toolcheck`)."""
    if source.kind != "check" or on not in ("allow", "confirm"):
        checker.add(
            f"{path}.when",
            "only a tool check's `allow` or `confirm` edge carries conditions on the call: "
            f"`{source.id}` is not a check",
        )
        return
    key = (source.tool, on)
    if key not in derived:
        record = rulebook.record if rulebook is not None else None
        file = rulebook.file if rulebook is not None else "rulebook"
        derived[key] = [
            set(e.atoms)
            for e in derive_check_edges(
                catalogue, settings, record, source.tool, rulebook_file=file
            )
            if e.on == on
        ]
    if not any(set(claimed) <= allowed for allowed in derived[key]):
        checker.add(
            f"{path}.when",
            f"claims conditions the tool check of `{source.tool}` does not enforce together: "
            "the catalogue, the rulebook and the settings do not declare them",
        )


def _path_order(problem: Problem) -> tuple[Any, ...]:
    parts = re.split(r"(\d+)", problem.path)
    return tuple(int(p) if p.isdigit() else p for p in parts), problem.message
