"""Step 7, a tool's own checks: chapter 45's create_order examples and every reason they answer."""

from __future__ import annotations

from guard.engine import ToolCheck

from .conftest import KEY


def shop_of_orders() -> ToolCheck:
    data = {
        "tools": [
            {
                "name": "check_stock",
                "kind": "read",
                "parameters": {"type": "object", "properties": {"product_id": {"type": "string"}}},
            },
            {
                "name": "create_order",
                "kind": "write",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "product_id": {"type": "string"},
                        "quantity": {"type": "integer"},
                        "price": {"type": "number"},
                    },
                },
                "checks": [
                    {
                        "argument": "quantity",
                        "at_most": {"from": "check_stock.in_stock", "same": "product_id"},
                    },
                    {"at_most": {"count": 3, "per": "day"}},
                    {"spend": {"argument": "price", "at_most": 500, "per": "day"}},
                ],
            },
        ]
    }
    return ToolCheck(data, key=KEY)


USAGE = {"count": {"day": 0}, "spend": {"day": 0}}


def order(quantity: int, price: float = 10.0) -> dict:
    return {
        "tool": "create_order",
        "arguments": {"product_id": "p1", "quantity": quantity, "price": price},
        "origins": {"product_id": "typed", "quantity": "typed", "price": "typed"},
    }


def stocked(check: ToolCheck, in_stock: int = 5, product: str = "p1"):
    history = check.new_history("s")
    check.record(
        history,
        {"tool": "check_stock", "arguments": {"product_id": product}},
        {"in_stock": in_stock},
    )
    return history


def test_an_order_of_7_where_the_stock_is_5_is_refused_as_condition_failed():
    check = shop_of_orders()
    decision = check.check(order(7), session=stocked(check), usage=USAGE)
    assert (decision.decision, decision.reasons) == ("refuse", ("condition_failed",))
    assert decision.rule == "quantity at_most check_stock.in_stock"
    assert check.check(order(5), session=stocked(check), usage=USAGE).reasons == ("write",)


def test_before_the_stock_was_checked_the_condition_is_unknown():
    check = shop_of_orders()
    decision = check.check(order(1), session=check.new_history("s"), usage=USAGE)
    assert decision.reasons == ("condition_unknown",)
    other = stocked(check, product="p2")
    assert check.check(order(1), session=other, usage=USAGE).reasons == ("condition_unknown",)


def test_a_fourth_order_in_a_day_limited_to_3_is_refused_as_limit_reached():
    check = shop_of_orders()
    decision = check.check(order(1), session=stocked(check), usage={**USAGE, "count": {"day": 3}})
    assert (decision.decision, decision.reasons) == ("refuse", ("limit_reached",))
    assert decision.detail["limit"] == 3 and decision.detail["used"] == 3


def test_without_the_count_the_host_kept_the_limit_refuses_as_usage_unknown():
    check = shop_of_orders()
    assert check.check(order(1), session=stocked(check)).reasons == ("usage_unknown",)
    bad = {"count": {"day": -1}, "spend": {"day": 0}}
    assert check.check(order(1), session=stocked(check), usage=bad).reasons == ("usage_unknown",)


def test_spend_over_the_limit_is_refused_and_spend_not_counted_is_unknown():
    check = shop_of_orders()
    over = {"count": {"day": 0}, "spend": {"day": 450.0}}
    assert check.check(order(1, 60.0), session=stocked(check), usage=over).reasons == (
        "spend_exceeded",
    )
    assert check.check(order(1, 50.0), session=stocked(check), usage=over).reasons == ("write",)
    uncounted = {"count": {"day": 0}}
    assert check.check(order(1), session=stocked(check), usage=uncounted).reasons == (
        "spend_unknown",
    )


def test_literal_conditions_compare_numbers_and_values():
    data = {
        "tools": [
            {
                "name": "transfer",
                "kind": "write",
                "parameters": {
                    "type": "object",
                    "properties": {"amount": {"type": "number"}, "currency": {"type": "string"}},
                },
                "checks": [
                    {"argument": "amount", "at_least": 1},
                    {"argument": "currency", "one_of": ["EUR", "BRL"]},
                    {"argument": "currency", "equals": "BRL"},
                ],
            }
        ]
    }
    check = ToolCheck(data, key=KEY)
    session = check.new_history("s")
    origins = {"amount": "typed", "currency": "typed"}

    def reasons(arguments):
        return check.check(
            {"tool": "transfer", "arguments": arguments, "origins": origins}, session=session
        ).reasons

    assert reasons({"amount": 5, "currency": "BRL"}) == ("write",)
    assert reasons({"amount": 0.5, "currency": "BRL"}) == ("condition_failed",)
    assert reasons({"amount": 5, "currency": "USD"}) == ("condition_failed",)
    assert reasons({"amount": 5, "currency": "EUR"}) == ("condition_failed",)
    assert reasons({"currency": "BRL"}) == ("condition_unknown",)
