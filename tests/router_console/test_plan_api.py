"""`POST /v1/plan` and the Try a turn page: the organisation's language, never a guess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.models import OrganisationSettings

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shop():
    from stalwart_agents import Agent

    desk = Agent.from_file(ROOT / "examples" / "shop" / "agent.yaml")
    return desk.catalogue(), desk.rules().record


def _plan(client, body):
    return client.post("/v1/plan", json.dumps(body), content_type="application/json")


def test_a_pt_br_turn_is_read_in_the_organisations_language(shop, editor, organisation, client_for):
    OrganisationSettings.objects.filter(organisation=organisation).update(language="pt-BR")
    body = _plan(
        client_for(editor), {"turn": "mostre o pedido 4411", "catalogue": shop[0], "agent": "desk"}
    ).json()
    assert body["language"] == "pt-BR"
    assert body["plan"]["kind"] == "tool"
    assert body["plan"]["call"]["tool"] == "get_order"
    assert body["plan"]["call"]["arguments"] == {"order_id": "4411"}
    assert body["check"]["decision"] == "allow"


def test_the_same_turn_in_english_settings_is_not_read(shop, editor, client_for):
    body = _plan(
        client_for(editor), {"turn": "mostre o pedido 4411", "catalogue": shop[0], "agent": "desk"}
    ).json()
    assert body["language"] == "en"
    assert body["plan"]["kind"] == "unread"
    assert "check" not in body


def test_the_request_may_choose_the_language(shop, editor, client_for):
    body = _plan(
        client_for(editor),
        {
            "turn": "estorne 40,00 do pedido 4411",
            "catalogue": shop[0],
            "rulebook": shop[1],
            "language": "pt-BR",
        },
    ).json()
    assert body["plan"]["kind"] != "unread"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"turn": "", "catalogue": {}}, "turn"),
        ({"turn": "hi"}, "catalogue"),
        ({"turn": "hi", "catalogue": {}, "language": "pt-PT"}, "language"),
        ({"turn": "hi", "catalogue": {"tools": [{"name": 1}]}}, "catalogue.tools[0].name"),
        ({"turn": "hi", "catalogue": {}, "colour": 1}, "colour"),
    ],
)
def test_bad_input_names_its_field(editor, client_for, body, field):
    response = _plan(client_for(editor), body)
    assert response.status_code == 400
    assert any(key.startswith(field) for key in response.json()), response.json()


def test_an_auditor_cannot_plan(shop, auditor, client_for):
    assert _plan(client_for(auditor), {"turn": "x", "catalogue": shop[0]}).status_code == 403


def test_the_try_a_turn_page_shows_the_plan_and_the_checks(shop, editor, client_for):
    client = client_for(editor)
    page = client.get("/try/")
    assert page.status_code == 200 and b"get_order" in page.content
    response = client.post(
        "/try/", {"turn": "show order 4411", "agent": "desk", "catalogue": json.dumps(shop[0])}
    )
    content = response.content.decode()
    assert 'data-kind="tool"' in content
    assert 'id="plan-call">get_order<' in content
    assert 'id="plan-check">allow<' in content
    broken = client.post("/try/", {"turn": "x", "catalogue": "{"})
    assert broken.status_code == 400 and b"catalogue: line 1" in broken.content


def test_the_try_a_turn_page_shows_the_question_a_write_asks(
    shop, editor, organisation, client_for
):
    OrganisationSettings.objects.filter(organisation=organisation).update(language="pt-BR")
    response = client_for(editor).post(
        "/try/",
        {"turn": "estorne 40,00 do pedido 4411", "agent": "desk", "catalogue": json.dumps(shop[0])},
    )
    content = response.content.decode()
    assert 'id="plan-check">confirm<' in content
    assert (
        'id="plan-question" lang="pt-BR">Refunds an amount of an order to the card it was paid '
        "with (pedido 4411 e valor 40,00). Posso seguir?<"
    ) in content
    # the call's arguments as highlighted JSON, not Python's repr
    assert "{&#x27;order_id&#x27;" not in content and "{'order_id'" not in content
    arguments = content.split('id="plan-arguments">')[1].split("</code>")[0]
    assert '<span class="j-key">&quot;order_id&quot;</span>: <span class="j-str">' in arguments


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"rulebook": "abc"}, "rulebook"),  # not a rulebook's id: was a 500 in the lookup
        ({"rulebook": "99999999999999999999"}, "rulebook"),  # no rulebook: never a plan without it
        ({"rulebook": "9" * 5000}, "rulebook"),
        ({"catalogue": "[" * 100_000 + "]" * 100_000}, "catalogue"),  # RecursionError
        ({"catalogue": '{"n": ' + "1" * 5000 + "}"}, "catalogue"),  # int() over 4,300 digits
        ({"catalogue": '{"n": NaN, "tools": []}'}, "catalogue"),
        ({"catalogue": '{"t": "a\\u0000b"}'}, "catalogue"),
    ],
)
def test_the_try_a_turn_page_refuses_a_malformed_field_by_name(
    fields, field, shop, editor, client_for
):
    client = client_for(editor)
    client.raise_request_exception = False
    body = {"turn": "show order 4411", "agent": "desk", "catalogue": json.dumps(shop[0])}
    response = client.post("/try/", {**body, **fields})
    assert response.status_code == 400
    assert f"{field}: ".encode() in response.content
