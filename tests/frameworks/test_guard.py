"""`Guard.call_with`: the check, then the executor; a host's approver; a refusal raised or returned."""

from __future__ import annotations

import pytest

from stalwart_agents.guarded import CallRefused, Guard, plain_function


def guard_for(shop, functions, **options):  # noqa: ANN001, ANN003, ANN201
    tools = {name: plain_function(f) for name, f in functions.items()}
    guard = Guard.for_agent(shop, "desk", tools=tools, **options)
    guard.read("charge order 4411")
    assert guard.call_with("get_order", {"order_id": "4411"}).status == "ran"
    return guard


def test_a_hosts_approver_sees_the_prompt_and_its_yes_runs_exactly_that_call(shop, functions, ran):
    asked = []
    guard = guard_for(shop, functions, approver=lambda prompt: asked.append(prompt) or True)
    outcome = guard.call_with("charge_card", {"order_id": "4411", "amount": 35})
    assert outcome.status == "ran" and outcome.reasons == ("confirmed",)
    assert asked[0]["call"]["arguments"] == {"order_id": "4411", "amount": 35}
    assert "argument_origin: amount" in asked[0]["reasons"]
    assert ran[-1] == ("charge_card", {"order_id": "4411", "amount": 35})


def test_a_hosts_no_runs_nothing(shop, functions, ran):
    guard = guard_for(shop, functions, approver=lambda prompt: False)
    outcome = guard.call_with("charge_card", {"order_id": "4411", "amount": 35})
    assert outcome.status == "refused" and outcome.reasons == ("approval_denied",)
    assert [name for name, _ in ran] == ["get_order"]


def test_a_refusal_is_raised_when_asked_naming_its_reasons(shop, functions, ran):
    guard = guard_for(shop, functions, on_refuse="raise")
    with pytest.raises(CallRefused, match="unknown_tool") as raised:
        guard.call_with("delete_order", {"order_id": "4411"}, function=lambda a: "deleted")
    assert raised.value.reasons == ["unknown_tool"]
    assert [name for name, _ in ran] == ["get_order"]


def test_without_an_approver_the_confirm_comes_back_with_what_the_person_must_see(
    shop, functions, ran
):
    guard = guard_for(shop, functions)
    outcome = guard.call_with("charge_card", {"order_id": "4411", "amount": 35})
    assert outcome.status == "confirm"
    assert set(outcome.prompt) >= {"call", "arguments", "reasons"}
    assert outcome.prompt["arguments"]["amount"]["value"] == 35
    # Asked in words, from the catalogue's description, never with raw identifiers.
    question = outcome.prompt["question"]
    assert question.startswith("Charges the card on file for an order (")
    assert "charge_card" not in question and "order_id" not in question
    assert [name for name, _ in ran] == ["get_order"]


def test_the_frameworks_run_and_thread_ids_are_in_every_decisions_detail(shop, functions, ran):
    guard = guard_for(shop, functions, run={"thread_id": "thread-7"})
    ids = {"run_id": "run-3", "thread_id": "thread-7"}
    outcome = guard.call_with("charge_card", {"order_id": "4411", "amount": 35}, run_id="run-3")
    assert outcome.status == "confirm"
    assert outcome.detail["run"] == ids and outcome.prompt["run"] == ids
    ran_now = guard.call_with("get_order", {"order_id": "4411"}, run_id="run-3")
    assert ran_now.status == "ran" and ran_now.detail["run"] == ids
    assert guard.check("send_receipt", {"order_id": "1", "email": "a@b.co"}).detail["run"] == {
        "thread_id": "thread-7"
    }


@pytest.mark.parametrize(
    ("ids", "field"),
    [({"run_id": "r" * 129}, "run.run_id"), ({"thread_id": "a\x00b"}, "run.thread_id")],
)
def test_framework_ids_that_are_not_bounded_strings_are_refused_by_field(
    shop, functions, ran, ids, field
):
    from stalwart_agents.client import RequestRefused

    guard = guard_for(shop, functions)
    with pytest.raises(RequestRefused) as refused:
        guard.call_with("get_order", {"order_id": "4412"}, **ids)
    assert field in refused.value.body
    assert [name for name, _ in ran] == ["get_order"]  # nothing ran
