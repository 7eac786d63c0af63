"""`POST /v1/plan` with the conversation's state: every plan kind works over the API.

A chain continues once its reads' results are given back, an ask is completed by the next turn,
an unread turn asked again goes where `on_unread` says, and the plan's check reads the results and
the person's earlier turns with the organisation's modes of the checks of what was said. The state
is read strictly: every error names its field path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.models import OrganisationSettings
from router import state as router_state

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
ORDER = {"order_id": "4411", "status": "paid", "card": "visa-0042", "amount": 40.0}
RECEIPTS = {
    "agents": {
        "desk": {"model": "anthropic:claude-sonnet-5-5", "tools": ["get_order", "send_receipt"]}
    },
    "tools": [
        {
            "name": "get_order",
            "description": "Shows an order.",
            "kind": "read",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
        {
            "name": "send_receipt",
            "description": "Sends the receipt of an order to the customer's e-mail address.",
            "kind": "sends_out",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string"},
                    "email": {"type": "string", "format": "email"},
                },
                "required": ["order_id", "email"],
            },
        },
    ],
}


@pytest.fixture(scope="module")
def shop():
    from stalwart_agents import Agent

    return Agent.from_file(ROOT / "examples" / "shop" / "agent.yaml").catalogue()


def _plan(client, body):
    response = client.post("/v1/plan", json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def test_a_chain_continues_when_its_reads_results_are_given_back(shop, editor, client_for):
    client = client_for(editor)
    status, first = _plan(
        client, {"turn": "charge order 4411 20", "catalogue": shop, "agent": "desk"}
    )
    assert status == 200, first
    chain = first["plan"]
    assert chain["kind"] == "chain"
    assert [step["tool"] for step in chain["steps"]] == ["get_order"]
    # Nothing ran yet: the charge, which must come after get_order, is refused by its order rule.
    assert (first["check"]["decision"], first["check"]["reasons"]) == ("refuse", ["order_rule"])

    ran = [{**chain["steps"][0], "result": ORDER}]
    status, second = _plan(
        client,
        {
            "turn": "charge order 4411 20",
            "catalogue": shop,
            "agent": "desk",
            "history": [chain],
            "results": ran,
        },
    )
    assert status == 200, second
    plan = second["plan"]
    assert plan["kind"] == "confirm"
    assert plan["call"]["tool"] == "charge_card"
    assert plan["call"]["arguments"] == {"order_id": "4411", "amount": 20}
    # The results are the check's history too: the order rule holds, the write is confirmed.
    assert (second["check"]["decision"], second["check"]["reasons"]) == ("confirm", ["write"])


def test_an_ask_is_completed_by_the_next_turn(editor, client_for):
    client = client_for(editor)
    _, first = _plan(client, {"turn": "send the receipt for order 4411", "catalogue": RECEIPTS})
    assert (first["plan"]["kind"], first["plan"]["missing"]) == ("ask", ["email"])
    _, second = _plan(
        client, {"turn": "ana@x.com", "catalogue": RECEIPTS, "history": [first["plan"]]}
    )
    assert second["plan"]["call"]["tool"] == "send_receipt"
    assert second["plan"]["call"]["arguments"] == {"order_id": "4411", "email": "ana@x.com"}
    # The earlier turn said 4411: the value is the person's, so nothing asks where it came from.
    assert second["check"]["reasons"] == ["write"]
    _, alone = _plan(client, {"turn": "ana@x.com", "catalogue": RECEIPTS})
    assert alone["plan"]["kind"] == "unread"


def test_an_unread_turn_asked_again_goes_to_on_unread(editor, organisation, client_for):
    client = client_for(editor)
    body = {"turn": "tell me a joke", "catalogue": RECEIPTS}
    _, first = _plan(client, body)
    assert (first["plan"]["kind"], first["plan"]["action"]) == ("unread", "say_again")
    _, refused = _plan(client, {**body, "history": [first["plan"]], "asked_again": True})
    assert refused["plan"]["action"] == "refuse"
    OrganisationSettings.objects.filter(organisation=organisation).update(on_unread="ask")
    _, asked = _plan(client, {**body, "history": [first["plan"]], "asked_again": True})
    assert (asked["plan"]["kind"], asked["plan"]["action"]) == ("unread", "ask")
    _, again = _plan(client, body)
    assert again["plan"]["action"] == "say_again"


def _claimed(client, *, results=None):
    """An ask whose call holds a value no turn of the person says (a client wrote it)."""
    asked = {
        "kind": "ask",
        "turn": "send the receipt",
        "call": {
            "tool": "send_receipt",
            "arguments": {"order_id": "A9"},
            "origins": {"order_id": "typed"},
        },
        "missing": ["email"],
    }
    body = {"turn": "ana@x.com", "catalogue": RECEIPTS, "history": [asked]}
    if results is not None:
        body["results"] = results
    status, answer = _plan(client, body)
    assert status == 200, answer
    assert answer["plan"]["call"]["arguments"] == {"order_id": "A9", "email": "ana@x.com"}
    return answer["check"]


def test_the_check_asks_about_a_value_nobody_said_in_the_organisations_mode(
    editor, organisation, client_for
):
    client = client_for(editor)
    check = _claimed(client)
    # The runtime derives the origin (the claim of `typed` cannot raise it): step 11 asks about it.
    assert (check["decision"], check["reasons"]) == ("confirm", ["argument_origin: order_id"])
    assert check["detail"]["origins"]["order_id"] == {"origin": "model", "from": "model"}
    # A result that returned the value vouches for it.
    ran = [{"tool": "get_order", "arguments": {"order_id": "A9"}, "result": {"order_id": "A9"}}]
    assert _claimed(client, results=ran)["reasons"] == ["write"]
    OrganisationSettings.objects.filter(organisation=organisation).update(grounded="off")
    assert _claimed(client)["reasons"] == ["write"]


@pytest.mark.parametrize(
    ("state", "field"),
    [
        ({"asked_again": "yes"}, "asked_again"),
        ({"history": {"kind": "ask"}}, "history"),
        ({"history": [{"kind": "maybe"}]}, "history[0].kind"),
        ({"history": [{"kind": "ask", "colour": 1}]}, "history[0].colour"),
        ({"history": [{"kind": "ask", "call": {"tool": 3}}]}, "history[0].call.tool"),
        (
            {"history": [{"kind": "ask", "call": {"tool": "x", "arguments": []}}]},
            "history[0].call.arguments",
        ),
        ({"history": [{"kind": "unread", "action": "shrug"}]}, "history[0].action"),
        ({"history": [{"kind": "ask", "said": {"email": 1}}]}, "history[0].said.email"),
        ({"history": [{"kind": "tool"}] * (router_state.MAX_HISTORY + 1)}, "history"),
        ({"results": [{"tool": "nope", "result": None}]}, "results[0].tool"),
        ({"results": [{"tool": "get_order", "arguments": {"order_id": "1"}}]}, "results[0].result"),
        ({"results": [{"tool": "get_order", "result": 1, "when": 2}]}, "results[0].when"),
        ({"results": [{"tool": "get_order", "result": 1, "labels": "web"}]}, "results[0].labels"),
        (
            {"results": [{"tool": "get_order", "result": 1}] * (router_state.MAX_RESULTS + 1)},
            "results",
        ),
    ],
)
def test_a_bad_state_is_refused_naming_its_field(editor, client_for, state, field):
    status, answer = _plan(
        client_for(editor), {"turn": "show order 4411", "catalogue": RECEIPTS, **state}
    )
    assert status == 400
    assert field in answer, answer


def test_a_result_nested_too_deep_is_refused(editor, client_for):
    deep: object = 1
    for _ in range(router_state.MAX_DEPTH + 1):
        deep = [deep]
    status, answer = _plan(
        client_for(editor),
        {
            "turn": "show order 4411",
            "catalogue": RECEIPTS,
            "results": [{"tool": "get_order", "result": deep}],
        },
    )
    assert status == 400
    assert "nests deeper" in " ".join(answer["results[0].result"])


def test_a_state_too_large_is_refused(editor, client_for):
    big = "x" * (router_state.MAX_BYTES // 4)
    ran = [{"tool": "get_order", "result": big} for _ in range(5)]
    status, answer = _plan(
        client_for(editor), {"turn": "show order 4411", "catalogue": RECEIPTS, "results": ran}
    )
    assert status == 400
    assert "larger than" in " ".join(answer["results"])


def _random_value(rng, depth=0):  # noqa: ANN001, ANN202
    atoms = [None, True, 1, -2.5, "", "ask", "tool", "unread", "say_again", "4411", "get_order"]
    roll = rng.random()
    if depth > 4 or roll < 0.4:
        return rng.choice(atoms)
    if roll < 0.65:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = ["kind", "call", "tool", "arguments", "result", "said", "origins", "steps", "missing"]
    return {rng.choice(keys): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def test_any_state_is_planned_or_refused_never_an_error(editor, client_for):
    import random

    rng = random.Random(14)
    client = client_for(editor)
    answered = set()
    for _ in range(60):
        asked = {"kind": "ask", "turn": "send the receipt for order 4411", "missing": ["email"]}
        asked["call"] = {"tool": "send_receipt", "arguments": {"order_id": _random_value(rng)}}
        history = rng.choice([_random_value(rng), [asked], [asked, _random_value(rng)]])
        results = rng.choice(
            [
                _random_value(rng),
                [{"tool": "get_order", "arguments": {}, "result": _random_value(rng)}],
            ]
        )
        body = {"turn": "ana@x.com", "catalogue": RECEIPTS, "history": history}
        body["results"] = results
        status, _ = _plan(client, body)
        assert status in (200, 400), body
        answered.add(status)
    assert answered == {200, 400}
