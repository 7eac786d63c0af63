"""The semantics both engines decide: the run, its state, and the questions (obligations).

A run starts at an entry router, turn 1, step 1. Each move follows one edge and visits one node
(one step). Within a turn the run takes at most `depth` steps (the run's step limit; a declared
run budget lowers it); an edge with `turn: true` starts the next turn at step 1, up to `turns`
turns. What the run carries -- only the parts some edge or question reads, so the state stays
small:

- `ran`: the tools that ran in the session (for `after` / `not_after`, facts, results);
- `turn_ran`: the tools that ran in this turn;
- `labels`: the labels of the outside content read in the session;
- `counts`: how many times a tool with a limit ran (capped at the largest limit read);
- `chooser`: who chose the pending call -- `person` (leaving a router), `model` (leaving a
  model), `opaque` (leaving a team's step); set when the edge leaves such a step;
- `lowest`: the lowest privilege of the agents this turn visited;
- `wrote`: whether a write ran in this turn;
- `turn`.

Counters that only bound loops -- an edge's `exit_after` / `budget`, an agent's budget -- are not
in the state: carrying them would multiply the states by every count they can take. They bound
cycles (QG023 asks only about cycles that avoid every counted edge and every agent with a
budget); for every other question the search reads them as unbounded, which can only find more
routes than the run has, never fewer. A run budget lowers the depth.

A move along edge e from node u in state h: every atom of e must hold in h; then the chooser is
set (from u's kind), giving h' -- the state every question about e is asked in -- and entering
the target lowers `lowest`, and, for a tool step, records the tool (`ran`, `turn_ran`, `counts`,
its labels, `wrote`). A turn edge keeps the session parts and resets the turn's.

Dead parts are forgotten: a part of the turn's state (the chooser, `wrote`, `turn_ran`,
`lowest`) that no route from a node reads before it is set or reset again is dead there, and a
state entering that node has it put back to its empty value -- two states that differ only in
dead parts have the same futures, so they are one state. Which parts are live at which node is a
backward fixpoint over the graph (`_liveness`), computed once; each engine applies it itself.

A question (`Obligation`) is a set of (edge, cubes): is there a run that takes one of the edges
in a state h' matching one of its cubes? Its answer is `reachable` (with the first turn and
step it happens at), `unreachable` (to the stated depth and turns) or `undecided`. A cycle
question (`CycleQuestion`) asks whether, within one turn, the run can come back to a state it was
in while moving along a set of edges: nothing then bounds it but the step limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .graphdoc import Graph

PRIVILEGE_RANK = {"low": 0, "normal": 1, "high": 2}
#: The parts of a turn's state that can be dead at a node (bits of `Model.dead`).
CHOOSER = 1
WROTE = 2
TURN_RAN = 4
LOWEST = 8
ALL_PARTS = CHOOSER | WROTE | TURN_RAN | LOWEST
#: Steps that set the chooser when the run leaves them.
SETS_CHOOSER = frozenset({"router", "model", "opaque"})
REACHABLE = "reachable"
UNREACHABLE = "unreachable"
UNDECIDED = "undecided"


@dataclass(frozen=True)
class Cube:
    """A conjunction over the state h' of a move (None / empty: no constraint)."""

    ran: frozenset[str] = frozenset()
    not_ran: frozenset[str] = frozenset()
    turn_ran: frozenset[str] = frozenset()
    not_turn_ran: frozenset[str] = frozenset()
    any_label: frozenset[str] | None = None
    chooser: frozenset[str] | None = None
    lowest_below: int | None = None
    wrote: bool | None = None
    count_full: tuple[str, int] | None = None  # (tool, limit): the tool ran `limit` times


TRUE = Cube()


@dataclass(frozen=True)
class Obligation:
    """A reachability question: some edge of `targets`, taken in a state that matches a cube."""

    key: str
    rule: str
    subject: str
    targets: tuple[tuple[int, tuple[Cube, ...]], ...]
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CycleQuestion:
    """Can a run repeat a state within one turn while moving along `edges` (inside `nodes`)?"""

    key: str
    subject: str
    nodes: frozenset[int]
    edges: frozenset[int]
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Vocabulary:
    """The parts of the state some edge or question reads, each in a fixed order."""

    ran: tuple[str, ...]
    turn_ran: tuple[str, ...]
    labels: tuple[str, ...]
    counts: tuple[tuple[str, int], ...]  # (tool, cap)
    wrote: bool
    lowest: bool


@dataclass(frozen=True)
class Model:
    """A graph with its questions and the state vocabulary, ready for either engine."""

    graph: Graph
    depth: int
    turns: int
    obligations: tuple[Obligation, ...]
    cycles: tuple[CycleQuestion, ...]
    vocabulary: Vocabulary
    privilege: tuple[int | None, ...]  # per node: its agent's privilege rank
    tool_of: tuple[str | None, ...]  # per node: the tool a `tool` node runs, else None
    labels_of: Mapping[str, tuple[str, ...]]  # tool -> labels it reads
    writes: frozenset[str]
    by_edge: Mapping[int, tuple[tuple[int, tuple[Cube, ...]], ...]]  # edge -> (obligation, cubes)
    dead: tuple[int, ...] = ()  # per node: the parts (CHOOSER, WROTE, ...) dead on entering it

    @property
    def node_count(self) -> int:
        return len(self.graph.nodes)


def _vocabulary(graph: Graph, obligations: Iterable[Obligation]) -> Vocabulary:
    ran: set[str] = set()
    turn_ran: set[str] = set()
    labels: set[str] = set()
    caps: dict[str, int] = {}
    wrote = lowest = False
    for edge in graph.edges:
        for atom in edge.when:
            if atom[0] in ("ran", "not_ran"):
                ran.add(atom[1])
            elif atom[0] == "below":
                caps[atom[1]] = max(caps.get(atom[1], 0), atom[2])
            elif atom[0] == "no_label":
                labels.update(atom[1])
    for obligation in obligations:
        for _, cubes in obligation.targets:
            for cube in cubes:
                ran |= cube.ran | cube.not_ran
                turn_ran |= cube.turn_ran | cube.not_turn_ran
                labels |= cube.any_label or frozenset()
                if cube.count_full is not None:
                    tool, limit = cube.count_full
                    caps[tool] = max(caps.get(tool, 0), limit)
                wrote = wrote or cube.wrote is not None
                lowest = lowest or cube.lowest_below is not None
    return Vocabulary(
        ran=tuple(sorted(ran)),
        turn_ran=tuple(sorted(turn_ran)),
        labels=tuple(sorted(labels)),
        counts=tuple(sorted(caps.items())),
        wrote=wrote,
        lowest=lowest,
    )


def _reads(cube: Cube) -> int:
    parts = 0
    if cube.chooser is not None:
        parts |= CHOOSER
    if cube.wrote is not None:
        parts |= WROTE
    if cube.turn_ran or cube.not_turn_ran:
        parts |= TURN_RAN
    if cube.lowest_below is not None:
        parts |= LOWEST
    return parts


def _liveness(graph: Graph, by_edge: Mapping[int, tuple[tuple[int, tuple[Cube, ...]], ...]]):
    """Per node, the parts of the turn's state some route from it reads before they are set or
    reset: the least fixpoint of live(n) = union over n's edges e of what e's atoms read, plus
    (unless e starts a turn) what e's questions read and what is live at e's target -- less the
    chooser when n sets it on leaving. Returns, per node, the parts that are dead."""
    reads_before: list[int] = []
    reads_after: list[int] = []
    for edge in graph.edges:
        before = CHOOSER if any(atom[0] == "chooser" for atom in edge.when) else 0
        after = 0
        for _, cubes in by_edge.get(edge.index, ()):
            for cube in cubes:
                after |= _reads(cube)
        reads_before.append(before)
        reads_after.append(after)
    live = [0] * len(graph.nodes)
    changed = True
    while changed:
        changed = False
        for node in graph.nodes:
            found = 0
            sets_chooser = node.kind in SETS_CHOOSER
            for index in graph.out_edges[node.index]:
                edge = graph.edges[index]
                found |= reads_before[index]
                if edge.turn:
                    continue
                carried = reads_after[index] | live[edge.target]
                if sets_chooser:
                    carried &= ~CHOOSER
                found |= carried
            if found != live[node.index]:
                live[node.index] = found
                changed = True
    return tuple(ALL_PARTS & ~parts for parts in live)


def build_model(
    graph: Graph,
    obligations: Iterable[Obligation],
    cycles: Iterable[CycleQuestion],
    *,
    depth: int,
    turns: int,
) -> Model:
    """Gather what both engines need; `depth` is lowered by a declared run budget."""
    obligations = tuple(obligations)
    catalogue = graph.catalogue
    vocabulary = _vocabulary(graph, obligations)
    privilege: list[int | None] = []
    for node in graph.nodes:
        agent = catalogue.agents.get(node.agent) if node.agent else None
        privilege.append(PRIVILEGE_RANK[agent.privilege] if agent is not None else None)
    tool_of = tuple(node.tool if node.kind == "tool" else None for node in graph.nodes)
    labels_of = {name: tuple(found) for name, found in catalogue.outside_tools.items()}
    writes = frozenset(name for name, tool in catalogue.tools.items() if tool.is_write)
    by_edge: dict[int, list[tuple[int, tuple[Cube, ...]]]] = {}
    for index, obligation in enumerate(obligations):
        for edge, cubes in obligation.targets:
            by_edge.setdefault(edge, []).append((index, cubes))
    effective = depth if graph.budget_run is None else min(depth, graph.budget_run)
    frozen_by_edge = {edge: tuple(items) for edge, items in by_edge.items()}
    return Model(
        graph=graph,
        depth=effective,
        turns=turns,
        obligations=obligations,
        cycles=tuple(cycles),
        vocabulary=vocabulary,
        privilege=tuple(privilege),
        tool_of=tool_of,
        labels_of=labels_of,
        writes=writes,
        by_edge=frozen_by_edge,
        dead=_liveness(graph, frozen_by_edge),
    )


@dataclass
class Answer:
    """One engine's answer to one question."""

    status: str
    turn: int | None = None
    step: int | None = None

    def same_as(self, other: Answer) -> bool:
        return (self.status, self.turn, self.step) == (other.status, other.turn, other.step)
