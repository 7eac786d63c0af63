"""The tool check through the console: sessions, checks recorded as events, the SDK both ways."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from console import services as console_services
from console.models import Event, OrganisationSettings
from guard.models import GuardSession
from stalwart_agents import Agent, Client

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop" / "agent.yaml"


@pytest.fixture(scope="module")
def shop():
    desk = Agent.from_file(SHOP)
    return desk.catalogue(), desk.rules().record


def _post(client, url, body):
    return client.post(url, json.dumps(body), content_type="application/json")


def _open(client, shop, agent="billing"):
    catalogue, record = shop
    response = _post(
        client, "/v1/sessions", {"agent": agent, "catalogue": catalogue, "rulebook": record}
    )
    assert response.status_code == 201, response.content
    return response.json()["id"]


def test_the_chapters_refund_is_decided_by_the_console(shop, editor, client_for):
    client = client_for(editor)
    session = _open(client, shop)
    answers = []
    for paid in (False, True):
        body = _post(
            client,
            f"/v1/sessions/{session}/check",
            {
                "tool": "refund_card",
                "arguments": {"order_id": "4411", "amount": 40.0},
                "origins": {"order_id": "typed", "amount": "typed"},
                "context": {"order_paid": paid},
            },
        ).json()
        answers.append((body["decision"], body["reasons"], body["detail"].get("flow")))
    assert answers == [("refuse", ["refuse"], "refunds"), ("confirm", ["write"], None)]
    events = Event.objects.filter(source="toolcheck").order_by("id")
    assert [e.decision for e in events] == ["refuse", "confirm"]
    assert events[0].rule and events[0].session == session


def test_a_call_the_catalogue_does_not_have_is_refused(shop, editor, client_for):
    client = client_for(editor)
    session = _open(client, shop)
    body = _post(
        client, f"/v1/sessions/{session}/check", {"tool": "delete_order", "arguments": {}}
    ).json()
    assert (body["decision"], body["reasons"]) == ("refuse", ["unknown_tool"])


def test_history_recorded_by_the_server_feeds_order_rules(shop, editor, client_for):
    client = client_for(editor)
    session = _open(client, shop, agent="desk")
    record = _post(
        client,
        f"/v1/sessions/{session}/record",
        {
            "tool": "get_order",
            "arguments": {"order_id": "4411"},
            "result": {"order_id": "4411", "status": "paid", "card": "visa", "amount": 40.0},
        },
    )
    assert record.status_code == 200, record.content
    stored = GuardSession.objects.get(public_id=session).history
    assert len(stored["entries"]) == 1


def test_a_licence_that_lapsed_refuses_writes(shop, editor, organisation, client_for):
    OrganisationSettings.objects.filter(organisation=organisation).update(
        licence_valid_until="2020-01-01"
    )
    client = client_for(editor)
    session = _open(client, shop)
    body = _post(
        client,
        f"/v1/sessions/{session}/check",
        {
            "tool": "refund_card",
            "arguments": {"order_id": "4411", "amount": 40.0},
            "context": {"order_paid": True},
        },
    ).json()
    assert (body["decision"], body["reasons"]) == ("refuse", ["licence_lapsed"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"agent": "billing"}, "catalogue"),
        ({"catalogue": {}}, "agent"),
        ({"agent": "nobody", "catalogue": "CAT"}, "agent"),
        ({"agent": "billing", "catalogue": {"tools": [{"name": 3}]}}, "catalogue.tools[0].name"),
    ],
)
def test_a_bad_session_names_its_field(shop, editor, client_for, body, field):
    if body.get("catalogue") == "CAT":
        body = {**body, "catalogue": shop[0]}
    response = _post(client_for(editor), "/v1/sessions", body)
    assert response.status_code == 400
    assert any(key.startswith(field) for key in response.json()), response.json()
    assert not GuardSession.objects.exists()


def test_a_records_only_organisation_refuses_colang_text(shop, editor, organisation, client_for):
    OrganisationSettings.objects.filter(organisation=organisation).update(
        compiled_records_only=True
    )
    response = _post(
        client_for(editor),
        "/v1/sessions",
        {
            "agent": "billing",
            "catalogue": shop[0],
            "rulebook": (ROOT / "examples/shop/policy.co").read_text(),
        },
    )
    assert response.status_code == 400
    assert "policy_input_refused" in json.dumps(response.json())


def test_sessions_are_the_organisations_own(shop, editor, outsider, client_for):
    session = _open(client_for(editor), shop)
    other = _post(
        client_for(outsider),
        f"/v1/sessions/{session}/check",
        {"tool": "get_order", "arguments": {"order_id": "1"}},
    )
    assert other.status_code == 404


def test_a_session_named_before_it_was_deleted_answers_404(shop, editor, client_for):
    client = client_for(editor)
    session = _open(client, shop)
    call = {"tool": "get_order", "arguments": {"order_id": "1"}}
    assert _post(client, f"/v1/sessions/{session}/check", call).status_code == 200
    GuardSession.objects.filter(public_id=session).delete()  # its identity is remembered
    assert _post(client, f"/v1/sessions/{session}/check", call).status_code == 404
    assert _post(client, f"/v1/sessions/{session}/check", call).status_code == 404


def test_a_session_remembered_for_one_organisation_is_not_anothers(
    shop, editor, outsider, client_for
):
    session = _open(client_for(editor), shop)
    call = {"tool": "get_order", "arguments": {"order_id": "1"}}
    assert _post(client_for(editor), f"/v1/sessions/{session}/check", call).status_code == 200
    assert _post(client_for(outsider), f"/v1/sessions/{session}/check", call).status_code == 404


def test_an_auditor_cannot_check(shop, auditor, client_for):
    response = _post(
        client_for(auditor), "/v1/sessions", {"agent": "billing", "catalogue": shop[0]}
    )
    assert response.status_code == 403


def test_in_process_and_console_answer_the_same(shop):
    catalogue, record = shop
    with Client(url="") as client:
        session = client.session("billing", catalogue=catalogue, rulebook=record)
        local = [
            session.check_tool_call(
                "refund_card",
                {"order_id": "4411", "amount": 40.0},
                origins={"order_id": "typed", "amount": "typed"},
                context={"order_paid": paid},
            )
            for paid in (False, True)
        ]
    assert [(c.decision, c.reasons) for c in local] == [
        ("refuse", ["refuse"]),
        ("confirm", ["write"]),
    ]


@pytest.mark.django_db(transaction=True)
def test_the_shop_example_runs_against_the_console(live_server, admin, organisation, actor_for):
    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="shop", role="editor"
    )
    env = {**os.environ, "STALWART_URL": live_server.url, "STALWART_API_KEY": key}
    # As the chapter runs it: from inside the shop's own folder.
    remote = subprocess.run(
        [sys.executable, "main.py"],
        cwd=ROOT / "examples" / "shop",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert remote.returncode == 0, remote.stderr
    local_env = {k: v for k, v in os.environ.items() if k != "STALWART_URL"}
    local = subprocess.run(
        [sys.executable, "main.py"],
        cwd=ROOT / "examples" / "shop",
        env=local_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    expected = ["order_paid False: refuse refuse refunds", "order_paid True: confirm write"]
    assert [line.rstrip() for line in remote.stdout.splitlines()] == expected
    assert [line.rstrip() for line in local.stdout.splitlines()] == expected
    assert Event.objects.filter(source="toolcheck").count() == 2


def test_an_unreachable_console_raises_and_no_call_is_made(shop):
    from stalwart_agents import SelectorUnavailableError

    client = Client(url="http://127.0.0.1:9", api_key="stw_x", timeout=2)
    with pytest.raises(SelectorUnavailableError):
        client.session("billing", catalogue=shop[0], rulebook=shop[1])


def test_holds_and_switches_from_sequence_alerts_apply_to_the_tool_check(
    shop, editor, organisation, client_for
):
    from console.models import SessionHold, ToolSwitch

    client = client_for(editor)
    session = _open(client, shop, agent="desk")
    read = {"tool": "get_order", "arguments": {"order_id": "4411"}}
    assert _post(client, f"/v1/sessions/{session}/check", read).json()["decision"] == "allow"
    SessionHold.objects.create(
        organisation=organisation, agent="desk", session=session, reason="test"
    )
    assert _post(client, f"/v1/sessions/{session}/check", read).json()["decision"] == "allow"
    ToolSwitch.objects.create(
        organisation=organisation, agent="desk", tool="get_order", reason="test"
    )
    body = _post(client, f"/v1/sessions/{session}/check", read).json()
    assert (body["decision"], body["reasons"]) == ("refuse", ["tool_disabled"])
