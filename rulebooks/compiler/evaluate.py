"""Evaluating condition trees: a fast closure compiler and a plain reference interpreter.

`compile_node` turns a tree into nested Python closures once (when the gate first sees a
record), so deciding a call is a few function calls, with no parsing and no dictionary walking.
`evaluate` interprets the same tree directly; it is slow, obvious, and the property tests check
that both give the same answer on random inputs (two engines, one answer).

Both read the call through an `Env`: the call's arguments, the facts, and the session's earlier
tool results (oldest first). A result read `{"result": tool, "same": {...}, "match": {...}}` is
the most recent result of `tool` whose call had, for each `same` pair, the same value as the
checked call's argument, and for each `match` pair, that literal value.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import values as v
from .values import UNKNOWN

Evaluator = Callable[["Env"], Any]


_PLAIN = (str, int)


_MISSING = object()


def latest_result(
    results: Sequence[Any],
    tool: str,
    same: Mapping[str, str],
    match: Mapping[str, Any],
    arguments: Mapping[str, Any],
) -> Any:
    """The most recent matching result of `tool`, or UNKNOWN when it has not answered."""
    wanted: list[tuple[str, Any]] = []
    for res_arg, call_arg in same.items():
        if call_arg not in arguments:
            return UNKNOWN  # the checked call lacks the argument, so no result is for it
        wanted.append((res_arg, arguments[call_arg]))
    wanted.extend(match.items())
    missing = _MISSING
    plain = _PLAIN
    equals = v.equals
    if len(wanted) == 1 and type(wanted[0][1]) in plain:
        # The common case: one bound argument of a plain type (`same: order_id`).
        (key, want), kind = wanted[0], type(wanted[0][1])
        for entry in reversed(results):
            if type(entry) is not dict and not isinstance(entry, Mapping):
                continue
            if entry.get("tool") != tool:
                continue
            called = entry.get("arguments")
            got = called.get(key, missing) if isinstance(called, Mapping) else missing
            if got is missing:
                continue
            if got == want if type(got) is kind else equals(got, want):
                return entry["result"] if "result" in entry else UNKNOWN
        return UNKNOWN
    for entry in reversed(results):
        if type(entry) is not dict and not isinstance(entry, Mapping):
            continue
        if entry.get("tool") != tool:
            continue
        called = entry.get("arguments")
        if type(called) is not dict and not isinstance(called, Mapping):
            called = {}
        for key, want in wanted:
            got = called.get(key, missing)
            if got is missing:
                break
            kind = type(got)
            if kind is type(want) and kind in plain:
                if got != want:
                    break
            elif not equals(got, want):
                break
        else:
            return entry["result"] if "result" in entry else UNKNOWN
    return UNKNOWN


class Env:
    """What a condition reads while one call is decided."""

    __slots__ = ("arguments", "facts", "results", "_cache")

    def __init__(
        self,
        arguments: Mapping[str, Any],
        facts: Mapping[str, Any],
        results: Sequence[Any] = (),
    ) -> None:
        self.arguments = (
            arguments if type(arguments) is dict or isinstance(arguments, Mapping) else {}
        )
        self.facts = facts if type(facts) is dict or isinstance(facts, Mapping) else {}
        kind = type(results)
        if kind is list or kind is tuple:
            self.results = results
        elif isinstance(results, Sequence) and not isinstance(results, str | bytes):
            self.results = list(results)
        else:
            self.results = ()  # not a sequence of results: no result can be read (fail closed)
        self._cache: dict[Any, Any] | None = None


# -- the fast evaluator ---------------------------------------------------------------------


def compile_node(node: Any) -> Evaluator:
    """A closure computing `node`; raises ValueError for a tree this module does not know."""
    if not isinstance(node, Mapping):
        raise ValueError("a condition node must be an object")
    if "value" in node:
        value = node["value"]
        return lambda env: value
    if "fact" in node:
        name = node["fact"]
        fact_value = v.fact_value

        def fact(env: Env) -> Any:
            found = env.facts.get(name, False)
            return found if found is True or found is False else fact_value(found)

        return fact
    if "arg" in node:
        name = node["arg"]
        return lambda env: env.arguments.get(name, UNKNOWN)
    if "result" in node:
        tool = node["result"]
        same = dict(node.get("same") or {})
        match = dict(node.get("match") or {})
        key = (tool, json.dumps(same, sort_keys=True), json.dumps(match, sort_keys=True))
        missing = _MISSING
        if len(same) == 1 and not match:
            return _one_bound_result(key, tool, *next(iter(same.items())))

        def result(env: Env) -> Any:
            cache = env._cache
            if cache is None:
                cache = env._cache = {}
            else:
                found = cache.get(key, missing)
                if found is not missing:
                    return found
            found = latest_result(env.results, tool, same, match, env.arguments)
            cache[key] = found
            return found

        return result
    if "unknown" in node or "var" in node:
        return lambda env: UNKNOWN
    if "get" in node:
        base_node, key_literal = node["get"]
        base = compile_node(base_node)
        get = v.get
        if isinstance(key_literal, Mapping) and set(key_literal) == {"value"}:
            field = key_literal["value"]
            if type(field) is str:

                def get_field(env: Env) -> Any:
                    found = base(env)
                    if type(found) is dict:
                        return found.get(field, UNKNOWN)
                    return get(found, field)

                return get_field
        key_node = compile_node(key_literal)
        return lambda env: get(base(env), key_node(env))
    if "list" in node:
        items = [compile_node(n) for n in node["list"]]
        return lambda env: v.freeze([item(env) for item in items])
    if "dict" in node:
        pairs = [(compile_node(k), compile_node(x)) for k, x in node["dict"]]

        def build(env: Env) -> Any:
            out = {}
            for key_fn, value_fn in pairs:
                key, value = key_fn(env), value_fn(env)
                if key is UNKNOWN or value is UNKNOWN or not isinstance(key, str | int | float):
                    return UNKNOWN
                out[key] = value
            return out

        return build
    if "call" in node:
        name = node["call"]
        args = [compile_node(n) for n in node["args"]]
        call = v.call
        return lambda env: call(name, [a(env) for a in args])
    if "method" in node:
        name = node["method"]
        args = [compile_node(n) for n in node["args"]]
        method = v.method
        return lambda env: method(name, [a(env) for a in args])
    if "op" in node:
        return _compile_op(node["op"], [compile_node(n) for n in node["args"]], node["args"])
    raise ValueError(f"unknown condition node with keys {sorted(node)}")


_ORDERING: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _literal_plain(node: Any) -> bool:
    """A literal text or whole number (whose equality is Python's own)."""
    return isinstance(node, Mapping) and set(node) == {"value"} and type(node["value"]) in _PLAIN


def _one_bound_result(key: Any, tool: str, res_arg: str, call_arg: str) -> Evaluator:
    """A result read bound by one argument (`same: order_id`), the common case, inlined."""
    missing = _MISSING
    equals = v.equals

    def result(env: Env) -> Any:
        cache = env._cache
        if cache is None:
            cache = env._cache = {}
        else:
            found = cache.get(key, missing)
            if found is not missing:
                return found
        found = UNKNOWN
        arguments = env.arguments
        if call_arg in arguments:
            want = arguments[call_arg]
            kind = type(want)
            plain = kind is str or kind is int
            for entry in reversed(env.results):
                if type(entry) is not dict and not isinstance(entry, Mapping):
                    continue
                if entry.get("tool") != tool:
                    continue
                called = entry.get("arguments")
                if type(called) is not dict and not isinstance(called, Mapping):
                    continue
                got = called.get(res_arg, missing)
                if got is missing:
                    continue
                if got == want if plain and type(got) is kind else equals(got, want):
                    found = entry["result"] if "result" in entry else UNKNOWN
                    break
        cache[key] = found
        return found

    return result


def _literal_number(node: Any) -> bool:
    if not isinstance(node, Mapping) or set(node) != {"value"}:
        return False
    kind = type(node["value"])
    return (kind is int or kind is float) and node["value"] == node["value"]


def _compile_op(op: str, args: list[Evaluator], nodes: list[Any]) -> Evaluator:
    truth = v.truth
    if op == "and":

        def all_of(env: Env) -> Any:
            unknown = False
            for a in args:
                t = a(env)
                if t is True:
                    continue
                if t is not False:
                    t = truth(t)
                if t is False:
                    return False
                if t is UNKNOWN:
                    unknown = True
            return UNKNOWN if unknown else True

        return all_of
    if op == "or":

        def any_of(env: Env) -> Any:
            unknown = False
            for a in args:
                t = a(env)
                if t is False:
                    continue
                if t is not True:
                    t = truth(t)
                if t is True:
                    return True
                if t is UNKNOWN:
                    unknown = True
            return UNKNOWN if unknown else False

        return any_of
    if op == "not":
        (inner,) = args

        def negate(env: Env) -> Any:
            t = inner(env)
            if t is True or t is False:
                return not t
            t = truth(t)
            return UNKNOWN if t is UNKNOWN else not t

        return negate
    if op in ("neg", "pos"):
        (inner,) = args
        unary = v.unary
        return lambda env: unary(op, inner(env))
    if len(args) != 2:
        raise ValueError(f"`{op}` takes two operands")
    left, right = args
    if op in ("==", "!=", "<", "<=", ">", ">=", "in", "not in", "is", "is not"):
        compare = v.compare
        if op == "==" and _literal_plain(nodes[1]):
            want = nodes[1]["value"]
            kind = type(want)
            equals = v.equals

            def eq_const(env: Env) -> Any:
                a = left(env)
                if type(a) is kind:
                    return a == want
                if a is UNKNOWN:
                    return UNKNOWN
                return equals(a, want)

            return eq_const
        if op == "==":
            equals = v.equals

            def eq(env: Env) -> Any:
                a, b = left(env), right(env)
                if a is UNKNOWN or b is UNKNOWN:
                    return UNKNOWN
                return equals(a, b)

            return eq
        if op in _ORDERING and _literal_number(right_node := nodes[1]):
            fast_const = _ORDERING[op]
            b_const = right_node["value"]

            def ordered_const(env: Env) -> Any:
                a = left(env)
                ta = type(a)
                if (ta is int or ta is float) and a == a:
                    return fast_const(a, b_const)
                return compare(op, a, b_const)

            return ordered_const
        if op in _ORDERING:
            fast = _ORDERING[op]

            def ordered(env: Env) -> Any:
                a, b = left(env), right(env)
                ta, tb = type(a), type(b)
                if (ta is int or ta is float) and (tb is int or tb is float) and a == a and b == b:
                    return fast(a, b)
                return compare(op, a, b)

            return ordered
        return lambda env: compare(op, left(env), right(env))
    if op in ("+", "-", "*", "/", "//", "%"):
        arithmetic = v.arithmetic
        return lambda env: arithmetic(op, left(env), right(env))
    raise ValueError(f"unknown operator `{op}`")


def compile_test(node: Any) -> Callable[[Env], Any]:
    """A closure giving the truth (True, False, UNKNOWN) of a condition."""
    value = compile_node(node)
    truth = v.truth
    return lambda env: truth(value(env))


# -- the reference interpreter --------------------------------------------------------------


def evaluate(node: Mapping[str, Any], env: Env) -> Any:
    """Interpret `node` directly (no compilation, no caching)."""
    if "value" in node:
        return node["value"]
    if "fact" in node:
        return v.fact_value(env.facts.get(node["fact"], False))
    if "arg" in node:
        return env.arguments[node["arg"]] if node["arg"] in env.arguments else UNKNOWN
    if "result" in node:
        return latest_result(
            env.results,
            node["result"],
            node.get("same") or {},
            node.get("match") or {},
            env.arguments,
        )
    if "unknown" in node or "var" in node:
        return UNKNOWN
    if "get" in node:
        base, key = node["get"]
        return v.get(evaluate(base, env), evaluate(key, env))
    if "list" in node:
        return v.freeze([evaluate(n, env) for n in node["list"]])
    if "dict" in node:
        out = {}
        for key_node, value_node in node["dict"]:
            key, value = evaluate(key_node, env), evaluate(value_node, env)
            if key is UNKNOWN or value is UNKNOWN or not isinstance(key, str | int | float):
                return UNKNOWN
            out[key] = value
        return out
    if "call" in node:
        return v.call(node["call"], [evaluate(n, env) for n in node["args"]])
    if "method" in node:
        return v.method(node["method"], [evaluate(n, env) for n in node["args"]])
    op = node["op"]
    args = node["args"]
    if op == "and":
        return v.kleene_and([evaluate(a, env) for a in args])
    if op == "or":
        return v.kleene_or([evaluate(a, env) for a in args])
    if op in ("not", "neg", "pos"):
        return v.unary(op, evaluate(args[0], env))
    a, b = (evaluate(x, env) for x in args)
    if op in ("+", "-", "*", "/", "//", "%"):
        return v.arithmetic(op, a, b)
    return v.compare(op, a, b)
