"""The framework doors on the console: run and thread ids on events, one session across agents,
one approval request per call asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.models import Event
from stalwart_agents import Agent

pytestmark = pytest.mark.django_db
SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop" / "agent.yaml"
REFUND = {"tool": "refund_card", "arguments": {"order_id": "4411", "amount": 40.0}}


@pytest.fixture(scope="module")
def shop():
    desk = Agent.from_file(SHOP, verify=False)
    return desk.catalogue(), desk.rules().record


def _post(client, url, body):  # noqa: ANN001, ANN202
    return client.post(url, json.dumps(body), content_type="application/json")


def _open(client, shop, agent="billing"):  # noqa: ANN001, ANN202
    catalogue, record = shop
    body = {"agent": agent, "catalogue": catalogue, "rulebook": record}
    response = _post(client, "/v1/sessions", body)
    assert response.status_code == 201, response.content
    return response.json()["id"]


def test_a_check_keeps_the_run_and_thread_on_its_event_and_in_its_detail(shop, editor, client_for):
    client = client_for(editor)
    session = _open(client, shop)
    run = {"run_id": "run-1", "thread_id": "thread-a"}
    answer = _post(client, f"/v1/sessions/{session}/check", {**REFUND, "run": run}).json()
    assert answer["detail"]["run"] == run
    event = Event.objects.get(source="toolcheck")
    assert (event.run_id, event.thread_id) == ("run-1", "thread-a")


def test_the_feed_shows_and_filters_by_thread_and_run(shop, editor, client_for):
    client = client_for(editor)
    session = _open(client, shop)
    for run_id, thread in (("run-1", "thread-a"), ("run-2", "thread-b")):
        run = {"run_id": run_id, "thread_id": thread}
        _post(client, f"/v1/sessions/{session}/check", {**REFUND, "run": run})
    page = client.get("/events/", {"thread": "thread-a"}).content.decode()
    assert "thread-a" in page and "run-1" in page and "thread-b" not in page
    page = client.get("/events/", {"run": "run-2"}).content.decode()
    assert "run-2" in page and "run-1" not in page
    listed = client.get("/v1/events", {"thread": "thread-b"}).json()["results"]
    assert [(e["run_id"], e["thread_id"]) for e in listed] == [("run-2", "thread-b")]
    event = Event.objects.get(thread_id="thread-a")
    shown = client.get(f"/events/{event.pk}/").content.decode()
    assert 'id="event-thread"' in shown and "thread-a" in shown and "run-1" in shown


@pytest.mark.parametrize(
    ("run", "field"),
    [
        ({"run_id": "r" * 129}, "run.run_id"),
        ({"thread_id": 7}, "run.thread_id"),
        ({"thread_id": "a\nb"}, "run.thread_id"),
        ({"trace": "x"}, "run.trace"),
        ("run-1", "run"),
    ],
)
def test_framework_ids_that_are_not_bounded_strings_are_refused_by_field(
    shop, editor, client_for, run, field
):
    client = client_for(editor)
    session = _open(client, shop)
    for endpoint in ("check", "execute"):
        response = _post(client, f"/v1/sessions/{session}/{endpoint}", {**REFUND, "run": run})
        assert response.status_code == 400, response.content
        assert field in response.json()
    assert not Event.objects.filter(source="toolcheck").exists()


def test_a_filter_id_past_its_bound_is_an_error_not_a_crash(editor, client_for):
    client = client_for(editor)
    assert "at most 128" in client.get("/events/", {"thread": "t" * 200}).content.decode()


def test_one_session_holds_the_calls_of_the_agent_handed_to(shop, editor, client_for):
    client = client_for(editor)
    session = _open(client, shop, agent="desk")
    recorded = _post(
        client,
        f"/v1/sessions/{session}/record",
        {"tool": "read_inbox", "arguments": {}, "result": [{"body": "refund 40 on 4411"}]},
    )
    assert recorded.status_code == 200, recorded.content
    answer = _post(
        client,
        f"/v1/sessions/{session}/check",
        {**REFUND, "agent": "billing", "context": {"order_paid": True}},
    ).json()
    assert answer["decision"] == "confirm" and "tainted_call" in answer["reasons"]
    assert Event.objects.get(source="toolcheck").agent == "billing"
    # desk does not reach refund_card; an agent the catalogue lacks is refused, and named
    assert _post(client, f"/v1/sessions/{session}/check", REFUND).json()["reasons"] == [
        "unknown_tool"
    ]
    stranger = _post(client, f"/v1/sessions/{session}/check", {**REFUND, "agent": "ghost"})
    assert stranger.json()["decision"] == "refuse"
    wrong = _post(client, f"/v1/sessions/{session}/record", {**REFUND, "agent": "ghost"})
    assert wrong.status_code == 400 and "agent" in wrong.json()


def test_the_undo_of_a_session_across_agents_names_the_agent_of_each_write(
    shop, editor, client_for
):
    client = client_for(editor)
    session = _open(client, shop, agent="desk")
    for tool, agent in (("get_order", None), ("charge_card", None), ("refund_card", "billing")):
        body = {"tool": tool, "arguments": {"order_id": "4411", "amount": 5.0}, "result": {}}
        if tool == "get_order":
            body["arguments"] = {"order_id": "4411"}
        if agent:
            body["agent"] = agent
        assert _post(client, f"/v1/sessions/{session}/record", body).status_code == 200
    steps = _post(client, f"/v1/sessions/{session}/undo", {}).json()["steps"]
    assert [(s["tool"], s["agent"]) for s in steps] == [
        ("refund_card", "billing"),
        ("charge_card", "desk"),
    ]


def test_the_same_call_asked_again_at_the_same_point_is_answered_with_its_request(
    shop, editor, approver, client_for
):
    from guard.models import ApprovalRequest

    client = client_for(editor)
    session = _open(client, shop)
    check = {**REFUND, "context": {"order_paid": True}}

    def asked():  # noqa: ANN202
        answer = _post(client, f"/v1/sessions/{session}/check", check).json()
        assert answer["decision"] == "confirm"
        return answer["approval"]

    first = asked()
    assert asked() == first  # open: the same request
    assert client_for(approver).post(f"/v1/approvals/{first}/approve").status_code == 200
    assert asked() == first  # approved, its token unspent: still the one that counts
    other = {**check, "arguments": {"order_id": "4411", "amount": 41.0}}
    assert _post(client, f"/v1/sessions/{session}/check", other).json()["approval"] != first
    _post(
        client,
        f"/v1/sessions/{session}/record",
        {"tool": "refund_card", "arguments": REFUND["arguments"], "result": {}},
    )
    later = asked()  # the history moved on: a new question
    assert later != first
    assert client_for(approver).post(f"/v1/approvals/{later}/deny").status_code == 200
    assert asked() != later  # a no is not carried over: the person is asked again
    assert ApprovalRequest.objects.count() == 4
