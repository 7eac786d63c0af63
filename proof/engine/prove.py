"""Proving a graph: ask every question, answer it with both engines, compare, keep witnesses.

`prove(graph, depth=60, turns=3)` takes a `qls-graph/1` document (validated here) or a loaded
`Graph`, and returns a `ProofResult`: for each question its answer, with the witness path the
explicit-state search found (every step mapped to the file and line it came from); the cycle
answers; the steps reached only beyond the bounds; and every disagreement between the search and
the fixpoint (a disagreement is itself a finding, QG312).

The final answer of a question is the search's when it decided it, else the fixpoint's, else
`undecided`; a question either engine finds reachable is reported reachable (a finding is never
dropped because the other engine missed it).

Results are cached by the graph's digest with the depth, the turns and the state budget
(`ProofCache`): `Agent(..., verify=True)` proves a rebuilt, identical graph once.

`progress`, when given, is called as `progress(answered, total)` while the questions are decided:
`total` counts every question twice (once per engine) in `PROGRESS_STEPS` parts each; `answered`
grows while each engine goes (the engines' own estimate of how far they are: the search's turns
and queue, the fixpoint's states over the search's), is half the total when the search ends and
the total when the fixpoint does (a cached result answers at once). It is told, never asked: it
changes no result.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .atoms import describe
from .errors import ProofError
from .fixpoint import FixpointResult, fixpoint
from .graphdoc import Graph, load_graph
from .model import REACHABLE, UNDECIDED, Answer, Model, build_model
from .questions import Questions, ask
from .search import SearchResult, search

#: The framework's recursion limit: a run's step limit when agent.yaml declares no `budget.run`.
RECURSION_LIMIT = 60
DEFAULT_DEPTH = RECURSION_LIMIT
DEFAULT_TURNS = 3
DEFAULT_MAX_STATES = 500_000
#: The version of the prover's semantics; part of every cache key.
PROVER_VERSION = "1"

#: The parts each question's answer by one engine is counted in, so the bar can move within one.
PROGRESS_STEPS = 100
#: `progress(answered, total)`: how many of the questions' answers (two per question) are in.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class WitnessStep:
    """One step of a witness: the node, the edge into it, and where both were written."""

    node: str
    kind: str
    agent: str | None
    tool: str | None
    on: str | None
    turn: int | None
    step: int | None
    at: str | None
    edge_at: str | None = None
    conditions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "kind": self.kind,
            "agent": self.agent,
            "tool": self.tool,
            "on": self.on,
            "turn": self.turn,
            "step": self.step,
            "at": self.at,
            "edge_at": self.edge_at,
            "conditions": list(self.conditions),
        }


@dataclass(frozen=True)
class Disagreement:
    key: str
    rule: str
    subject: str
    search: Answer
    fixpoint: Answer


@dataclass
class ProofResult:
    graph: Graph
    model: Model
    questions: Questions
    answers: list[Answer]
    cycle_answers: list[Answer]
    witnesses: dict[int, list[WitnessStep]]
    cycle_witnesses: dict[int, list[WitnessStep]]
    disagreements: list[Disagreement]
    cut: list[str]
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def depth(self) -> int:
        return self.model.depth

    @property
    def turns(self) -> int:
        return self.model.turns

    def answer(self, key: str) -> Answer | None:
        index = self.questions.keys.get(key)
        return self.answers[index] if index is not None else None

    def witness(self, key: str) -> list[WitnessStep]:
        index = self.questions.keys.get(key)
        return self.witnesses.get(index, []) if index is not None else []

    def counts(self) -> dict[str, int]:
        out = {"reachable": 0, "unreachable": 0, "undecided": 0}
        for answer in [*self.answers, *self.cycle_answers]:
            out[answer.status] += 1
        return out


def _first(locations) -> str | None:
    return str(locations[0]) if locations else None


def _steps(graph: Graph, path) -> list[WitnessStep]:
    """Witness steps from the search's (state, edge into it) pairs; the last pair of a
    question's witness has no state (the move it asks about), only its edge."""
    out: list[WitnessStep] = []
    for state, edge_index in path:
        edge = graph.edges[edge_index] if edge_index is not None else None
        node_index = state.node if state is not None else edge.target
        node = graph.nodes[node_index]
        out.append(
            WitnessStep(
                node=node.id,
                kind=node.kind,
                agent=node.agent,
                tool=node.tool,
                on=edge.on if edge is not None else None,
                turn=state.turn if state is not None else None,
                step=None,
                at=_first(node.at),
                edge_at=_first(edge.at) if edge is not None else None,
                conditions=tuple(describe(a) for a in edge.when) if edge is not None else (),
            )
        )
    # number the steps within each turn
    numbered: list[WitnessStep] = []
    turn, step = None, 0
    for (_state, edge_index), item in zip(path, out, strict=True):
        current = item.turn
        if current is None:  # the move a question asks about: in the turn its edge leads to
            starts_turn = edge_index is not None and graph.edges[edge_index].turn
            current = (turn or 0) + 1 if starts_turn else turn
        if current != turn:
            turn, step = current, 0
        step += 1
        numbered.append(WitnessStep(**{**item.__dict__, "turn": current, "step": step}))
    return numbered


def _prove(
    graph: Graph, depth: int, turns: int, max_states: int, progress: Progress | None = None
) -> ProofResult:
    questions = ask(graph)
    model = build_model(graph, questions.obligations, questions.cycles, depth=depth, turns=turns)
    asked = len(model.obligations) + len(model.cycles)
    total = 2 * asked * PROGRESS_STEPS
    told = [0]

    def tell(done: int) -> None:
        if progress is not None and (done > told[0] or done in (0, total)):
            told[0] = done
            progress(done, total)

    tell(0)
    found: SearchResult = search(
        model, max_states=max_states, tick=lambda share: tell(int(total / 2 * share))
    )
    tell(total // 2)
    fixed: FixpointResult = fixpoint(
        model,
        max_states=max_states,
        tick=lambda share: tell(total // 2 + int(total / 2 * share)),
        expected=found.states,
    )
    tell(total)
    answers: list[Answer] = []
    disagreements: list[Disagreement] = []
    for index, obligation in enumerate(model.obligations):
        a, b = found.answers[index], fixed.answers[index]
        if UNDECIDED not in (a.status, b.status) and not a.same_as(b):
            disagreements.append(
                Disagreement(obligation.key, obligation.rule, obligation.subject, a, b)
            )
        if a.status == REACHABLE or (a.status == UNDECIDED and b.status != UNDECIDED):
            answers.append(a if a.status == REACHABLE else b)
        elif b.status == REACHABLE:
            answers.append(b)
        else:
            answers.append(a)
    cycle_answers: list[Answer] = []
    for index, question in enumerate(model.cycles):
        a, b = found.cycles[index], fixed.cycles[index]
        if UNDECIDED not in (a.status, b.status) and a.status != b.status:
            disagreements.append(Disagreement(question.key, "QG023", question.subject, a, b))
        if a.status == REACHABLE or b.status == REACHABLE:
            cycle_answers.append(a if a.status == REACHABLE else b)
        elif a.status == UNDECIDED:
            cycle_answers.append(b)
        else:
            cycle_answers.append(a)
    witnesses = {i: _steps(graph, path) for i, path in found.witnesses.items()}
    cycle_witnesses = {
        i: _steps(graph, path + loop) for i, (path, loop) in found.cycle_witnesses.items()
    }
    stats = {
        "search": {
            "states": found.states,
            "moves": found.moves,
            "exhausted": found.exhausted,
        },
        "fixpoint": {
            "states": fixed.states,
            "relaxations": fixed.relaxations,
            "exhausted": fixed.exhausted,
        },
        "max_states": max_states,
    }
    return ProofResult(
        graph=graph,
        model=model,
        questions=questions,
        answers=answers,
        cycle_answers=cycle_answers,
        witnesses=witnesses,
        cycle_witnesses=cycle_witnesses,
        disagreements=disagreements,
        cut=sorted(graph.nodes[i].id for i in found.cut),
        stats=stats,
    )


class ProofCache:
    """Proof results by (graph digest, depth, turns, state budget), least recently used out."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._items: OrderedDict[tuple[Any, ...], ProofResult] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[Any, ...]) -> ProofResult | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return found

    def put(self, key: tuple[Any, ...], result: ProofResult) -> None:
        with self._lock:
            self._items[key] = result
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0


DEFAULT_CACHE = ProofCache()


def prove(
    graph: Graph | Mapping[str, Any],
    *,
    depth: int = DEFAULT_DEPTH,
    turns: int = DEFAULT_TURNS,
    max_states: int = DEFAULT_MAX_STATES,
    cache: ProofCache | None = DEFAULT_CACHE,
    progress: Progress | None = None,
) -> ProofResult:
    """Prove a graph (a document, validated here, or a loaded `Graph`); see the module docstring."""
    if min(depth, turns, max_states) < 1:
        raise ProofError("the depth, the turns and the state budget must each be 1 or more")
    loaded = graph if isinstance(graph, Graph) else load_graph(graph)
    key = (loaded.digest, depth, turns, max_states, PROVER_VERSION)
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            if progress is not None:
                done = 2 * (len(hit.model.obligations) + len(hit.model.cycles)) * PROGRESS_STEPS
                progress(done, done)
            return hit
    result = _prove(loaded, depth, turns, max_states, progress)
    if cache is not None:
        cache.put(key, result)
    return result
