"""The console's Try a turn page: where the organisation's settings send a turn to a model, the
model the agent names is used (its calls checked, none run); with none, the page says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.models import OrganisationSettings

from .conftest import PLANTED
from .fake_provider import FakeProvider, openai_completion

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shop_catalogue():
    from stalwart_agents import Agent

    return Agent.from_file(ROOT / "examples" / "shop" / "agent.yaml", verify=False).catalogue()


def catalogue_with(shop_catalogue, **desk):
    data = json.loads(json.dumps(shop_catalogue))
    data["agents"] = {
        "desk": {"tools": ["get_order", "refund_card"], **desk},
    }
    return json.dumps(data)


def post(client, catalogue, turn="write me a poem"):
    return client.post("/try/", {"turn": turn, "agent": "desk", "catalogue": catalogue})


def test_with_no_model_configured_the_page_says_so(
    shop_catalogue, organisation, editor, client_for
):
    OrganisationSettings.objects.filter(organisation=organisation).update(on_unread="model")
    content = post(client_for(editor), catalogue_with(shop_catalogue)).content.decode()
    assert 'data-status="none"' in content
    assert "no model is configured" in content and "no answer is made up" in content


def test_a_configured_model_answers_and_each_call_it_asks_for_is_checked(
    shop_catalogue, organisation, editor, client_for, monkeypatch
):
    OrganisationSettings.objects.filter(organisation=organisation).update(on_unread="model")
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    with FakeProvider() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
        fake.answers.append(
            openai_completion(
                "Let me see.",
                [("refund_card", {"order_id": "4411", "amount": 40}), ("wipe_orders", {})],
            )
        )
        catalogue = catalogue_with(shop_catalogue, model="openai:fake-1")
        content = post(client_for(editor), catalogue).content.decode()
        assert len(fake.requests) == 1
    assert 'data-status="answered"' in content and "Let me see." in content
    assert "argument_origin: amount" in content  # the refund the model wrote is confirmed
    assert "unknown_tool" in content  # the tool it invented is refused
    assert PLANTED not in content


def test_a_model_that_cannot_be_reached_is_said_not_faked(
    shop_catalogue, organisation, editor, client_for, monkeypatch, closed_port
):
    OrganisationSettings.objects.filter(organisation=organisation).update(on_unread="model")
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port}/v1")
    content = post(
        client_for(editor), catalogue_with(shop_catalogue, model="openai:fake-1")
    ).content.decode()
    assert 'data-status="unavailable"' in content and "could not be reached" in content
    assert PLANTED not in content


def test_under_ask_the_page_says_the_person_is_asked_first(
    shop_catalogue, organisation, editor, client_for
):
    OrganisationSettings.objects.filter(organisation=organisation).update(on_unread="ask")
    catalogue = catalogue_with(shop_catalogue, model="openai:fake-1")
    content = post(client_for(editor), catalogue).content.decode()
    assert 'data-status="ask"' in content and "only on their yes" in content


def test_under_refuse_or_a_turn_the_router_reads_no_model_is_shown(
    shop_catalogue, editor, client_for
):
    catalogue = catalogue_with(shop_catalogue, model="openai:fake-1")
    assert 'id="model-result"' not in post(client_for(editor), catalogue).content.decode()
    read = post(client_for(editor), catalogue, turn="show order 4411").content.decode()
    assert 'data-kind="tool"' in read and 'id="model-result"' not in read
