"""What a rulebook condition needs before it can hold, and whether it holds by default."""

from __future__ import annotations

from proof.engine.conditions import holds_by_default, requires
from rulebooks.compiler.expressions import parse_expression

FACTS = {"paid": "get_order", "open": "get_order", "vip": "get_customer"}


def _as_facts(node):
    """The compiler resolves a `$name` nothing assigns into a fact; do the same here."""
    if isinstance(node, dict):
        if set(node) == {"var"}:
            return {"fact": node["var"]}
        return {k: _as_facts(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_as_facts(v) for v in node]
    return node


def tree(text: str):
    return _as_facts(parse_expression(text, dialect="colang"))


def test_a_true_fact_needs_the_tool_it_is_read_from() -> None:
    assert requires(tree("$paid"), True, FACTS) == {"get_order"}


def test_a_false_fact_needs_nothing_because_false_is_the_default() -> None:
    assert requires(tree("$paid"), False, FACTS) == frozenset()
    assert requires(tree("not $paid"), True, FACTS) == frozenset()


def test_and_needs_both_sides_or_needs_what_both_sides_share() -> None:
    assert requires(tree("$paid and $vip"), True, FACTS) == {"get_order", "get_customer"}
    assert requires(tree("$paid or $vip"), True, FACTS) == frozenset()
    assert requires(tree("$paid or $open"), True, FACTS) == {"get_order"}
    assert requires(tree("not ($paid or $vip)"), False, FACTS) == frozenset()


def test_a_fact_nobody_reads_from_a_tool_needs_nothing() -> None:
    assert requires(tree("$reported_by_code"), True, FACTS) == frozenset()


def test_a_negated_fact_holds_by_default() -> None:
    assert holds_by_default(tree("not $refunded"), True)
    assert not holds_by_default(tree("$paid"), True)
    assert holds_by_default(tree("$paid"), False)


def test_a_condition_on_unknown_values_does_not_hold_by_default() -> None:
    assert not holds_by_default(tree("$amount < 100"), True)
    assert not holds_by_default(tree("$amount < 100"), False)
