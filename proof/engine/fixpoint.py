"""Engine B: a fixpoint over the graph, on bit-encoded states -- the second, independent method.

The reachable states are the least solution of one equation per node: a node holds every state
some edge into it can produce from a state its source holds, each with the smallest step it can
be reached at (entries hold their first state at step 1). The solution is found by chaotic
iteration with a worklist of *nodes*: a node whose set of states grew or improved pushes the
change through its out-edges, in whatever order the worklist gives, until nothing changes -- a
Bellman-Ford-style relaxation, not a breadth-first search, so the two engines share no traversal.

States are single integers: one bit per tracked tool, turn tool and label, small fields for the
counters, the chooser, the lowest privilege, the turn. Each edge's atoms are compiled once into
masks and field tests, and each question's cubes likewise, from the same `model.Model` the search
reads -- but none of the search's code. Questions are answered after the fixpoint, by a pass over
every state and edge, taking the smallest (turn, step) a bad move happens at.

A cycle question is a greatest fixpoint: start from every state inside its nodes that can still
move, and drop, round after round, those with no move to a state still in the set; what remains
can run forever within one turn.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .model import (
    CHOOSER,
    LOWEST,
    REACHABLE,
    TURN_RAN,
    UNDECIDED,
    UNREACHABLE,
    WROTE,
    Answer,
    Model,
)

CHOOSER_CODES = {None: 0, "person": 1, "model": 2, "opaque": 3}
SETS_CHOOSER = {"router": 1, "model": 2, "opaque": 3}
ANY_CHOOSER = 0b1111


@dataclass
class FixpointResult:
    answers: list[Answer]
    cycles: list[Answer]
    states: int = 0
    relaxations: int = 0
    exhausted: bool = False


class _Layout:
    def __init__(self, model: Model) -> None:
        vocab = model.vocabulary
        offset = 0

        def bits(names):
            nonlocal offset
            out = {}
            for name in names:
                out[name] = 1 << offset
                offset += 1
            return out

        def field(limit: int) -> tuple[int, int]:
            nonlocal offset
            width = max(1, int(limit).bit_length())
            shift = offset
            offset += width
            return shift, (1 << width) - 1

        self.ran = bits(vocab.ran)
        self.turn_ran = bits(vocab.turn_ran)
        self.labels = bits(vocab.labels)
        self.counts = {}
        for tool, cap in vocab.counts:
            shift, mask = field(cap)
            self.counts[tool] = (shift, mask, cap)
        self.chooser_shift, _ = field(3)
        self.lowest_shift, _ = field(3)
        self.wrote = 1 << offset
        offset += 1
        self.turn_shift, self.turn_mask = field(model.turns + 1)
        keep = 0
        for bit in list(self.ran.values()) + list(self.labels.values()):
            keep |= bit
        for shift, mask, _ in self.counts.values():
            keep |= mask << shift
        self.keep = keep


class _Edge:
    __slots__ = (
        "index",
        "target",
        "turn",
        "need_set",
        "need_clear",
        "chooser_ok",
        "below",
        "set_chooser",
        "privilege",
        "clear",
        "put",
        "or_mask",
        "count",
        "questions",
    )


#: How many nodes the fixpoint takes from its worklist between two ticks.
TICK_EVERY = 64


class _Fixpoint:
    def __init__(
        self,
        model: Model,
        max_states: int,
        tick: Callable[[float], None] | None = None,
        expected: int | None = None,
    ) -> None:
        self.tick, self.expected = tick, expected
        self.model = model
        self.max_states = max_states
        self.layout = layout = _Layout(model)
        graph = model.graph
        self.lowest = model.vocabulary.lowest
        self.edges: list[_Edge] = []
        for edge in graph.edges:
            c = _Edge()
            c.index = edge.index
            c.target = edge.target
            c.turn = edge.turn
            c.need_set = c.need_clear = 0
            c.chooser_ok = ANY_CHOOSER
            c.below = []
            for atom in edge.when:
                kind = atom[0]
                if kind == "ran":
                    c.need_set |= layout.ran[atom[1]]
                elif kind == "not_ran":
                    c.need_clear |= layout.ran[atom[1]]
                elif kind == "no_label":
                    for label in atom[1]:
                        c.need_clear |= layout.labels[label]
                elif kind == "below":
                    shift, mask, _ = layout.counts[atom[1]]
                    c.below.append((shift, mask, atom[2]))
                elif kind == "chooser":
                    allowed = 0
                    for who in atom[1]:
                        allowed |= 1 << CHOOSER_CODES[who]
                    c.chooser_ok &= allowed
            c.set_chooser = SETS_CHOOSER.get(graph.nodes[edge.source].kind)
            c.privilege = model.privilege[edge.target] if self.lowest else None
            c.clear, c.put = self._forget(model.dead[edge.target])
            c.or_mask = 0
            c.count = None
            tool = model.tool_of[edge.target]
            if tool is not None:
                c.or_mask |= layout.ran.get(tool, 0) | layout.turn_ran.get(tool, 0)
                for label in model.labels_of.get(tool, ()):
                    c.or_mask |= layout.labels.get(label, 0)
                if model.vocabulary.wrote and tool in model.writes:
                    c.or_mask |= layout.wrote
                c.count = layout.counts.get(tool)
            c.questions = [
                (index, [self._cube(cube) for cube in cubes])
                for index, cubes in model.by_edge.get(edge.index, ())
            ]
            self.edges.append(c)
        self.out = [[self.edges[i] for i in out] for out in graph.out_edges]

    def _forget(self, dead: int) -> tuple[int, int]:
        """(bits to clear, bits to set) that put the parts dead at a node to their empty values."""
        layout = self.layout
        clear = put = 0
        if dead & CHOOSER:
            clear |= 3 << layout.chooser_shift
        if dead & WROTE:
            clear |= layout.wrote
        if dead & TURN_RAN:
            for bit in layout.turn_ran.values():
                clear |= bit
        if dead & LOWEST:
            clear |= 3 << layout.lowest_shift
            put |= 3 << layout.lowest_shift
        return clear, put

    def _cube(self, cube):
        layout = self.layout
        need_set = need_clear = 0
        for tool in cube.ran:
            need_set |= layout.ran[tool]
        for tool in cube.not_ran:
            need_clear |= layout.ran[tool]
        for tool in cube.turn_ran:
            need_set |= layout.turn_ran[tool]
        for tool in cube.not_turn_ran:
            need_clear |= layout.turn_ran[tool]
        if cube.wrote is True:
            need_set |= layout.wrote
        elif cube.wrote is False:
            need_clear |= layout.wrote
        any_mask = None
        if cube.any_label is not None:
            any_mask = 0
            for label in cube.any_label:
                any_mask |= layout.labels[label]
        chooser_ok = ANY_CHOOSER
        if cube.chooser is not None:
            chooser_ok = 0
            for who in cube.chooser:
                chooser_ok |= 1 << CHOOSER_CODES[who]
        full = None
        if cube.count_full is not None:
            shift, mask, _ = layout.counts[cube.count_full[0]]
            full = (shift, mask, cube.count_full[1])
        return need_set, need_clear, any_mask, chooser_ok, cube.lowest_below, full

    def start(self, node: int) -> int:
        layout = self.layout
        h = 1 << layout.turn_shift
        privilege = self.model.privilege[node] if self.lowest else None
        h |= (3 if privilege is None else privilege) << layout.lowest_shift
        clear, put = self._forget(self.model.dead[node])
        return (h & ~clear) | put

    def move(self, h: int, d: int, c: _Edge):
        if h & c.need_set != c.need_set or h & c.need_clear:
            return None
        layout = self.layout
        if c.chooser_ok != ANY_CHOOSER:
            if not (c.chooser_ok >> ((h >> layout.chooser_shift) & 3)) & 1:
                return None
        for shift, mask, limit in c.below:
            if (h >> shift) & mask >= limit:
                return None
        if c.turn:
            turn = (h >> layout.turn_shift) & layout.turn_mask
            if turn >= self.model.turns:
                return None
            privilege = 3 if c.privilege is None else c.privilege
            after = (h & layout.keep) | ((turn + 1) << layout.turn_shift)
            after |= privilege << layout.lowest_shift
            nd = 1
        else:
            if d + 1 > self.model.depth:
                return None
            after = h
            if c.set_chooser is not None:
                after = (after & ~(3 << layout.chooser_shift)) | (
                    c.set_chooser << layout.chooser_shift
                )
            nd = d + 1
        entered = after
        if c.privilege is not None and not c.turn:
            current = (entered >> layout.lowest_shift) & 3
            if current != 3 and c.privilege < current:
                entered = (entered & ~(3 << layout.lowest_shift)) | (
                    c.privilege << layout.lowest_shift
                )
        entered |= c.or_mask
        if c.count is not None:
            shift, mask, cap = c.count
            value = min(((entered >> shift) & mask) + 1, cap)
            entered = (entered & ~(mask << shift)) | (value << shift)
        if c.clear:
            entered = (entered & ~c.clear) | c.put
        return after, entered, nd

    def _matches(self, cube, h: int) -> bool:
        need_set, need_clear, any_mask, chooser_ok, lowest_below, full = cube
        if h & need_set != need_set or h & need_clear:
            return False
        if any_mask is not None and not h & any_mask:
            return False
        layout = self.layout
        if chooser_ok != ANY_CHOOSER and not (chooser_ok >> ((h >> layout.chooser_shift) & 3)) & 1:
            return False
        if lowest_below is not None and not ((h >> layout.lowest_shift) & 3) < lowest_below:
            return False
        if full is not None and (h >> full[0]) & full[1] < full[2]:
            return False
        return True

    def run(self) -> FixpointResult:
        graph = self.model.graph
        reached: list[dict[int, int]] = [{} for _ in graph.nodes]
        delta: list[dict[int, int]] = [{} for _ in graph.nodes]
        waiting = [False] * len(graph.nodes)
        worklist: deque[int] = deque()
        total = 0
        for entry in graph.entries:
            h = self.start(entry)
            if h not in reached[entry]:
                reached[entry][h] = 1
                delta[entry][h] = 1
                total += 1
                if not waiting[entry]:
                    waiting[entry] = True
                    worklist.append(entry)
        relaxations = 0
        exhausted = False
        tick, expected, told, popped = self.tick, max(1, self.expected or 1), 0.0, 0
        while worklist and not exhausted:
            node = worklist.popleft()
            popped += 1
            if tick is not None and popped % TICK_EVERY == 0:
                share = min(0.99, total / expected)
                if share > told:
                    told = share
                    tick(share)
            waiting[node] = False
            changes, delta[node] = delta[node], {}
            here = reached[node]
            for h, d in changes.items():
                if here.get(h) != d:
                    continue
                for c in self.out[node]:
                    moved = self.move(h, d, c)
                    if moved is None:
                        continue
                    relaxations += 1
                    _, entered, nd = moved
                    there = reached[c.target]
                    known = there.get(entered)
                    if known is None or nd < known:
                        if known is None:
                            total += 1
                        there[entered] = nd
                        delta[c.target][entered] = nd
                        if not waiting[c.target]:
                            waiting[c.target] = True
                            worklist.append(c.target)
                if total > self.max_states:
                    exhausted = True
                    break
        if exhausted:
            return FixpointResult(
                [Answer(UNDECIDED) for _ in self.model.obligations],
                [Answer(UNDECIDED) for _ in self.model.cycles],
                states=total,
                relaxations=relaxations,
                exhausted=True,
            )
        answers = self._answer(reached)
        cycles = [self._cycle(reached, q.nodes, q.edges) for q in self.model.cycles]
        return FixpointResult(answers, cycles, states=total, relaxations=relaxations)

    def _answer(self, reached: list[dict[int, int]]) -> list[Answer]:
        best: list[tuple[int, int] | None] = [None] * len(self.model.obligations)
        layout = self.layout
        for node, states in enumerate(reached):
            asking = [c for c in self.out[node] if c.questions]
            if not asking:
                continue
            for h, d in states.items():
                for c in asking:
                    moved = self.move(h, d, c)
                    if moved is None:
                        continue
                    after, _, nd = moved
                    when = ((after >> layout.turn_shift) & layout.turn_mask, nd)
                    for index, cubes in c.questions:
                        if best[index] is not None and best[index] <= when:
                            continue
                        if any(self._matches(cube, after) for cube in cubes):
                            best[index] = when
        return [
            Answer(REACHABLE, found[0], found[1]) if found else Answer(UNREACHABLE)
            for found in best
        ]

    def _cycle(
        self, reached: list[dict[int, int]], nodes: frozenset[int], edges: frozenset[int]
    ) -> Answer:
        depth = self.model.depth
        alive: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for node in nodes:
            for h, d in reached[node].items():
                if d >= depth:
                    continue
                successors = []
                for c in self.out[node]:
                    if c.index not in edges:
                        continue
                    moved = self.move(h, d, c)
                    if moved is not None and reached[c.target].get(moved[1], depth) < depth:
                        successors.append((c.target, moved[1]))
                alive[(node, h)] = successors
        changed = True
        while changed:
            changed = False
            for key in list(alive):
                if not any(s in alive for s in alive[key]):
                    del alive[key]
                    changed = True
        return Answer(REACHABLE) if alive else Answer(UNREACHABLE)


def fixpoint(
    model: Model,
    *,
    max_states: int = 500_000,
    tick: Callable[[float], None] | None = None,
    expected: int | None = None,
) -> FixpointResult:
    """Answer every question of `model` by fixpoint iteration (see the module docstring).

    `tick(share)`, when given, is told every `TICK_EVERY` nodes how far it has gone: the states it
    has met over `expected` (the search's count is a fair guess), at most 0.99 until it ends. It
    changes no answer."""
    return _Fixpoint(model, max_states, tick, expected).run()
