"""Routes to tools: under which conditions each flow reaches each tool call.

How it works. For every flow we compute a *summary* by walking its steps in order, keeping the
set of conditions under which control is still running, as a small formula in disjunctive
normal form: a list of *terms*, each a tuple of *literals* `(guard, holds)`. A guard is one
`if` / `else if` / `while` condition or one `when` event, numbered in `guards`.

- `if c: A else: B` sends `cur + (c, True)` into A and `cur + (c, False)` into B; after the `if`,
  control runs under the union of what leaves A and B. The union is simplified
  (`x and c or x and not c` is `x`), so `if` statements whose branches both carry on add
  nothing, while `if not $paid: bot refuse; stop` leaves `(not $paid, False)` behind: every
  later tool call needs `$paid`.
- `stop` / `abort` end every term; `return` ends the flow (its caller carries on);
  `break` leaves the loop.
- A call of another flow of the file (`do x`, or a Colang 2.x flow called by name) adds the
  callee's routes behind the call site and continues under the callee's exits, so a guard in a
  subflow guards its caller too. Summaries are memoised; a recursive call counts as a flow that
  completes and reaches nothing more.
- A tool step adds a route: (term, the step, the flow it is in, the call sites on the way).

Each guard also remembers what the flow does *otherwise* -- when the literal fails: for
`(c, True)` the first answer of the next branch (the `else`), for `(c, False)` the first answer
of the branch that `c` enters. An answer is a bot message, else a `stop` / `abort` / `return`,
else another tool call. This is what the gate gives as the reason of a refusal.

Trade-offs: the formula can grow exponentially with nested partial exits; the number of terms
at any point and of routes per flow are capped (`MAX_TERMS`, `MAX_ROUTES`), and beyond them the
rulebook is refused at the line where it happened rather than compiled slowly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .colang_common import Parsed
from .values import truth

MAX_TERMS = 64
MAX_ROUTES = 20_000

Literal = tuple[int, bool]
Term = tuple[Literal, ...]


class TooComplex(Exception):
    def __init__(self, line: int, what: str) -> None:
        super().__init__(what)
        self.line = line
        self.what = what


@dataclass
class Guard:
    flow: str
    line: int
    kind: str  # if, elif, while, when
    text: str
    node: dict[str, Any] | None
    otherwise_true: dict[str, Any] | None = None
    otherwise_false: dict[str, Any] | None = None
    #: For an `if` / `else if` with later `else if` branches: (their guard, their answer), in
    #: order -- when this guard fails, the first of them that holds says what the flow answers.
    otherwise_if: list[tuple[int, dict[str, Any] | None]] = field(default_factory=list)
    constant: Any = None  # True / False when the condition is a literal


@dataclass
class RouteSketch:
    term: Term
    step: dict[str, Any]
    flow: str
    via: tuple[tuple[str, int], ...]


@dataclass
class Result:
    exits: list[Term] = field(default_factory=lambda: [()])
    routes: list[RouteSketch] = field(default_factory=list)
    breaks: list[Term] = field(default_factory=list)
    returns: list[Term] = field(default_factory=list)


@dataclass
class Summary:
    exits: list[Term]
    routes: list[RouteSketch]


_FALSE = object()


def conj(a: Term, b: Term) -> Term | None:
    """`a and b`, or None when they contradict each other."""
    if not a:
        return b
    if not b:
        return a
    have = dict(a)
    out = list(a)
    for gid, holds in b:
        if gid in have:
            if have[gid] != holds:
                return None
            continue
        have[gid] = holds
        out.append((gid, holds))
    return tuple(out)


def product(left: list[Term], right: list[Term]) -> list[Term]:
    out: list[Term] = []
    for a in left:
        for b in right:
            t = conj(a, b)
            if t is not None:
                out.append(t)
    return out


def simplify(terms: list[Term]) -> list[Term]:
    """Remove duplicate and absorbed terms and merge `x and c` with `x and not c` into `x`."""
    if len(terms) < 2:
        return terms
    out: list[Term] = []
    seen: set[frozenset[Literal]] = set()
    for t in terms:
        key = frozenset(t)
        if key not in seen:
            seen.add(key)
            out.append(t)
    while True:
        out = _absorb(out)
        merged = _resolve_once(out)
        if merged is None:
            return out
        out = merged


def _absorb(terms: list[Term]) -> list[Term]:
    if len(terms) < 2:
        return terms
    sets = [frozenset(t) for t in terms]
    order = sorted(range(len(terms)), key=lambda i: (len(terms[i]), i))
    kept: list[int] = []
    for i in order:
        s = sets[i]
        if not any(sets[j] <= s for j in kept):
            kept.append(i)
    return [terms[i] for i in sorted(kept)]


def _term_hash(term: Term) -> int:
    h = 0
    for lit in term:
        h ^= hash(lit)
    return h


def _resolve_once(terms: list[Term]) -> list[Term] | None:
    """Merge one pair of terms that differ only in one literal's polarity, if there is one.

    Each term is hashed as the XOR of its literals' hashes, so the hash of a term with one
    literal flipped is found in O(1); candidates are then compared as sets.
    """
    if len(terms) < 2:
        return None
    by_hash: dict[int, list[int]] = {}
    hashes = [_term_hash(t) for t in terms]
    for i, h in enumerate(hashes):
        by_hash.setdefault(h, []).append(i)
    sets: dict[int, frozenset[Literal]] = {}
    for i, t in enumerate(terms):
        for lit in t:
            flipped = (lit[0], not lit[1])
            target = hashes[i] ^ hash(lit) ^ hash(flipped)
            for j in by_hash.get(target, ()):
                if j == i or len(terms[j]) != len(t):
                    continue
                si = sets.setdefault(i, frozenset(t))
                sj = sets.setdefault(j, frozenset(terms[j]))
                if si - {lit} == sj - {flipped} and flipped in sj:
                    merged = tuple(x for x in t if x != lit)
                    out = [x for k, x in enumerate(terms) if k not in (i, j)]
                    out.insert(min(i, j), merged)
                    return out
    return None


def _outcome(steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What a branch answers: its first bot message, else its first stop, else a tool call."""
    stop: dict[str, Any] | None = None
    tool: dict[str, Any] | None = None
    for step in steps:
        kind = step["step"]
        candidates = step["items"] if kind == "group" else [step]
        for item in candidates:
            if item["step"] == "bot":
                found: dict[str, Any] = {"line": item["line"]}
                if "message" in item:
                    found["bot"] = item["message"]
                if "text" in item:
                    found["text"] = item["text"]
                if "expression" in item:
                    found["text"] = item["expression"]
                return found
            if item["step"] == "tool" and tool is None:
                tool = {"tool": item["tool"], "line": item["line"]}
        if kind in ("stop", "abort", "return") and stop is None:
            stop = {kind: True, "line": step["line"]}
    return stop or tool


class Analyzer:
    """Computes the summaries of a parsed file's flows."""

    def __init__(self, parsed: Parsed) -> None:
        self.parsed = parsed
        self.flows = {flow.name: flow for flow in parsed.flows}
        self.guards: list[Guard] = []
        self._summaries: dict[str, Summary] = {}
        self._active: set[str] = set()

    # -- entry points -----------------------------------------------------------------------
    def summary(self, name: str) -> Summary:
        if name in self._summaries:
            return self._summaries[name]
        if name in self._active:
            return Summary([()], [])
        self._active.add(name)
        flow = self.flows[name]
        result = self.block(flow.steps, name)
        exits = self._check(simplify(result.exits + result.returns), flow.line)
        summary = Summary(exits, result.routes)
        self._active.discard(name)
        self._summaries[name] = summary
        return summary

    def callee(self, step: dict[str, Any]) -> str | None:
        """The flow of this file a step calls, if any."""
        if step["step"] == "call" and step.get("op") == "do":
            target = step["flow"]
        else:
            target = step.get("_calls")
        return target if target in self.flows else None

    # -- passes over steps ------------------------------------------------------------------
    def _check(self, terms: list[Term], line: int) -> list[Term]:
        if len(terms) > MAX_TERMS:
            raise TooComplex(
                line, f"the conditions before this line combine into more than {MAX_TERMS} cases"
            )
        return terms

    def _routes(self, routes: list[RouteSketch], line: int) -> list[RouteSketch]:
        if len(routes) > MAX_ROUTES:
            raise TooComplex(line, f"the flows reach tools by more than {MAX_ROUTES} routes")
        return routes

    def block(self, steps: list[dict[str, Any]], flow: str) -> Result:
        cur: list[Term] = [()]
        out = Result(exits=[])
        for step in steps:
            r = self.step(step, flow)
            line = step["line"]
            for route in r.routes:
                for t in cur:
                    joined = conj(t, route.term)
                    if joined is not None:
                        out.routes.append(RouteSketch(joined, route.step, route.flow, route.via))
            self._routes(out.routes, line)
            out.breaks.extend(product(cur, r.breaks))
            out.returns.extend(product(cur, r.returns))
            cur = self._check(simplify(product(cur, r.exits)), line)
            if not cur:
                break
        out.exits = cur
        out.breaks = self._check(simplify(out.breaks), steps[-1]["line"] if steps else 0)
        out.returns = self._check(simplify(out.returns), steps[-1]["line"] if steps else 0)
        return out

    def _literal(self, gid: int, holds: bool) -> Term | None:
        """The one-literal term, `()` when it always holds, None when it never does."""
        constant = self.guards[gid].constant
        if constant is not None:
            return () if constant == holds else None
        return ((gid, holds),)

    def _guard(self, guard: Guard) -> int:
        if guard.node is not None and "value" in guard.node:
            t = truth(guard.node["value"])
            guard.constant = t if isinstance(t, bool) else None
        self.guards.append(guard)
        return len(self.guards) - 1

    def _under(self, prefix: Term | None, r: Result, into: Result) -> None:
        if prefix is None:
            return
        for route in r.routes:
            joined = conj(prefix, route.term)
            if joined is not None:
                into.routes.append(RouteSketch(joined, route.step, route.flow, route.via))
        into.exits.extend(product([prefix], r.exits))
        into.breaks.extend(product([prefix], r.breaks))
        into.returns.extend(product([prefix], r.returns))

    def step(self, step: dict[str, Any], flow: str) -> Result:
        kind = step["step"]
        if kind == "tool":
            return Result(routes=[RouteSketch((), step, flow, ())])
        if kind == "group":
            return self._group(step, flow)
        if kind == "if":
            return self._if(step, flow)
        if kind == "when":
            return self._when(step, flow)
        if kind == "while":
            return self._while(step, flow)
        if kind in ("stop", "abort"):
            return Result(exits=[])
        if kind == "return":
            return Result(exits=[], returns=[()])
        if kind == "break":
            return Result(exits=[], breaks=[()])
        if kind == "continue":
            return Result(exits=[])
        target = self.callee(step)
        if target is not None:
            summary = self.summary(target)
            site = (flow, step["line"])
            routes = [RouteSketch(r.term, r.step, r.flow, (site, *r.via)) for r in summary.routes]
            return Result(exits=list(summary.exits), routes=routes)
        return Result()

    def _group(self, step: dict[str, Any], flow: str) -> Result:
        results = [self.step(item, flow) for item in step["items"]]
        out = Result(exits=[])
        for r in results:
            out.routes.extend(r.routes)
        if step["mode"] == "or":
            for r in results:
                out.exits.extend(r.exits)
        else:
            exits: list[Term] = [()]
            for r in results:
                exits = product(exits, r.exits)
            out.exits = exits
        out.exits = self._check(simplify(out.exits), step["line"])
        return out

    def _if(self, step: dict[str, Any], flow: str) -> Result:
        branches = step["branches"]
        otherwise = step["else"]
        bodies = [b["steps"] for b in branches] + ([otherwise["steps"]] if otherwise else [])
        outcomes = [_outcome(body) for body in bodies]
        fallback = outcomes[-1] if otherwise else None
        gids: list[int] = []
        for i, branch in enumerate(branches):
            gids.append(
                self._guard(
                    Guard(
                        flow,
                        branch["line"],
                        "if" if i == 0 else "elif",
                        branch["test"],
                        branch["_node"],
                        otherwise_true=fallback,
                        otherwise_false=outcomes[i],
                    )
                )
            )
        for i, gid in enumerate(gids):
            self.guards[gid].otherwise_if = [
                (gids[j], outcomes[j]) for j in range(i + 1, len(branches))
            ]
        out = Result(exits=[])
        before: Term | None = ()
        for i, branch in enumerate(branches):
            here = self._literal(gids[i], True)
            prefix = conj(before, here) if before is not None and here is not None else None
            if prefix is not None:
                self._under(prefix, self.block(branch["steps"], flow), out)
            skip = self._literal(gids[i], False)
            before = conj(before, skip) if before is not None and skip is not None else None
        if otherwise is not None:
            if before is not None:
                self._under(before, self.block(otherwise["steps"], flow), out)
        elif before is not None:
            out.exits.append(before)
        out.exits = self._check(simplify(out.exits), step["line"])
        return out

    def _when(self, step: dict[str, Any], flow: str) -> Result:
        out = Result(exits=[])
        gids: list[int] = []
        for branch in step["branches"]:
            head = self.step(branch["event"], flow)
            out.routes.extend(head.routes)
            gids.append(self._guard(Guard(flow, branch["line"], "when", branch["text"], None)))
        for gid, branch in zip(gids, step["branches"], strict=True):
            self._under(((gid, True),), self.block(branch["steps"], flow), out)
        otherwise = step["else"]
        if otherwise is not None:
            prefix: Term = tuple((gid, False) for gid in gids)
            self._under(prefix, self.block(otherwise["steps"], flow), out)
        out.exits = self._check(simplify(out.exits), step["line"])
        return out

    def _while(self, step: dict[str, Any], flow: str) -> Result:
        gid = self._guard(
            Guard(
                flow,
                step["line"],
                "while",
                step["test"],
                step["_node"],
                otherwise_false=_outcome(step["steps"]),
            )
        )
        out = Result(exits=[])
        enter = self._literal(gid, True)
        leave = self._literal(gid, False)
        body = self.block(step["steps"], flow) if enter is not None else Result(exits=[])
        if enter is not None:
            for route in body.routes:
                joined = conj(enter, route.term)
                if joined is not None:
                    out.routes.append(RouteSketch(joined, route.step, route.flow, route.via))
            out.returns.extend(product([enter], body.returns))
            out.exits.extend(product([enter], body.breaks))
        if leave is not None:
            out.exits.append(leave)
        out.exits = self._check(simplify(out.exits), step["line"])
        return out
