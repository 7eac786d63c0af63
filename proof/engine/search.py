"""Engine A: an explicit-state breadth-first search, the plain reference of the two engines.

It walks the runs of `model.Model` turn by turn: all the states a turn can start in, then a
breadth-first search within the turn, so every state is first met at its smallest step. A state is
a named tuple of frozensets and small tuples, and every edge condition is read from its atom as
written -- nothing is compiled, so this engine is slow and easy to check by eye. It records, for
each state, the move that first reached it, so a reachable question comes with a witness: the
path of nodes and edges from the entry.

It also answers the cycle questions: once every state is known, Tarjan's algorithm on the moves
that stay within one turn and inside the question's nodes finds a state the run can come back
to. And it notes the steps a route reaches only beyond the depth or the turns (the cut region).

A search that meets more than `max_states` states stops: what it found is still true (each has a
witness), every other question is `undecided`.

`tick(share)`, when given, is told how far the search has gone, from 0 to 1, every `TICK_EVERY`
states it takes from its queue: the turns done, plus within a turn the states taken over those
taken and still queued (an estimate that never goes back). It changes no answer.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from .model import (
    CHOOSER,
    LOWEST,
    REACHABLE,
    TURN_RAN,
    UNDECIDED,
    UNREACHABLE,
    WROTE,
    Answer,
    Cube,
    Model,
)


class State(NamedTuple):
    node: int
    ran: frozenset
    turn_ran: frozenset
    labels: frozenset
    counts: tuple
    chooser: str | None
    lowest: int | None
    wrote: bool
    turn: int


Step = tuple[State, int | None]  # a state, and the edge that led to it (None at an entry)
_new = tuple.__new__  # builds a State from its fields without the keyword-argument machinery


@dataclass
class SearchResult:
    answers: list[Answer]
    witnesses: dict[int, list[Step]]
    cycles: list[Answer]
    cycle_witnesses: dict[int, tuple[list[Step], list[Step]]]
    cut: set[int] = field(default_factory=set)
    states: int = 0
    moves: int = 0
    exhausted: bool = False


#: How many states the search takes from its queue between two ticks.
TICK_EVERY = 256


class _Search:
    def __init__(
        self, model: Model, max_states: int, tick: Callable[[float], None] | None = None
    ) -> None:
        self.tick = tick
        self.model = model
        self.graph = model.graph
        self.max_states = max_states
        vocab = model.vocabulary
        self.ran_tracked = frozenset(vocab.ran)
        self.turn_tracked = frozenset(vocab.turn_ran)
        self.labels_tracked = frozenset(vocab.labels)
        self.count_pos = {tool: i for i, (tool, _) in enumerate(vocab.counts)}
        self.count_cap = [cap for _, cap in vocab.counts]
        chooser_of = {"router": "person", "model": "model", "opaque": "opaque"}
        self.sets_chooser = [chooser_of.get(node.kind) for node in self.graph.nodes]
        self.effects = [self._effect(index) for index in range(len(self.graph.nodes))]
        self.dist: dict[State, int] = {}
        self.parent: dict[State, tuple[State, int] | None] = {}
        self.reached_nodes: set[int] = set()
        self.cut: set[int] = set()
        self.moves = 0
        self.answers = [Answer(UNREACHABLE) for _ in model.obligations]
        # The moves along edges some cycle question asks about, kept as they are found so the
        # cycle search does not take them again.
        self.cycle_edges = frozenset().union(*(q.edges for q in model.cycles))
        self.state_moves: dict[State, list[tuple[State, int]]] = {}
        self._by_node: dict[int, list[State]] | None = None
        self.hits: dict[int, tuple[State, int]] = {}

    # -- the state ----------------------------------------------------------------------------
    def initial(self, node: int) -> State:
        lowest = self.model.privilege[node] if self.model.vocabulary.lowest else None
        start = State(
            node,
            frozenset(),
            frozenset(),
            frozenset(),
            (0,) * len(self.count_cap),
            None,
            lowest,
            False,
            1,
        )
        return self.forget(start, self.model.dead[node])

    @staticmethod
    def forget(state: State, dead: int) -> State:
        """The state with the parts dead at its node put back to their empty values."""
        if not dead:
            return state
        return _new(
            State,
            (
                state.node,
                state.ran,
                frozenset() if dead & TURN_RAN else state.turn_ran,
                state.labels,
                state.counts,
                None if dead & CHOOSER else state.chooser,
                None if dead & LOWEST else state.lowest,
                False if dead & WROTE else state.wrote,
                state.turn,
            ),
        )

    def holds(self, atom: tuple, state: State) -> bool:
        kind = atom[0]
        if kind == "ran":
            return atom[1] in state.ran
        if kind == "not_ran":
            return atom[1] not in state.ran
        if kind == "below":
            return state.counts[self.count_pos[atom[1]]] < atom[2]
        if kind == "no_label":
            return not (set(atom[1]) & state.labels)
        if kind == "chooser":
            return state.chooser in atom[1]
        raise ValueError(f"unknown atom `{kind}`")

    def matches(self, cube: Cube, state: State) -> bool:
        if not cube.ran <= state.ran or cube.not_ran & state.ran:
            return False
        if not cube.turn_ran <= state.turn_ran or cube.not_turn_ran & state.turn_ran:
            return False
        if cube.any_label is not None and not (cube.any_label & state.labels):
            return False
        if cube.chooser is not None and state.chooser not in cube.chooser:
            return False
        if cube.lowest_below is not None and not (
            state.lowest is not None and state.lowest < cube.lowest_below
        ):
            return False
        if cube.wrote is not None and state.wrote != cube.wrote:
            return False
        if cube.count_full is not None:
            tool, limit = cube.count_full
            if state.counts[self.count_pos[tool]] < limit:
                return False
        return True

    def _effect(self, node: int):
        """What entering a tool step records: (ran, turn_ran, labels, count slot, wrote)."""
        tool = self.model.tool_of[node]
        if tool is None:
            return None
        labels = frozenset(self.model.labels_of.get(tool, ())) & self.labels_tracked
        return (
            frozenset({tool}) & self.ran_tracked,
            frozenset({tool}) & self.turn_tracked,
            labels,
            self.count_pos.get(tool),
            self.model.vocabulary.wrote and tool in self.model.writes,
        )

    def move(self, state: State, dist: int, edge_index: int):
        """(h', next state, next step) for taking the edge, or None; notes a cut region."""
        edge = self.graph.edges[edge_index]
        for atom in edge.when:
            if not self.holds(atom, state):
                return None
        if edge.turn:
            if state.turn >= self.model.turns:
                self.cut.add(edge.target)
                return None
            after = State(
                edge.target,
                state.ran,
                frozenset(),
                state.labels,
                state.counts,
                None,
                self.model.privilege[edge.target] if self.model.vocabulary.lowest else None,
                False,
                state.turn + 1,
            )
            next_dist = 1
        else:
            if dist + 1 > self.model.depth:
                self.cut.add(edge.target)
                return None
            chooser = self.sets_chooser[edge.source] or state.chooser
            after = _new(
                State,
                (
                    edge.target,
                    state.ran,
                    state.turn_ran,
                    state.labels,
                    state.counts,
                    chooser,
                    state.lowest,
                    state.wrote,
                    state.turn,
                ),
            )
            next_dist = dist + 1
        lowest = after.lowest
        privilege = self.model.privilege[edge.target]
        if lowest is not None and privilege is not None and privilege < lowest:
            lowest = privilege
        effect = self.effects[edge.target]
        dead = self.model.dead[edge.target]
        if effect is None:
            entered = (
                after if lowest == after.lowest else _new(State, (*after[:6], lowest, *after[7:]))
            )
            return after, self.forget(entered, dead), next_dist
        ran, turn_ran, labels, slot, writes = effect
        counts = after.counts
        if slot is not None:
            counted = list(counts)
            counted[slot] = min(counted[slot] + 1, self.count_cap[slot])
            counts = tuple(counted)
        entered = _new(
            State,
            (
                edge.target,
                after.ran | ran if ran else after.ran,
                after.turn_ran | turn_ran if turn_ran else after.turn_ran,
                after.labels | labels if labels else after.labels,
                counts,
                after.chooser,
                lowest,
                after.wrote or writes,
                after.turn,
            ),
        )
        return after, self.forget(entered, dead), next_dist

    # -- the walk -----------------------------------------------------------------------------
    def ask(self, state: State, edge_index: int, after: State, next_dist: int) -> None:
        found = (after.turn, next_dist)
        for index, cubes in self.model.by_edge.get(edge_index, ()):
            answer = self.answers[index]
            if answer.status == REACHABLE and found >= (answer.turn, answer.step):
                continue  # a witness at least as early is already known
            if any(self.matches(cube, after) for cube in cubes):
                self.answers[index] = Answer(REACHABLE, *found)
                self.hits[index] = (state, edge_index)

    def run(self) -> SearchResult:
        seeds: dict[int, list[State]] = {1: []}
        for entry in self.graph.entries:
            start = self.initial(entry)
            if start not in self.dist:
                self.dist[start] = 1
                self.parent[start] = None
                seeds[1].append(start)
        exhausted = False
        known, parent, out_edges = self.dist, self.parent, self.graph.out_edges
        move, asks, asked = self.move, self.ask, self.model.by_edge
        cycle_edges, state_moves = self.cycle_edges, self.state_moves
        turn_edges = {edge.index for edge in self.graph.edges if edge.turn}
        tick, turns, told = self.tick, self.model.turns, 0.0
        for turn in range(1, self.model.turns + 1):
            queue = deque(seeds.get(turn, ()))
            popped = 0
            while queue and not exhausted:
                state = queue.popleft()
                popped += 1
                if tick is not None and popped % TICK_EVERY == 0:
                    share = (turn - 1 + popped / (popped + len(queue))) / turns
                    if share > told:
                        told = share
                        tick(share)
                self.reached_nodes.add(state.node)
                dist = known[state]
                for edge_index in out_edges[state.node]:
                    taken = move(state, dist, edge_index)
                    if taken is None:
                        continue
                    self.moves += 1
                    after, entered, next_dist = taken
                    if edge_index in asked:
                        asks(state, edge_index, after, next_dist)
                    if edge_index in cycle_edges:
                        state_moves.setdefault(state, []).append((entered, edge_index))
                    if entered in known:
                        continue
                    known[entered] = next_dist
                    parent[entered] = (state, edge_index)
                    if edge_index in turn_edges:
                        seeds.setdefault(turn + 1, []).append(entered)
                    else:
                        queue.append(entered)
                    if len(known) > self.max_states:
                        exhausted = True
                        break
            if exhausted:
                break
        if exhausted:
            for index, answer in enumerate(self.answers):
                if answer.status != REACHABLE:
                    self.answers[index] = Answer(UNDECIDED)
        witnesses = {
            index: self.path(state) + [(None, edge)] for index, (state, edge) in self.hits.items()
        }
        cycles, cycle_witnesses = self.cycles(exhausted)
        return SearchResult(
            answers=self.answers,
            witnesses=witnesses,
            cycles=cycles,
            cycle_witnesses=cycle_witnesses,
            cut=self.cut - self.reached_nodes if not exhausted else set(),
            states=len(self.dist),
            moves=self.moves,
            exhausted=exhausted,
        )

    def path(self, state: State) -> list[Step]:
        steps: list[Step] = []
        current: State | None = state
        while current is not None:
            link = self.parent[current]
            steps.append((current, link[1] if link else None))
            current = link[0] if link else None
        steps.reverse()
        return steps

    # -- cycles -------------------------------------------------------------------------------
    def cycles(self, exhausted: bool):
        answers: list[Answer] = []
        witnesses: dict[int, tuple[list[Step], list[Step]]] = {}
        for index, question in enumerate(self.model.cycles):
            if exhausted:
                answers.append(Answer(UNDECIDED))
                continue
            found = self._cycle_in(question.nodes, question.edges)
            if found is None:
                answers.append(Answer(UNREACHABLE))
                continue
            first, loop = found
            answers.append(Answer(REACHABLE, first.turn, self.dist[first]))
            witnesses[index] = (self.path(first), loop)
        return answers, witnesses

    def _successors(self, state: State, edges: frozenset[int]) -> list[tuple[State, int]]:
        return [(nxt, e) for nxt, e in self.state_moves.get(state, ()) if e in edges]

    def _cycle_in(self, nodes: frozenset[int], edges: frozenset[int]):
        """The earliest state on a cycle along `edges` inside `nodes`, and one loop through it;
        or None."""
        if self._by_node is None:
            self._by_node = {}
            for s in self.dist:
                self._by_node.setdefault(s.node, []).append(s)
        depth = self.model.depth
        inside = [s for n in nodes for s in self._by_node.get(n, ()) if self.dist[s] < depth]
        inside.sort(key=lambda s: (s.turn, self.dist[s]))
        index: dict[State, int] = {}
        low: dict[State, int] = {}
        on_stack: set[State] = set()
        stack: list[State] = []
        on_cycle: set[State] = set()
        counter = 0
        succ_cache: dict[State, list[tuple[State, int]]] = {}

        def successors(s: State) -> list[tuple[State, int]]:
            if s not in succ_cache:
                succ_cache[s] = [
                    (t, e) for t, e in self._successors(s, edges) if self.dist[t] < self.model.depth
                ]
            return succ_cache[s]

        for root in inside:
            if root in index:
                continue
            work = [(root, 0)]
            index[root] = low[root] = counter
            counter += 1
            stack.append(root)
            on_stack.add(root)
            while work:
                node, position = work[-1]
                succ = successors(node)
                if position < len(succ):
                    work[-1] = (node, position + 1)
                    nxt = succ[position][0]
                    if nxt not in index:
                        index[nxt] = low[nxt] = counter
                        counter += 1
                        stack.append(nxt)
                        on_stack.add(nxt)
                        work.append((nxt, 0))
                    elif nxt in on_stack:
                        low[node] = min(low[node], index[nxt])
                    continue
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    looped = len(component) > 1 or any(t == node for t, _ in successors(node))
                    if looped:
                        on_cycle.update(component)
        if not on_cycle:
            return None
        first = min(on_cycle, key=lambda s: (s.turn, self.dist[s], index[s]))
        return first, self._loop(first, on_cycle, successors)

    @staticmethod
    def _loop(first: State, members: set[State], successors) -> list[Step]:
        """A path from `first` back to itself within its component: each step is a state and
        the edge that led to it, the last one `first` again."""
        previous: dict[State, tuple[State, int]] = {}
        queue = deque([first])
        seen = {first}
        while queue:
            state = queue.popleft()
            for nxt, edge in successors(state):
                if nxt not in members:
                    continue
                if nxt == first:
                    steps: list[Step] = [(first, edge)]
                    cursor = state
                    while cursor != first:
                        back, via = previous[cursor]
                        steps.append((cursor, via))
                        cursor = back
                    steps.reverse()
                    return steps
                if nxt not in seen:
                    seen.add(nxt)
                    previous[nxt] = (state, edge)
                    queue.append(nxt)
        return []


def search(
    model: Model, *, max_states: int = 500_000, tick: Callable[[float], None] | None = None
) -> SearchResult:
    """Answer every question of `model` by explicit-state search (see the module docstring)."""
    return _Search(model, max_states, tick).run()
