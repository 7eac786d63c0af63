"""The questions the hunter asks of a graph, one or more per rule, for both engines to answer.

Each rule that is about routes turns into questions (`model.Obligation`): a set of edges, and the
states in which taking one of them is a finding. Generic reachability questions (`reach:...`,
"can this tool's check or this tool step be reached at all?") back the rules that read the
catalogue or the rulebook and only need to know the tool is callable. Cycle questions back QG023.

What each rule asks (T a tool, S an earlier tool, h' the state of the move):

- QG001: an edge into T's tool step that does not leave T's check or T's confirmation;
- QG002: an edge from T's check to T not on `allow`, or from T's confirmation not on `yes`;
- QG003: an edge into T with S in `ran` but not in `turn_ran`, for each guard of T on S that
  does not bind the argument T and S share;
- QG011: an edge into a tool of an agent, not from a person's yes, with a lower `lowest`;
- QG012: an edge into a write, not from a person's yes, with a label that taints it, chosen by a
  model or a team's step;
- QG013: an edge into an undoable write W with the irreversible I not in `ran` (the finding is
  when this is unreachable while W is reachable) -- asked where something can force I first:
  W's check requires I to have run (directly or through the tools it requires), or every path
  of the graph to W passes a step of I;
- QG014: an edge into T breaking one of its order rules;
- QG015: the undeclared edge itself; QG016: an edge into a team's step with no routes;
- QG017 / QG018: an edge into T (an argument declared code / query or destination), chosen by a
  model or a team's step, not from a person's yes nor, for a write, from its check; a `url`
  argument the tool check reads as a host, in a tool not declared `sends_out`, is not asked for
  QG018 while the `destinations` check is on: its step 4 refuses every destination in it, so the
  call with a model's URL never runs (`runtime_holds_destination`), unless the tool `fetches` it;
  a write's check holds a model-written argument unless it is marked `free_text`;
- QG019: an edge into a tool that sends out, not from a yes, after a confidential tool ran,
  chosen by a model or a team's step;
- QG020: an edge into a tool reading a multi-tenant store without `bound_to_user`;
- QG021: an edge into a tool writing a persistent store read back without `reads_outside`, after
  outside content was read;
- QG101: an edge into a write's check, chosen by a model or a team's step, when the write has no
  rule of its own; QG105: an edge into an unrecoverable write W, the first W of its turn, after a
  write ran in that turn, or an edge into another write after W ran in the turn (W twice is not
  "another write");
- QG023: a state that repeats within one turn along a cycle of the graph through a model or a
  tool step that avoids every counted edge (`exit_after`, `budget`) and every agent with a
  budget, unless the run has a budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from guard.engine.checks import switched_on
from guard.engine.kinds import SENDS_OUT
from guard.engine.tool_checks import ValueFrom

from .conditions import facts_read
from .graphdoc import CODE_KINDS, QUERY_KINDS, Edge, Graph, Node
from .model import PRIVILEGE_RANK, TRUE, Cube, CycleQuestion, Obligation
from .toolcheck import tainting

MODEL_CHOSEN = frozenset({"model", "opaque"})


def argument_kinds(graph: Graph) -> dict[str, dict[str, str]]:
    """Each tool's arguments declared as code, a command, a query or a destination.

    The catalogue's reading of each argument's JSON Schema (`format`, `contentMediaType`: the
    `Tool.argument_kinds` the tool check loads), under the graph's `declarations.arguments`, which
    wins (`graphdoc.catalogue_declarations` folds the two).
    """
    return {name: dict(args) for name, args in graph.declarations.arguments.items() if args}


def runtime_holds_destination(graph: Graph, tool: str, argument: str, kind: str) -> bool:
    """Whether the tool check refuses every destination the model could write in this argument:
    a `url` argument it reads as a host (by its name or its schema's `format`), in a tool not
    declared `sends_out`, with the `destinations` check (step 4, `undeclared_destination`) on. An
    argument the tool fetches (`fetches`) is not held there: step 4 lets it through."""
    found = graph.catalogue.tools[tool]
    return (
        kind == "url"
        and found.kind != SENDS_OUT
        and argument in found.arguments.host_arguments
        and argument not in found.fetches
        and "destinations" in switched_on(graph.settings.checks)
    )


def shared_arguments(graph: Graph, a: str, b: str) -> list[str]:
    """The argument names two tools both take, sorted."""
    tools = graph.catalogue.tools
    return sorted(set(tools[a].arguments.declared) & set(tools[b].arguments.declared))


def unbound_guards(graph: Graph) -> list[tuple[str, str, str, str]]:
    """(tool, source tool, shared argument, how) for each guard not bound to the call."""
    found: list[tuple[str, str, str, str]] = []
    catalogue = graph.catalogue
    for name, tool in sorted(catalogue.tools.items()):
        for rule in tool.after:
            bound = {b.argument for b in rule.bind}
            loose = [a for a in shared_arguments(graph, name, rule.tool) if a not in bound]
            if loose and rule.tool != name:
                found.append((name, rule.tool, loose[0], f"after {rule.tool}"))
        for item in tool.checks:
            value = item.value
            if isinstance(value, ValueFrom) and value.same is None and value.tool != name:
                shared = shared_arguments(graph, name, value.tool)
                if shared:
                    found.append((name, value.tool, shared[0], f"check from {value.text}"))
    record = graph.record
    if record is not None:
        sources = {s.name: s for s in catalogue.fact_sources}
        for name, governed in sorted((record.get("tools") or {}).items()):
            if name not in catalogue.tools:
                continue
            read: set[str] = set()
            for route in governed.get("routes") or []:
                for condition in route.get("conditions", ()):
                    read |= facts_read(condition.get("test"))
            for row in governed.get("rules") or []:
                read |= facts_read(row.get("test"))
            for fact in sorted(read):
                source = sources.get(fact)
                if source is None or source.same or source.tool == name:
                    continue
                shared = shared_arguments(graph, name, source.tool)
                if shared:
                    found.append((name, source.tool, shared[0], f"fact {fact}"))
    unique: dict[tuple[str, str], tuple[str, str, str, str]] = {}
    for entry in found:
        unique.setdefault((entry[0], entry[1]), entry)
    return list(unique.values())


def own_rules(graph: Graph, tool: str) -> bool:
    """Whether a tool has a rule of its own: an order rule, a check, or a rulebook condition."""
    entry = graph.catalogue.tools[tool]
    if entry.after or entry.not_after or entry.at_most is not None or entry.checks:
        return True
    record = graph.record
    governed = (record or {}).get("tools", {}).get(tool) if record else None
    if isinstance(governed, Mapping):
        if governed.get("rules"):
            return True
        routes = governed.get("routes") or []
        if not routes:
            return True  # governed with no route: the gate refuses it
        return all(any("test" in c for c in route.get("conditions", ())) for route in routes)
    return False


def tainting_labels(graph: Graph, tool: str) -> frozenset[str]:
    """The outside labels below the trust `tool` requires (whatever the checks switched on)."""
    return frozenset(tainting(graph.catalogue, graph.settings, tool))


@dataclass
class Questions:
    obligations: list[Obligation] = field(default_factory=list)
    cycles: list[CycleQuestion] = field(default_factory=list)
    keys: dict[str, int] = field(default_factory=dict)

    def add(self, key: str, rule: str, subject: str, targets, **data: Any) -> int | None:
        targets = tuple((edge, tuple(cubes)) for edge, cubes in targets if cubes)
        if not targets:
            return None
        if key in self.keys:
            return self.keys[key]
        self.keys[key] = len(self.obligations)
        self.obligations.append(Obligation(key, rule, subject, targets, dict(data)))
        return self.keys[key]

    def reach(self, kind: str, tool: str, edges: list[Edge]) -> int | None:
        """The question "can a `kind` node of `tool` be reached?" (shared by several rules)."""
        targets = [(e.index, (TRUE,)) for e in edges]
        return self.add(f"reach:{kind}:{tool}", "reach", tool, targets, kind=kind)


def _sccs(graph: Graph, edges: list[Edge] | None = None) -> list[list[int]]:
    """The strongly connected components that hold a cycle, over `edges` (by default every edge
    but the turn edges), by Tarjan's algorithm, iteratively."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on: set[int] = set()
    out: list[list[int]] = []
    counter = 0
    succ: list[list[int]] = [[] for _ in graph.nodes]
    for edge in graph.edges if edges is None else edges:
        if edges is not None or not edge.turn:
            succ[edge.source].append(edge.target)
    for root in range(len(graph.nodes)):
        if root in index:
            continue
        work = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, position = work[-1]
            if position < len(succ[node]):
                work[-1] = (node, position + 1)
                nxt = succ[node][position]
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, 0))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in succ[node]:
                    out.append(sorted(component))
    return out


def undeclared_edges(graph: Graph) -> list[tuple[Edge, str]]:
    """Edges the nodes they leave do not declare, with the reason."""
    catalogue = graph.catalogue
    found: list[tuple[Edge, str]] = []
    for edge in graph.edges:
        source, target = graph.nodes[edge.source], graph.nodes[edge.target]
        reason = None
        if source.kind == "opaque":
            if source.routes is not None and target.id not in source.routes:
                reason = f"the step `{source.id}` does not list `{target.id}` in its routes"
        elif edge.turn:
            if source.agent != target.agent:
                reason = f"a turn of `{source.agent}` cannot start at `{target.agent}`"
        elif source.kind == "handoff":
            if target.kind != "router" or target.agent != source.to:
                reason = f"the hand-off to `{source.to}` leads to `{target.id}`"
        elif source.kind in ("router", "model") and target.kind == "check":
            agent = catalogue.agents.get(source.agent or "")
            if target.agent != source.agent or agent is None or target.tool not in agent.tools:
                reason = f"agent '{source.agent}' does not list '{target.tool}'"
        elif source.kind == "model" and target.kind == "handoff":
            agent = catalogue.agents.get(source.agent or "")
            if agent is None or target.to not in agent.hands_off_to or target.agent != source.agent:
                reason = f"agent '{source.agent}' does not hand off to '{target.to}'"
        elif (
            source.agent is not None
            and target.agent is not None
            and source.agent != target.agent
            and target.kind != "opaque"
        ):
            reason = f"a step of '{source.agent}' leads into '{target.agent}' without a hand-off"
        if reason is not None:
            found.append((edge, reason))
    return found


class _Reach:
    """Which tools' steps the steps of a tool can lead to, in the graph (memoised).

    A pair question -- "tool A runs, later tool B" -- is asked only when some step of A leads to
    some step of B: otherwise no run has them in that order, and asking would only cost time.
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.succ: dict[bool, list[list[int]]] = {}
        self.memo: dict[tuple[str, bool], frozenset[str]] = {}

    def _successors(self, turns: bool) -> list[list[int]]:
        if turns not in self.succ:
            succ: list[list[int]] = [[] for _ in self.graph.nodes]
            for edge in self.graph.edges:
                if turns or not edge.turn:
                    succ[edge.source].append(edge.target)
            self.succ[turns] = succ
        return self.succ[turns]

    def tools_after(self, tool: str, *, turns: bool) -> frozenset[str]:
        """The tools whose steps a step of `tool` leads to (across turns when `turns`)."""
        key = (tool, turns)
        if key not in self.memo:
            succ = self._successors(turns)
            start = [n.index for n in self.graph.nodes if n.kind == "tool" and n.tool == tool]
            seen: set[int] = set()
            stack = [t for s in start for t in succ[s]]
            while stack:
                node = stack.pop()
                if node in seen:
                    continue
                seen.add(node)
                stack.extend(succ[node])
            nodes = self.graph.nodes
            self.memo[key] = frozenset(nodes[n].tool for n in seen if nodes[n].kind == "tool")
        return self.memo[key]


def _forced_before(graph: Graph) -> dict[str, frozenset[str]]:
    """For each tool, the tools its check makes run first on every way past it (a `ran` atom on
    every edge that passes it), closed over those tools' own checks."""
    direct: dict[str, frozenset[str] | None] = {}
    for edge in graph.edges:
        source = graph.nodes[edge.source]
        if source.kind != "check" or edge.on not in ("allow", "confirm"):
            continue
        needed = frozenset(atom[1] for atom in edge.when if atom[0] == "ran")
        known = direct.get(source.tool)
        direct[source.tool] = needed if known is None else known & needed
    closed: dict[str, frozenset[str]] = {}
    for tool in direct:
        seen: set[str] = set()
        stack = list(direct[tool] or ())
        while stack:
            other = stack.pop()
            if other in seen:
                continue
            seen.add(other)
            stack.extend(direct.get(other) or ())
        closed[tool] = frozenset(seen)
    return closed


def _reachable_without(graph: Graph, tool: str, avoid: str) -> bool:
    """Whether a step of `tool` can be reached from an entry without a step of `avoid` (the
    graph's shape only, every edge, across turns)."""
    blocked = {n.index for n in graph.nodes if n.kind == "tool" and n.tool == avoid}
    seen = set(graph.entries) - blocked
    stack = list(seen)
    while stack:
        node = stack.pop()
        if graph.nodes[node].kind == "tool" and graph.nodes[node].tool == tool:
            return True
        for index in graph.out_edges[node]:
            target = graph.edges[index].target
            if target not in seen and target not in blocked:
                seen.add(target)
                stack.append(target)
    return False


def ask(graph: Graph) -> Questions:
    """Every question of every rule about routes (see the module docstring)."""
    q = Questions()
    catalogue = graph.catalogue
    nodes = graph.nodes
    reach = _Reach(graph)
    into: dict[int, list[Edge]] = {}
    for edge in graph.edges:
        if not edge.turn:
            into.setdefault(edge.target, []).append(edge)
    by_tool: dict[tuple[str, str | None], list[Node]] = {}
    for node in nodes:
        by_tool.setdefault((node.kind, node.tool), []).append(node)

    def edges_into(kind: str, tool: str, agent: str | None = None) -> list[Edge]:
        out: list[Edge] = []
        for node in by_tool.get((kind, tool), ()):
            if agent is None or node.agent == agent:
                out.extend(into.get(node.index, ()))
        return out

    def from_guard(edge: Edge, tool: str, kinds=("check", "human")) -> bool:
        source = nodes[edge.source]
        return source.kind in kinds and source.tool == tool

    def from_yes(edge: Edge, tool: str) -> bool:
        return from_guard(edge, tool, ("human",))

    for name in sorted(catalogue.tools):
        tool = catalogue.tools[name]
        runs = edges_into("tool", name)
        if not runs and not edges_into("check", name):
            continue
        q.add(
            f"QG001:{name}",
            "QG001",
            name,
            [(e.index, (TRUE,)) for e in runs if not from_guard(e, name)],
        )
        escapes = []
        for e in runs:
            source = nodes[e.source]
            if source.tool == name and (
                (source.kind == "check" and e.on != "allow")
                or (source.kind == "human" and e.on != "yes")
            ):
                escapes.append((e.index, (TRUE,)))
        q.add(f"QG002:{name}", "QG002", name, escapes)
        cubes: list[Cube] = [Cube(not_ran=frozenset({r.tool})) for r in tool.after]
        cubes += [Cube(ran=frozenset({r.tool})) for r in tool.not_after]
        if tool.at_most is not None:
            cubes.append(Cube(count_full=(name, tool.at_most)))
        if cubes:
            q.add(f"QG014:{name}", "QG014", name, [(e.index, cubes) for e in runs])
        q.reach("check", name, edges_into("check", name))
        q.reach("tool", name, runs)

    for name, source, argument, how in unbound_guards(graph):
        if name not in reach.tools_after(source, turns=True):
            continue
        cube = Cube(ran=frozenset({source}), not_turn_ran=frozenset({source}))
        q.add(
            f"QG003:{name}:{source}",
            "QG003",
            name,
            [(e.index, (cube,)) for e in edges_into("tool", name)],
            source=source,
            argument=argument,
            how=how,
        )

    handoffs = any(agent.hands_off_to for agent in catalogue.agents.values())
    if handoffs:
        for agent_name, agent in sorted(catalogue.agents.items()):
            rank = PRIVILEGE_RANK[agent.privilege]
            if rank == 0:
                continue
            cube = Cube(lowest_below=rank)
            for name in agent.tool_order:
                targets = [
                    (e.index, (cube,))
                    for e in edges_into("tool", name, agent_name)
                    if not from_yes(e, name)
                ]
                q.add(f"QG011:{agent_name}:{name}", "QG011", name, targets, agent=agent_name)

    for name in sorted(catalogue.tools):
        if not catalogue.tools[name].is_write:
            continue
        labels = tainting_labels(graph, name)
        if labels:
            cube = Cube(any_label=labels, chooser=MODEL_CHOSEN)
            targets = [
                (e.index, (cube,)) for e in edges_into("tool", name) if not from_yes(e, name)
            ]
            q.add(f"QG012:{name}", "QG012", name, targets, labels=sorted(labels))

    irreversible = sorted(n for n, t in catalogue.tools.items() if t.irreversible)
    undoable = sorted(n for n, t in catalogue.tools.items() if t.is_write and t.compensation)
    forced = _forced_before(graph) if undoable and irreversible else {}
    for name in undoable:
        for other in irreversible:
            if other == name or name not in reach.tools_after(other, turns=True):
                continue
            # Only an order rule, the rulebook or the graph's shape can put `other` first on
            # every route; where none of them can, the question is not worth a state bit.
            if other not in forced.get(name, frozenset()) and _reachable_without(
                graph, name, other
            ):
                continue
            cube = Cube(not_ran=frozenset({other}))
            q.add(
                f"QG013:{name}:{other}",
                "QG013",
                name,
                [(e.index, (cube,)) for e in edges_into("tool", name)],
                irreversible=other,
            )

    for edge, reason in undeclared_edges(graph):
        source, target = nodes[edge.source], nodes[edge.target]
        q.add(
            f"QG015:{edge.index}",
            "QG015",
            f"{source.id} -> {target.id}",
            [(edge.index, (TRUE,))],
            edge=edge.index,
            reason=reason,
        )
    for node in nodes:
        if node.kind == "opaque" and node.routes is None:
            q.add(
                f"QG016:{node.id}",
                "QG016",
                node.id,
                [(e.index, (TRUE,)) for e in into.get(node.index, ())],
                node=node.id,
            )

    kinds = argument_kinds(graph)
    for name, args in sorted(kinds.items()):
        write = catalogue.tools[name].is_write
        for rule, family in (("QG017", CODE_KINDS), ("QG018", QUERY_KINDS)):
            chosen = sorted(
                a
                for a, k in args.items()
                if k in family and not runtime_holds_destination(graph, name, a, k)
            )
            if not chosen:
                continue
            # A write's check asks a person about a value the model wrote, unless it is marked
            # free text (the loader refuses that mark on an argument its schema declares a query
            # or a destination; one declared so in the overlay is not held by the check).
            held = write and not set(chosen) & catalogue.tools[name].free_text
            cube = Cube(chooser=MODEL_CHOSEN)
            targets = [
                (e.index, (cube,))
                for e in edges_into("tool", name)
                if not from_yes(e, name) and not (held and from_guard(e, name, ("check",)))
            ]
            q.add(f"{rule}:{name}", rule, name, targets, argument=chosen[0])

    tool_decls = graph.declarations.tools
    confidential = sorted(n for n, d in tool_decls.items() if d.get("confidential"))
    senders = sorted(n for n, t in catalogue.tools.items() if t.kind == "sends_out")
    for name in senders:
        for source in confidential:
            if name not in reach.tools_after(source, turns=True):
                continue
            cube = Cube(ran=frozenset({source}), chooser=MODEL_CHOSEN)
            targets = [
                (e.index, (cube,)) for e in edges_into("tool", name) if not from_yes(e, name)
            ]
            q.add(f"QG019:{name}:{source}", "QG019", name, targets, source=source)

    stores = graph.declarations.stores
    for name, decl in sorted(tool_decls.items()):
        store = decl.get("reads_store")
        if store and stores.get(store, {}).get("multi_tenant") and not decl.get("bound_to_user"):
            targets = [(e.index, (TRUE,)) for e in edges_into("tool", name)]
            q.add(f"QG020:{name}", "QG020", name, targets, store=store)
    outside = frozenset(label for found in catalogue.outside_tools.values() for label in found)
    for name, decl in sorted(tool_decls.items()):
        store = decl.get("writes_store")
        if not store or not stores.get(store, {}).get("persistent") or not outside:
            continue
        readers = [n for n, d in tool_decls.items() if d.get("reads_store") == store]
        if readers and all(catalogue.tools[r].reads_outside for r in readers):
            continue
        cube = Cube(any_label=outside)
        targets = [(e.index, (cube,)) for e in edges_into("tool", name)]
        q.add(f"QG021:{name}", "QG021", name, targets, store=store, readers=sorted(readers))

    writes = sorted(n for n, t in catalogue.tools.items() if t.is_write)
    for name in writes:
        if not own_rules(graph, name):
            cube = Cube(chooser=MODEL_CHOSEN)
            q.add(
                f"QG101:{name}",
                "QG101",
                name,
                [(e.index, (cube,)) for e in edges_into("check", name)],
            )
    for name in writes:
        tool = catalogue.tools[name]
        if tool.compensation is not None or tool.irreversible or tool.undo_none:
            continue
        first_after_other = Cube(wrote=True, not_turn_ran=frozenset({name}))
        targets = [(e.index, (first_after_other,)) for e in edges_into("tool", name)]
        after_it = Cube(turn_ran=frozenset({name}))
        later = reach.tools_after(name, turns=False) & set(writes)
        targets += [
            (e.index, (after_it,))
            for other in sorted(later - {name})
            for e in edges_into("tool", other)
        ]
        q.add(f"QG105:{name}", "QG105", name, targets)

    for name, decl in sorted(tool_decls.items()):
        if (decl.get("source") or decl.get("server")) and not decl.get("pin"):
            q.reach("tool", name, edges_into("tool", name))

    if graph.budget_run is None:
        budgeted = set(graph.budget_agents)
        for component in _sccs(graph):
            members = [nodes[i] for i in component]
            if not any(n.kind in ("model", "tool") for n in members):
                continue
            named = _cycle_name(members)
            # A loop through a counted edge or an agent with a budget is bounded: ask only about
            # the cycles that avoid both.
            inside = frozenset(component)
            free = [
                e
                for e in graph.edges
                if e.source in inside
                and e.target in inside
                and not e.turn
                and e.limit is None
                and nodes[e.source].agent not in budgeted
                and nodes[e.target].agent not in budgeted
            ]
            for loop in _sccs(graph, free):
                loop_nodes = frozenset(loop)
                if not any(nodes[i].kind in ("model", "tool") for i in loop):
                    continue
                edges = frozenset(
                    e.index for e in free if e.source in loop_nodes and e.target in loop_nodes
                )
                q.cycles.append(
                    CycleQuestion(
                        f"QG023:{named.id}:{min(loop)}",
                        f"cycle:{named.id}",
                        loop_nodes,
                        edges,
                        {"node": named.id, "agent": named.agent},
                    )
                )
    return q


def _cycle_name(members: list[Node]) -> Node:
    for kind in ("model", "tool"):
        found = [n for n in members if n.kind == kind]
        if found:
            return min(found, key=lambda n: n.index)
    return members[0]
