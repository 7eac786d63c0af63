"""Lowering a parsed Colang file into the record: roots, variable resolution, tools and facts.

Needs: the `Parsed` form (from `colang_v1` / `colang_v2`) and the `Analyzer` (from `routes`).

Resolution is what turns a `$variable` in a condition into something the gate can read while
it decides one call. In order, for a route to a tool call:

1. an argument: the tool call passes it (`execute refund_card(amount=$amount)`) and no
   statement assigns it, so at the gate its value is the checked call's `amount`;
2. a tool result: it is assigned once, from a tool call (`$order = execute get_order(order_id=
   $order_id)`), so it reads that tool's most recent result in the session -- and when both
   calls pass the same variable, only a result for the same value counts (`same`);
3. an expression: it is assigned once, at the top of its flow, so the expression stands in;
4. unknown: anything else that assigns it (twice, in a branch, by the model, a flow parameter,
   a captured reference) -- the gate cannot know its value, so a condition on it fails closed;
5. a fact: nothing assigns it, so it is a fact reported with the check (`$order_paid`).

Assignments count in the flow that reads the variable; in Colang 1.0, whose variables live in
one context for the whole file, a variable the flow does not assign counts the assignments of
the whole file (a subflow that ran before may have set it). Colang 2.x variables are local to
their flow, so there an argument binds only conditions in the flow of the tool call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .colang_common import FlowDef, Parsed
from .expressions import depth as tree_depth
from .expressions import facts_of
from .routes import Analyzer, Guard, RouteSketch, TooComplex

#: The most variables an inlined variable may pass through before it counts as unknown.
MAX_INLINE = 8
#: The deepest tree a variable may stand for.
MAX_INLINED_DEPTH = 40


@dataclass
class Assignment:
    kind: str  # result, expr, generated, update, ref, param, flow
    flow: str
    line: int
    top: bool
    node: dict[str, Any] | None = None
    step: dict[str, Any] | None = None


def public(value: Any) -> Any:
    """A copy without the keys that start with `_` (the passes' private notes)."""
    if isinstance(value, dict):
        return {k: public(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [public(v) for v in value]
    return value


def _walk_assignments(
    steps: list[dict[str, Any]], flow: str, top: bool, into: dict[str, list[Assignment]]
) -> None:
    for step in steps:
        kind = step["step"]
        n = step["line"]
        if kind == "set":
            if step.get("generated"):
                what = "generated"
            elif step["operator"] == "=":
                what = "expr"
            else:
                what = "update"
            into.setdefault(step["variable"], []).append(
                Assignment(what, flow, n, top, node=step.get("_node"))
            )
        if "result" in step:
            what = "result" if kind == "tool" else "flow"
            into.setdefault(step["result"], []).append(Assignment(what, flow, n, top, step=step))
        if "capture" in step:
            into.setdefault(step["capture"], []).append(Assignment("ref", flow, n, top))
        if kind == "group":
            _walk_assignments(step["items"], flow, top, into)
        for branch in step.get("branches", ()):
            if "event" in branch:
                _walk_assignments([branch["event"]], flow, False, into)
            _walk_assignments(branch["steps"], flow, False, into)
        if step.get("else"):
            _walk_assignments(step["else"]["steps"], flow, False, into)
        if kind == "while":
            _walk_assignments(step["steps"], flow, False, into)


class Resolver:
    """Resolves `$variables` in condition trees (see the module docstring)."""

    def __init__(self, parsed: Parsed) -> None:
        self.global_scope = parsed.format == "colang-1.0"
        self.scopes: dict[str, dict[str, list[Assignment]]] = {}
        self.file_scope: dict[str, list[Assignment]] = {}
        self.params: dict[str, set[str]] = {}
        for flow in parsed.flows:
            scope = self.scopes.setdefault(flow.name, {})
            _walk_assignments(flow.steps, flow.name, True, scope)
            for name, assigned in scope.items():
                self.file_scope.setdefault(name, []).extend(assigned)
            self.params[flow.name] = {p["name"] for p in flow.parameters}

    def _assigned(self, name: str, flow: str) -> list[Assignment]:
        """The assignments that can give `name` its value where `flow` reads it.

        Those of the flow itself; in Colang 1.0, whose variables live in one context, when the
        flow does not assign it, those of the whole file (a subflow called before may have).
        """
        here = self.scopes.get(flow, {}).get(name, [])
        if here or not self.global_scope:
            return here
        return self.file_scope.get(name, [])

    def resolve(
        self,
        node: Any,
        flow: str,
        bindings: dict[str, str] | None,
        depth: int = 0,
    ) -> Any:
        if isinstance(node, list):
            return [self.resolve(n, flow, bindings, depth) for n in node]
        if not isinstance(node, dict):
            return node
        if "var" in node:
            return self._variable(node["var"], flow, bindings, depth)
        return {k: self.resolve(v, flow, bindings, depth) for k, v in node.items()}

    def _variable(
        self, name: str, flow: str, bindings: dict[str, str] | None, depth: int
    ) -> dict[str, Any]:
        assigned = self._assigned(name, flow)
        if bindings is not None and name in bindings and not assigned:
            return {"arg": bindings[name]}
        if len(assigned) == 1:
            a = assigned[0]
            if a.kind == "result" and a.step is not None:
                return self._result(a.step, bindings)
            if a.kind == "expr" and a.top and a.node is not None:
                if depth >= MAX_INLINE:
                    return {"unknown": name, "why": "assigned through too many variables"}
                inlined = self.resolve(a.node, a.flow, bindings, depth + 1)
                if tree_depth(inlined) > MAX_INLINED_DEPTH:
                    return {"unknown": name, "why": "assigned an expression too deep to inline"}
                return inlined
        if assigned:
            return {"unknown": name, "why": _why(assigned)}
        if name in self.params.get(flow, ()):
            return {"unknown": name, "why": "a flow parameter"}
        return {"fact": name}

    def _result(self, step: dict[str, Any], bindings: dict[str, str] | None) -> dict[str, Any]:
        same: dict[str, str] = {}
        match: dict[str, Any] = {}
        for arg, node in sorted(step.get("_args", {}).items()):
            if "var" in node and bindings is not None and node["var"] in bindings:
                same[arg] = bindings[node["var"]]
            elif "value" in node:
                match[arg] = node["value"]
        return {"result": step["tool"], "same": same, "match": match}


def _why(assigned: list[Assignment]) -> str:
    if len(assigned) > 1:
        lines = ", ".join(str(a.line) for a in assigned)
        return f"assigned more than once (lines {lines})"
    a = assigned[0]
    return {
        "generated": "written by the model",
        "update": "updated in place",
        "ref": "a captured reference",
        "flow": "returned by a flow",
        "expr": "assigned inside a branch or loop",
    }.get(a.kind, "assigned")


def roots(parsed: Parsed, analyzer: Analyzer) -> list[str]:
    """The flows a conversation can start in.

    Colang 1.0: every `define flow` (a subflow runs only when called). Colang 2.x: `main`, every
    `@active` flow and every flow no other flow of the file calls; then, so that no flow is
    left out, the first flow of any cycle that nothing else reaches.
    """
    flows = parsed.flows
    if parsed.format == "colang-1.0":
        return [f.name for f in flows if f.kind == "flow"]
    called: dict[str, set[str]] = {f.name: set() for f in flows}
    for flow in flows:
        _callees(flow.steps, analyzer, called[flow.name])
    callers = {name for targets in called.values() for name in targets}
    chosen = [
        f.name
        for f in flows
        if f.name == "main"
        or any(d["name"] == "active" for d in f.decorators)
        or f.name not in callers
    ]
    reached: set[str] = set()

    def reach(name: str) -> None:
        stack = [name]
        while stack:
            cur = stack.pop()
            if cur in reached:
                continue
            reached.add(cur)
            stack.extend(called[cur])

    for name in chosen:
        reach(name)
    for flow in flows:
        if flow.name not in reached:
            chosen.append(flow.name)
            reach(flow.name)
    return chosen


def _callees(steps: list[dict[str, Any]], analyzer: Analyzer, into: set[str]) -> None:
    for step in steps:
        target = analyzer.callee(step)
        if target is not None:
            into.add(target)
        if step["step"] == "group":
            _callees(step["items"], analyzer, into)
        for branch in step.get("branches", ()):
            if "event" in branch:
                _callees([branch["event"]], analyzer, into)
            _callees(branch["steps"], analyzer, into)
        if step.get("else"):
            _callees(step["else"]["steps"], analyzer, into)
        if step["step"] == "while":
            _callees(step["steps"], analyzer, into)


def _tool_steps(steps: list[dict[str, Any]], flow: str, into: list[tuple[str, dict]]) -> None:
    for step in steps:
        if step["step"] == "tool":
            into.append((flow, step))
        if step["step"] == "group":
            _tool_steps(step["items"], flow, into)
        for branch in step.get("branches", ()):
            if "event" in branch:
                _tool_steps([branch["event"]], flow, into)
            _tool_steps(branch["steps"], flow, into)
        if step.get("else"):
            _tool_steps(step["else"]["steps"], flow, into)
        if step["step"] == "while":
            _tool_steps(step["steps"], flow, into)


class Lowerer:
    """Builds the `tools` and `facts` of the record from the analysed flows."""

    def __init__(self, parsed: Parsed, analyzer: Analyzer, budget: int = 1_000_000) -> None:
        self.parsed = parsed
        self.budget = budget
        self.global_scope = parsed.format == "colang-1.0"
        self.analyzer = analyzer
        self.resolver = Resolver(parsed)
        self.facts: set[str] = set()
        # One condition dict per (guard, polarity, bindings): routes share them, so a long
        # chain of guards costs a reference per route, not a copy.
        self._conditions: dict[tuple[int, bool, Any], dict[str, Any]] = {}
        self._tables: dict[tuple[str, Any], dict[tuple[int, bool], dict[str, Any]]] = {}

    def bindings(self, step: dict[str, Any]) -> dict[str, str]:
        out: dict[str, str] = {}
        for arg, node in sorted(step.get("_args", {}).items()):
            if set(node) == {"var"} and node["var"] not in out:
                out[node["var"]] = arg
        return out

    def route(self, sketch: RouteSketch) -> dict[str, Any]:
        step = sketch.step
        bindings = self.bindings(step)
        arguments: dict[str, Any] = {}
        for arg, node in sorted(step.get("_args", {}).items()):
            text = step["arguments"][arg]
            if set(node) == {"var"}:
                arguments[arg] = {"binds": text}
            elif "value" in node:
                arguments[arg] = {"equals": node["value"]}
            else:
                others = {v: a for v, a in bindings.items() if a != arg}
                test = self.resolver.resolve(node, sketch.flow, others)
                self.facts.update(facts_of(test))
                arguments[arg] = {"expression": text, "test": test}
        bound = tuple(sorted(bindings.items())) if bindings else None
        # Conditions already lowered for this flow and these bindings, by literal: a long chain
        # of guards shared by many routes costs one lookup per literal.
        table = self._tables.setdefault((sketch.flow, bound), {})
        get = table.get
        conditions = [
            get(lit) or self._table_miss(table, lit, sketch, bindings, bound) for lit in sketch.term
        ]
        return {
            "flow": sketch.flow,
            "line": step["line"],
            "via": [{"flow": f, "line": n} for f, n in sketch.via],
            "form": step["form"],
            "arguments": arguments,
            "conditions": conditions,
        }

    def _table_miss(
        self,
        table: dict[tuple[int, bool], dict[str, Any]],
        lit: tuple[int, bool],
        sketch: RouteSketch,
        bindings: dict[str, str],
        bound: tuple[tuple[str, str], ...] | None,
    ) -> dict[str, Any]:
        found = table[lit] = self._condition(lit[0], lit[1], sketch, bindings, bound)
        return found

    def _condition(
        self,
        gid: int,
        holds: bool,
        sketch: RouteSketch,
        bindings: dict[str, str],
        bound: tuple[tuple[str, str], ...] | None,
    ) -> dict[str, Any]:
        guard: Guard = self.analyzer.guards[gid]
        scoped = self.global_scope or guard.flow == sketch.flow
        key = (gid, holds, bound if scoped else None)
        found = self._conditions.get(key)
        if found is None:
            found = self._conditions[key] = self._new_condition(guard, holds, scoped, bindings)
        return found

    def _new_condition(
        self, guard: Guard, holds: bool, scoped: bool, bindings: dict[str, str]
    ) -> dict[str, Any]:
        if guard.node is None:
            return {
                "kind": guard.kind,
                "flow": guard.flow,
                "line": guard.line,
                "event": guard.text,
                "holds": holds,
            }
        scope = bindings if scoped else None
        test = self.resolver.resolve(guard.node, guard.flow, scope)
        self.facts.update(facts_of(test))
        condition = {
            "kind": guard.kind,
            "flow": guard.flow,
            "line": guard.line,
            "condition": guard.text,
            "holds": holds,
            "test": test,
            "otherwise": guard.otherwise_true if holds else guard.otherwise_false,
        }
        if holds and guard.otherwise_if:
            later = []
            for gid_after, answer in guard.otherwise_if:
                after = self.analyzer.guards[gid_after]
                after_test = self.resolver.resolve(after.node, after.flow, scope)
                self.facts.update(facts_of(after_test))
                later.append(
                    {
                        "condition": after.text,
                        "line": after.line,
                        "test": after_test,
                        "otherwise": answer,
                    }
                )
            condition["otherwise_if"] = later
        return condition

    def tools(self, root_flows: list[str]) -> dict[str, dict[str, Any]]:
        tools: dict[str, dict[str, Any]] = {}
        seen: set[tuple[int, tuple, tuple]] = set()
        total = 0
        for name in root_flows:
            for sketch in self.analyzer.summary(name).routes:
                key = (id(sketch.step), sketch.via, sketch.term)
                if key in seen:
                    continue
                seen.add(key)
                total += 1 + len(sketch.term)
                if total > self.budget:
                    raise TooComplex(
                        sketch.step["line"],
                        "the flows reach their tools through too many conditions "
                        f"(more than {self.budget} in all)",
                    )
                record = self.route(sketch)
                tools.setdefault(sketch.step["tool"], {"routes": [], "rules": []})["routes"].append(
                    record
                )
        used = {gid for table in self._tables.values() for gid, _ in table}
        every: list[tuple[str, dict]] = []
        for flow in self.parsed.flows:
            _tool_steps(flow.steps, flow.name, every)
        for _flow, step in every:
            tools.setdefault(step["tool"], {"routes": [], "rules": []})
        for gid, guard in enumerate(self.analyzer.guards):
            if gid not in used and guard.node is not None:
                self.facts.update(facts_of(self.resolver.resolve(guard.node, guard.flow, None)))
        return dict(sorted(tools.items()))


def flow_record(flow: FlowDef, is_root: bool) -> dict[str, Any]:
    return {
        "name": flow.name,
        "line": flow.line,
        "kind": flow.kind,
        "root": is_root,
        "modifiers": list(flow.modifiers),
        "decorators": public(flow.decorators),
        "parameters": public(flow.parameters),
        "returns": public(flow.returns),
        "steps": public(flow.steps),
    }
