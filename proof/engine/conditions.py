"""What a rulebook condition needs before it can hold: the tools that must have answered.

The gate decides a condition over the call's arguments, the session's results and the facts. A
fact read from a tool (`facts: order_paid: {from: get_order.status == paid}`) is false until that
tool answered; a result the session does not hold makes the condition unknown, and an unknown
condition refuses. So `requires(test, holds, fact_tools)` is the set of tools that must have run
for `test` to come out as `holds` -- compositional over Kleene's logic:

- a fact from tool S must be true: S must have answered (false is the default, needs nothing);
- any read of S's result, anywhere under a comparison, an arithmetic or a call: S must have
  answered, whichever way the condition goes;
- `a and b` true needs what a and b need; false needs what both of them need to be false in
  common (either may be the false one); `or` the other way round; `not` swaps the polarity.

This over-approximates what can hold (arguments and other facts may be anything), which is the
sound side for a search that looks for bad routes.

`holds_by_default(test, holds)` evaluates a condition as the gate would with nothing reported (no
fact, no argument, no result): true means the condition lets the call through by default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rulebooks.compiler.evaluate import Env, evaluate
from rulebooks.compiler.values import truth


def _results(node: Any, into: set[str]) -> None:
    if isinstance(node, Mapping):
        if "result" in node and isinstance(node["result"], str):
            into.add(node["result"])
        for value in node.values():
            _results(value, into)
    elif isinstance(node, list):
        for value in node:
            _results(value, into)


def _facts(node: Any, into: set[str]) -> None:
    if isinstance(node, Mapping):
        if "fact" in node and isinstance(node["fact"], str):
            into.add(node["fact"])
        for value in node.values():
            _facts(value, into)
    elif isinstance(node, list):
        for value in node:
            _facts(value, into)


def facts_read(node: Any) -> set[str]:
    """Every fact a condition tree reads."""
    found: set[str] = set()
    _facts(node, found)
    return found


def results_read(node: Any) -> set[str]:
    """Every tool whose result a condition tree reads."""
    found: set[str] = set()
    _results(node, found)
    return found


def requires(node: Any, holds: bool, fact_tools: Mapping[str, str]) -> frozenset[str]:
    """The tools that must have answered for `node` to evaluate to `holds` (see module doc)."""
    if not isinstance(node, Mapping):
        return frozenset()
    if "fact" in node and set(node) == {"fact"}:
        tool = fact_tools.get(node["fact"])
        return frozenset({tool}) if holds and tool is not None else frozenset()
    op = node.get("op")
    args = node.get("args") if isinstance(node.get("args"), list) else []
    if op == "not" and len(args) == 1:
        return requires(args[0], not holds, fact_tools)
    if op in ("and", "or") and args:
        parts = [requires(arg, holds, fact_tools) for arg in args]
        conjunctive = (op == "and") == holds
        if conjunctive:
            return frozenset().union(*parts)
        common = set(parts[0])
        for part in parts[1:]:
            common &= part
        return frozenset(common)
    return frozenset(results_read(node))


def holds_by_default(node: Any, holds: bool) -> bool:
    """Whether the condition comes out as `holds` with no fact, argument or result reported."""
    try:
        value = truth(evaluate(node, Env({}, {}, [])))
    except (KeyError, TypeError, ValueError, IndexError):
        return False
    return value is holds
