"""Rulebook facts: from code (`context`) and from tool results (`facts:` in agent.yaml)."""

from __future__ import annotations

import pytest

from rulebooks.compiler import (
    FactsInvalid,
    FactsUnavailable,
    resolve_facts,
    validate_facts_spec,
)

SHOP_FACTS = {
    "card_on_file": {"from": "get_order.card", "same": "order_id"},
    "order_paid": {"from": "get_order.status == paid", "same": "order_id"},
}
CALL = {"order_id": "4411", "amount": 40.0}


def get_order(order_id: str, **result) -> dict:
    return {"tool": "get_order", "arguments": {"order_id": order_id}, "result": result}


def facts(results, spec=SHOP_FACTS, arguments=CALL, **kwargs) -> dict[str, bool]:
    return resolve_facts(spec, arguments=arguments, results=results, **kwargs)


def test_a_field_that_is_there_and_true_makes_the_fact_true() -> None:
    got = facts([get_order("4411", card="visa-1234", status="paid")])
    assert got == {"card_on_file": True, "order_paid": True}


@pytest.mark.parametrize("card", [None, "", [], {}, 0, False])
def test_an_empty_or_false_field_makes_the_fact_false(card) -> None:
    assert facts([get_order("4411", card=card, status="paid")])["card_on_file"] is False


@pytest.mark.parametrize("card", [1, -2.5, "x", ["a"], {"k": 1}, True])
def test_a_non_zero_number_or_non_empty_value_makes_the_fact_true(card) -> None:
    assert facts([get_order("4411", card=card)])["card_on_file"] is True


def test_an_equality_fact_is_true_only_when_the_field_equals_the_value() -> None:
    assert facts([get_order("4411", status="paid")])["order_paid"] is True
    assert facts([get_order("4411", status="pending")])["order_paid"] is False


def test_until_the_tool_answered_the_fact_is_false() -> None:
    assert facts([]) == {"card_on_file": False, "order_paid": False}


def test_a_missing_field_makes_the_fact_false() -> None:
    assert facts([get_order("4411")]) == {"card_on_file": False, "order_paid": False}


def test_the_most_recent_result_of_the_tool_decides() -> None:
    results = [get_order("4411", status="paid"), get_order("4411", status="refunded")]
    assert facts(results)["order_paid"] is False
    results.reverse()
    assert facts(results)["order_paid"] is True


def test_same_binds_the_fact_to_the_checked_calls_order() -> None:
    results = [get_order("4411", status="pending"), get_order("9", status="paid")]
    assert facts(results)["order_paid"] is False
    assert facts(results, arguments={"order_id": "9"})["order_paid"] is True


def test_a_call_without_the_bound_argument_gets_a_false_fact() -> None:
    assert facts([get_order("4411", status="paid")], arguments={})["order_paid"] is False


def test_without_same_the_fact_is_about_the_whole_conversation() -> None:
    spec = {"premium": {"from": "get_account.premium"}}
    results = [{"tool": "get_account", "arguments": {"id": "u1"}, "result": {"premium": True}}]
    assert facts(results, spec=spec) == {"premium": True}


def test_a_fact_is_never_read_from_a_tool_that_reads_outside() -> None:
    results = [get_order("4411", card="visa", status="paid")]
    got = facts(results, reads_outside={"get_order"})
    assert got == {"card_on_file": False, "order_paid": False}


def test_code_reports_facts_as_a_mapping() -> None:
    assert facts([], spec=None, context={"order_paid": True}) == {"order_paid": True}


def test_code_reports_facts_through_a_function_called_at_each_check() -> None:
    calls = []

    def context() -> dict:
        calls.append(1)
        return {"order_paid": len(calls) > 1}

    assert facts([], spec=None, context=context) == {"order_paid": False}
    assert facts([], spec=None, context=context) == {"order_paid": True}
    assert len(calls) == 2


def test_where_code_and_file_report_the_same_fact_the_file_wins() -> None:
    got = facts([get_order("4411", status="pending")], context={"order_paid": True})
    assert got["order_paid"] is False


def test_the_file_wins_even_before_its_tool_answered() -> None:
    assert facts([], context={"order_paid": True})["order_paid"] is False


def test_a_context_function_that_fails_makes_no_fact_trusted() -> None:
    def broken() -> dict:
        raise RuntimeError("database down")

    with pytest.raises(FactsUnavailable, match="database down"):
        facts([], context=broken)


def test_a_context_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(FactsUnavailable):
        facts([], context=lambda: ["order_paid"])


def test_a_number_compares_equal_to_the_same_digits_as_text() -> None:
    spec = {"big": {"from": "get_order.total == 100"}}
    assert facts([get_order("1", total=100)], spec=spec)["big"] is True
    assert facts([get_order("1", total="100")], spec=spec)["big"] is True
    assert facts([get_order("1", total=100.5)], spec=spec)["big"] is False


def test_quoted_and_boolean_values_compare_as_written() -> None:
    spec = {
        "quoted": {"from": 'get_order.status == "paid"'},
        "flag": {"from": "get_order.gift == true"},
    }
    got = facts([get_order("1", status="paid", gift=True)], spec=spec)
    assert got == {"quoted": True, "flag": True}


def test_a_nested_field_is_read_by_its_path() -> None:
    spec = {"visa": {"from": "get_order.card.brand == visa"}}
    assert facts([get_order("1", card={"brand": "visa"})], spec=spec)["visa"] is True


def test_malformed_results_are_skipped() -> None:
    results = ["junk", {"tool": "get_order"}, get_order("4411", status="paid")]
    assert facts(results)["order_paid"] is True


def test_an_invalid_spec_is_refused_when_resolving() -> None:
    with pytest.raises(FactsInvalid):
        facts([], spec={"order_paid": {"same": "order_id"}})


def test_validation_names_the_path_of_each_problem() -> None:
    issues = validate_facts_spec(
        {
            "order_paid": {"same": "order_id"},
            "card": {"from": "get_order"},
            "bad name!": {"from": "a.b"},
            "x": {"from": "a.b", "when": "always"},
            "y": {"from": "a.b", "same": 3},
            "z": "get_order.card",
        }
    )
    paths = [issue.path for issue in issues]
    assert "facts.order_paid.from" in paths
    assert "facts.card.from" in paths
    assert "facts.bad name!" in paths
    assert "facts.x.when" in paths
    assert "facts.y.same" in paths
    assert "facts.z" in paths
    assert all(issue.code == "facts_invalid" for issue in issues)


def test_validation_accepts_the_spec_shop() -> None:
    assert validate_facts_spec(SHOP_FACTS) == []


def test_validation_refuses_a_fact_read_from_a_tool_that_reads_outside() -> None:
    issues = validate_facts_spec(SHOP_FACTS, reads_outside={"get_order"})
    assert [i.path for i in issues] == ["facts.card_on_file.from", "facts.order_paid.from"]


def test_validation_refuses_a_fact_read_from_a_tool_the_agent_lacks() -> None:
    issues = validate_facts_spec(SHOP_FACTS, tools={"refund_card"})
    assert len(issues) == 2


def test_a_spec_that_is_not_a_mapping_is_one_issue() -> None:
    assert [str(i) for i in validate_facts_spec(["order_paid"])] == [
        "facts: `facts` is a mapping of fact names"
    ]
