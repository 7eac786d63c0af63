"""Step 7 where mutation testing found it unguarded: `require`, the limits' edges, the detail.

Chapter 45, step 7: a tool's own checks on the call's arguments and on results earlier tools
returned, its limits per period and its spend, each answering with its reason. The checks page: a
requirement reads a field of an earlier result, true when the field is true, a non-zero number or
a non-empty text, list or mapping. Each test here fails when the control it names is removed.
"""

from __future__ import annotations

from typing import Any

import pytest

from guard.engine import CatalogueInvalid, ToolCheck, load_catalogue

from .conftest import KEY

ORDER = {"type": "object", "properties": {"order_id": {"type": "string"}}}
CHARGE = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string"},
        "amount": {"type": "number"},
        "currency": {"type": "string"},
    },
}


def catalogue(checks: list[Any]) -> dict[str, Any]:
    return {
        "tools": [
            {"name": "get_order", "kind": "read", "parameters": ORDER},
            {"name": "get_rates", "kind": "read", "parameters": {"type": "object"}},
            {"name": "charge_card", "kind": "write", "parameters": CHARGE, "checks": checks},
        ]
    }


def charge(**arguments: Any) -> dict[str, Any]:
    return {
        "tool": "charge_card",
        "arguments": arguments,
        "origins": {name: "typed" for name in arguments},
    }


def decide(checks: list[Any], call: dict[str, Any], *, results=(), usage=None):
    """The decision on `call` after the earlier calls `results` ran: `[(tool, arguments, result)]`."""
    check = ToolCheck(catalogue(checks), key=KEY)
    history = check.new_history("s")
    for tool, arguments, result in results:
        check.record(history, {"tool": tool, "arguments": arguments}, result)
    return check.check(call, session=history, usage=usage)


# -- require: a field of an earlier result -------------------------------------------------------

REQUIRE_CARD = [{"require": {"from": "get_order.card", "same": "order_id"}}]


@pytest.mark.parametrize(
    "card",
    [True, 1, -2.5, "visa", ["visa"], {"brand": "visa"}],
    ids=["true", "one", "negative", "text", "list", "mapping"],
)
def test_a_requirement_holds_on_a_true_field_a_non_zero_number_or_non_empty_text_list_or_mapping(
    card,
):
    decision = decide(
        REQUIRE_CARD,
        charge(order_id="4411", amount=40),
        results=[("get_order", {"order_id": "4411"}, {"card": card})],
    )
    assert (decision.decision, decision.reasons) == ("confirm", ("write",))


@pytest.mark.parametrize(
    "card", [False, 0, 0.0, "", [], {}, None], ids=["false", "0", "0.0", "", "[]", "{}", "null"]
)
def test_a_requirement_fails_on_a_false_zero_empty_or_null_field(card):
    decision = decide(
        REQUIRE_CARD,
        charge(order_id="4411", amount=40),
        results=[("get_order", {"order_id": "4411"}, {"card": card})],
    )
    assert (decision.decision, decision.reasons) == ("refuse", ("condition_failed",))
    assert decision.rule == "require get_order.card"
    assert decision.detail == {
        "step": 7,
        "check": "your_rules",
        "rule": "require get_order.card",
        "index": 0,
        "from": "get_order.card",
    }


def test_a_requirement_whose_result_has_not_come_is_unknown_and_refused():
    for results in ([], [("get_order", {"order_id": "4411"}, {"status": "paid"})]):
        decision = decide(REQUIRE_CARD, charge(order_id="4411", amount=40), results=results)
        assert (decision.decision, decision.reasons) == ("refuse", ("condition_unknown",))
        assert decision.detail["from"] == "get_order.card"
        assert decision.detail["index"] == 0


def test_a_requirement_bound_by_same_reads_only_the_result_for_the_same_value():
    results = [("get_order", {"order_id": "9999"}, {"card": "visa"})]
    decision = decide(REQUIRE_CARD, charge(order_id="4411", amount=40), results=results)
    assert decision.reasons == ("condition_unknown",)
    without_the_argument = decide(REQUIRE_CARD, charge(amount=40), results=results)
    assert without_the_argument.reasons == ("condition_unknown",)


def test_a_requirement_without_same_reads_the_latest_result_of_the_tool():
    checks = [{"require": {"from": "get_rates.open"}}]
    assert decide(
        checks, charge(amount=1), results=[("get_rates", {}, {"open": True})]
    ).reasons == ("write",)
    closed = [("get_rates", {}, {"open": True}), ("get_rates", {}, {"open": False})]
    assert decide(checks, charge(amount=1), results=closed).reasons == ("condition_failed",)


# -- conditions on arguments ---------------------------------------------------------------------


def test_at_least_holds_at_its_bound_and_at_most_at_its_bound():
    checks = [{"argument": "amount", "at_least": 10}, {"argument": "amount", "at_most": 20}]
    assert decide(checks, charge(amount=10)).reasons == ("write",)
    assert decide(checks, charge(amount=20)).reasons == ("write",)
    assert decide(checks, charge(amount=9.99)).reasons == ("condition_failed",)
    refused = decide(checks, charge(amount=20.01))
    assert refused.reasons == ("condition_failed",)
    assert refused.detail == {
        "step": 7,
        "check": "your_rules",
        "rule": "amount at_most 20",
        "index": 1,
        "argument": "amount",
    }


def test_an_equals_condition_on_a_missing_argument_is_unknown_not_failed():
    checks = [{"argument": "currency", "equals": "BRL"}]
    decision = decide(checks, charge(amount=5))
    assert decision.reasons == ("condition_unknown",)
    assert decision.detail["argument"] == "currency"
    assert decide(checks, charge(amount=5, currency="BRL")).reasons == ("write",)


def test_a_bound_read_from_a_result_that_is_not_a_number_is_unknown():
    checks = [{"argument": "amount", "at_most": {"from": "get_rates.limit"}}]
    decision = decide(checks, charge(amount=5), results=[("get_rates", {}, {"limit": "50"})])
    assert (decision.decision, decision.reasons) == ("refuse", ("condition_unknown",))
    assert decision.detail["argument"] == "amount"
    allowed = decide(checks, charge(amount=5), results=[("get_rates", {}, {"limit": 50})])
    assert allowed.reasons == ("write",)


def test_one_of_a_single_text_from_a_result_is_that_text_not_its_letters():
    checks = [{"argument": "currency", "one_of": {"from": "get_rates.currency"}}]
    results = [("get_rates", {}, {"currency": "EUR"})]
    assert decide(checks, charge(currency="EUR"), results=results).reasons == ("write",)
    assert decide(checks, charge(currency="E"), results=results).reasons == ("condition_failed",)
    several = [("get_rates", {}, {"currency": ["EUR", "BRL"]})]
    assert decide(checks, charge(currency="BRL"), results=several).reasons == ("write",)


# -- limits per period and spend -----------------------------------------------------------------

LIMIT = [{"at_most": {"count": 3, "per": "day"}}]


def test_a_limit_of_3_a_day_allows_the_third_call_and_refuses_the_fourth():
    third = decide(LIMIT, charge(amount=1), usage={"count": {"day": 2}})
    assert third.reasons == ("write",)
    fourth = decide(LIMIT, charge(amount=1), usage={"count": {"day": 3}})
    assert fourth.reasons == ("limit_reached",)
    assert fourth.rule == "at_most 3 per day"
    assert fourth.detail == {
        "step": 7,
        "check": "your_rules",
        "rule": "at_most 3 per day",
        "index": 0,
        "per": "day",
        "limit": 3,
        "used": 3,
    }


def test_a_limit_without_its_count_names_the_period_it_could_not_read():
    decision = decide(LIMIT, charge(amount=1), usage={"count": {"hour": 0}})
    assert decision.reasons == ("usage_unknown",)
    assert decision.detail == {
        "step": 7,
        "check": "your_rules",
        "rule": "at_most 3 per day",
        "index": 0,
        "per": "day",
    }


def test_a_limit_of_zero_loads_and_refuses_every_call():
    checks = [{"at_most": {"count": 0, "per": "week"}}]
    decision = decide(checks, charge(amount=1), usage={"count": {"week": 0}})
    assert decision.reasons == ("limit_reached",)


SPEND = [{"spend": {"argument": "amount", "at_most": 500, "per": "day"}}]


def test_spend_up_to_the_limit_runs_and_past_it_is_refused_with_what_was_spent():
    assert decide(SPEND, charge(amount=50), usage={"spend": {"day": 450}}).reasons == ("write",)
    refused = decide(SPEND, charge(amount=50.5), usage={"spend": {"day": 450}})
    assert refused.reasons == ("spend_exceeded",)
    assert refused.rule == "spend amount at_most 500 per day"
    assert refused.detail == {
        "step": 7,
        "check": "your_rules",
        "rule": "spend amount at_most 500 per day",
        "index": 0,
        "per": "day",
        "spent": 450,
        "this_call": 50.5,
        "cap": 500,
    }


def test_spend_without_the_amount_or_the_count_is_unknown_and_names_both():
    for call, usage in (
        (charge(order_id="1"), {"spend": {"day": 0}}),
        (charge(amount=50), {"spend": {"week": 0}}),
    ):
        decision = decide(SPEND, call, usage=usage)
        assert decision.reasons == ("spend_unknown",)
        assert decision.detail["per"] == "day" and decision.detail["argument"] == "amount"


def test_a_spend_limit_of_zero_loads():
    checks = [{"spend": {"argument": "amount", "at_most": 0, "per": "month"}}]
    assert decide(checks, charge(amount=0), usage={"spend": {"month": 0}}).reasons == ("write",)
    assert decide(checks, charge(amount=1), usage={"spend": {"month": 0}}).reasons == (
        "spend_exceeded",
    )


# -- a tool's checks are validated when the catalogue loads, each issue at its path -------------


def issues(checks: list[Any]) -> list[str]:
    with pytest.raises(CatalogueInvalid) as caught:
        load_catalogue(catalogue(checks))
    return [str(issue) for issue in caught.value.issues]


AT = "tools[2].checks[0]"

INVALID_CHECKS = [
    (
        {"require": {"from": "get_order.card"}, "argument": "amount"},
        f"{AT}: `require` stands alone in its check",
    ),
    ({"require": "get_order.card"}, f"{AT}.require: must be a mapping with `from`"),
    (
        {"require": {"from": "get_order.card", "when": 1}},
        f"{AT}.require: unknown key `when`",
    ),
    ({"require": {"from": "card"}}, f"{AT}.require.from: must be `<tool>.<field>`"),
    (
        {"require": {"from": "get_order.card", "same": "order"}},
        f"{AT}.require.same: must name an argument of this tool, not `order`",
    ),
    (
        {"require": {"from": "get_order.card", "same": 7}},
        f"{AT}.require.same: must name an argument of this tool, not `7`",
    ),
    (
        {"at_most": {"count": 3, "per": "day"}, "note": "x"},
        f"{AT}: must be a condition on an argument, a limit, a spend, a cap_cost or a require",
    ),
    (
        {"at_most": 3},
        f"{AT}: must be a condition on an argument, a limit, a spend, a cap_cost or a require",
    ),
    (
        {"argument": "price", "at_most": 3},
        f"{AT}.argument: must name an argument of this tool, not `price`",
    ),
    (
        {"argument": 7, "at_most": 3},
        f"{AT}.argument: must name an argument of this tool, not `7`",
    ),
    ({"argument": "currency", "one_of": []}, f"{AT}.one_of: must be a non-empty list of values"),
    ({"argument": "currency", "one_of": "EUR"}, f"{AT}.one_of: must be a non-empty list of values"),
    (
        {"argument": "amount", "at_most": "ten"},
        f"{AT}.at_most: must be a number or `{{from: tool.field}}`",
    ),
    (
        {"argument": "amount", "at_least": "ten"},
        f"{AT}.at_least: must be a number or `{{from: tool.field}}`",
    ),
    (
        {"at_most": {"count": 3, "per": "day", "burst": 1}},
        f"{AT}.at_most: takes only `count` and `per`",
    ),
    (
        {"at_most": {"count": -1, "per": "day"}},
        f"{AT}.at_most.count: must be a whole number, 0 or more",
    ),
    (
        {"at_most": {"count": "3", "per": "day"}},
        f"{AT}.at_most.count: must be a whole number, 0 or more",
    ),
    (
        {"at_most": {"count": True, "per": "day"}},
        f"{AT}.at_most.count: must be a whole number, 0 or more",
    ),
    (
        {"spend": {"argument": "amount", "at_most": 5, "per": "day"}, "argument": "amount"},
        f"{AT}: `spend` stands alone and is a mapping",
    ),
    ({"spend": 500}, f"{AT}: `spend` stands alone and is a mapping"),
    (
        {"spend": {"argument": "amount", "at_most": 5, "per": "day", "currency": "BRL"}},
        f"{AT}.spend: takes only `argument`, `at_most` and `per`",
    ),
    (
        {"spend": {"argument": "amount", "at_most": -1, "per": "day"}},
        f"{AT}.spend.at_most: must be a number, 0 or more",
    ),
    (
        {"spend": {"argument": "amount", "at_most": "lots", "per": "day"}},
        f"{AT}.spend.at_most: must be a number, 0 or more",
    ),
    (
        {"spend": {"argument": "amount", "at_most": 5, "per": "year"}},
        f"{AT}.spend.per: must be one of minute, hour, day, week, month, run, not `year`",
    ),
]


@pytest.mark.parametrize(("check", "issue"), INVALID_CHECKS)
def test_a_malformed_check_is_refused_at_its_path_with_what_is_wrong(check, issue):
    assert issues([check]) == [issue]
