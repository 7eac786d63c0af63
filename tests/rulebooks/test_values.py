"""What values mean: truth, equality, three-valued logic, and both evaluators agreeing."""

from __future__ import annotations

import pytest

from rulebooks.compiler.evaluate import Env, compile_node, evaluate
from rulebooks.compiler.expressions import parse_expression
from rulebooks.compiler.values import UNKNOWN, compare, equals, truth


def run(text: str, arguments=None, facts=None, results=()) -> object:
    node = parse_expression(text, dialect="sheet")
    env = Env(arguments or {}, facts or {}, results)
    fast = compile_node(node)(env)
    slow = evaluate(node, Env(arguments or {}, facts or {}, results))
    assert (fast is UNKNOWN and slow is UNKNOWN) or fast == slow
    return fast


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        (None, False),
        (0, False),
        (2, True),
        (0.0, False),
        ("", False),
        ("x", True),
        ([], False),
        ([0], True),
        ({}, False),
        ({"a": 1}, True),
    ],
)
def test_truth(value, expected) -> None:
    assert truth(value) is expected


def test_booleans_are_not_numbers() -> None:
    assert equals(True, 1) is False
    assert compare("<", True, 2) is UNKNOWN


def test_mismatched_types_are_unknown_when_ordered_and_unequal_when_compared() -> None:
    assert compare("<", "a", 1) is UNKNOWN
    assert equals("1", 1) is False


def test_kleene_logic_lets_a_known_side_decide() -> None:
    assert run("missing > 1 and False") is False
    assert run("missing > 1 or True") is True
    assert run("missing > 1 and True") is UNKNOWN
    assert run("not (missing > 1)") is UNKNOWN


def test_a_missing_argument_or_field_is_unknown() -> None:
    assert run("amount") is UNKNOWN
    assert run("results.get_order.status") is UNKNOWN


def test_a_fact_nobody_reports_is_false() -> None:
    assert run("$order_paid") is False
    assert run("$order_paid", facts={"order_paid": True}) is True


def test_arithmetic_membership_and_functions() -> None:
    assert run("amount * 2 + 1", {"amount": 20}) == 41
    assert run("amount / 0", {"amount": 20}) is UNKNOWN
    assert run('"a" in tags', {"tags": ["a", "b"]}) is True
    assert run('"x" not in name', {"name": "alex"}) is False
    assert run("len(tags)", {"tags": [1, 2]}) == 2
    assert run('int("12") + float("0.5")') == 12.5
    assert run("max(1, 5, 3) - min([4, 2])") == 3
    assert run('abs(-3) == 3 and str(3) == "3" and bool(0) == False') is True


def test_results_read_the_most_recent_matching_call() -> None:
    results = [
        {"tool": "get_order", "arguments": {"id": 1}, "result": {"status": "paid"}},
        {"tool": "get_order", "arguments": {"id": 2}, "result": {"status": "open"}},
    ]
    assert run('results.get_order.status == "open"', results=results) is True


def test_pure_methods() -> None:
    order = {"order": {"status": "paid", "tags": ["a", "b"]}}
    assert run('order.get("status") == "paid"', order) is True
    assert run('order.get("missing", "none")', order) == "none"
    assert run('order.get("missing")', order) is None
    assert run('", ".join(order.tags)', order) == "a, b"
    assert run('" Paid ".strip().lower() == "paid"') is True
    assert run('order.status.startswith("pa")', order) is True
    assert run("amount.get(1)", {"amount": 3}) is UNKNOWN


def test_a_bound_argument_matches_a_result_by_value_not_by_type_of_number() -> None:
    from rulebooks.compiler.evaluate import latest_result

    results = [{"tool": "t", "arguments": {"id": 7.0}, "result": "seven"}]
    assert latest_result(results, "t", {"id": "id"}, {}, {"id": 7}) == "seven"
    assert latest_result(results, "t", {"id": "id"}, {}, {"id": "7"}) is UNKNOWN
    assert latest_result(results, "t", {"id": "id"}, {}, {"id": True}) is UNKNOWN
