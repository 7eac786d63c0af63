"""Approvals: a confirm waits for a person; one answer, never by the asker, never after expiry."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from console.models import AuditRow, Event
from guard.models import ApprovalRequest
from tests.guard_console.test_sessions_api import _open, _post

pytestmark = pytest.mark.django_db

REFUND = {
    "tool": "refund_card",
    "arguments": {"order_id": "4411", "amount": 40.0},
    "origins": {"order_id": "typed", "amount": "model"},
    "context": {"order_paid": True},
}


@pytest.fixture
def pending(shop, editor, client_for):
    client = client_for(editor)
    session = _open(client, shop)
    body = _post(client, f"/v1/sessions/{session}/check", REFUND).json()
    assert body["decision"] == "confirm" and "argument_origin: amount" in body["reasons"]
    return session, body["approval"], client


@pytest.fixture(scope="module")
def shop():
    from stalwart_agents import Agent
    from tests.guard_console.test_sessions_api import SHOP

    desk = Agent.from_file(SHOP)
    return desk.catalogue(), desk.rules().record


def test_an_approval_signs_a_token_that_lets_exactly_that_call_run(pending, approver, client_for):
    session, approval, editor_client = pending
    answer = client_for(approver).post(f"/v1/approvals/{approval}/approve")
    assert answer.status_code == 200, answer.content
    token = editor_client.get(f"/v1/approvals/{approval}").json()["token"]
    assert token
    again = _post(editor_client, f"/v1/sessions/{session}/check", {**REFUND, "token": token})
    assert (again.json()["decision"], again.json()["reasons"]) == ("allow", ["confirmed"])
    changed = {**REFUND, "arguments": {"order_id": "4411", "amount": 400.0}, "token": token}
    refused = _post(editor_client, f"/v1/sessions/{session}/check", changed).json()
    assert refused["decision"] == "refuse"
    assert AuditRow.objects.filter(action="approval.approved").count() == 1
    assert token not in json.dumps(list(AuditRow.objects.values_list("changes", flat=True)))


def test_a_second_answer_changes_nothing(pending, approver, admin, client_for):
    _, approval, _ = pending
    assert client_for(approver).post(f"/v1/approvals/{approval}/approve").status_code == 200
    second = client_for(admin).post(f"/v1/approvals/{approval}/deny")
    assert second.status_code == 409
    assert ApprovalRequest.objects.get().status == "approved"


def test_nobody_approves_a_call_they_asked_for(pending, editor, approver, organisation, client_for):
    from console.models import Membership

    _, approval, client = pending
    Membership.objects.filter(user=editor).update(role="approver")
    response = client.post(f"/v1/approvals/{approval}/approve")
    assert response.status_code == 403
    assert ApprovalRequest.objects.get().status == "pending"


def test_an_auditor_cannot_approve(pending, auditor, client_for):
    _, approval, _ = pending
    assert client_for(auditor).post(f"/v1/approvals/{approval}/approve").status_code == 403


def test_an_expired_request_cannot_be_approved(pending, approver, client_for):
    _, approval, _ = pending
    ApprovalRequest.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    response = client_for(approver).post(f"/v1/approvals/{approval}/approve")
    assert response.status_code == 409
    assert ApprovalRequest.objects.get().status == "expired"


def test_a_denial_counts_and_nothing_runs(pending, approver, client_for):
    session, approval, client = pending
    client_for(approver).post(f"/v1/approvals/{approval}/deny")
    assert client.get(f"/v1/approvals/{approval}").json()["token"] is None
    denied = Event.objects.get(source="approval")
    assert (denied.decision, denied.reasons) == ("refuse", ["confirmation_denied"])


def test_the_queue_page_shows_where_each_value_came_from(pending, approver, client_for):
    page = client_for(approver).get("/approvals/")
    content = page.content.decode()
    assert 'data-argument="amount" data-origin="model"' in content
    assert "written by the model" in content and "typed by the person" in content
    assert "argument_origin: amount" in content


def test_the_page_answers_and_refuses_the_asker(pending, approver, editor, client_for):
    _, approval, _ = pending
    response = client_for(approver).post(f"/approvals/{approval}/approve")
    assert response.status_code == 302
    assert ApprovalRequest.objects.get().status == "approved"


def test_another_organisation_cannot_see_the_request(pending, outsider, client_for):
    _, approval, _ = pending
    assert client_for(outsider).get(f"/v1/approvals/{approval}").status_code == 404
    assert client_for(outsider).post(f"/approvals/{approval}/approve").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_the_sdk_waits_for_the_answer_and_checks_again_with_the_token(
    live_server, shop, admin, approver, organisation, actor_for, client_for
):
    import threading

    from console import services as console_services
    from stalwart_agents import ApprovalDenied, Client

    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="rt", role="editor"
    )
    client = Client(url=live_server.url, api_key=key)
    session = client.session("billing", catalogue=shop[0], rulebook=shop[1])
    arguments = REFUND["arguments"]
    check = session.check_tool_call(
        "refund_card", arguments, origins=REFUND["origins"], context=REFUND["context"]
    )
    assert check.decision == "confirm" and check.approval
    threading.Timer(
        0.5, lambda: client_for(approver).post(f"/v1/approvals/{check.approval}/approve")
    ).start()
    token = session.wait_for_approval(check, timeout=20, poll=0.2)
    again = session.check_tool_call(
        "refund_card", arguments, origins=REFUND["origins"], context=REFUND["context"], token=token
    )
    assert (again.decision, again.reasons) == ("allow", ["confirmed"])

    second = session.check_tool_call(
        "refund_card",
        {**arguments, "amount": 41.0},
        origins=REFUND["origins"],
        context=REFUND["context"],
    )
    answers = []
    done = session.on_approval(
        second, lambda token, status: answers.append((token, status)), timeout=20
    )
    client_for(approver).post(f"/v1/approvals/{second.approval}/deny")
    done.join(timeout=20)
    assert answers == [(None, "the call was denied")]
    with pytest.raises(ApprovalDenied):
        session.wait_for_approval(second, timeout=5, poll=0.2)


def test_a_call_the_firewall_holds_is_released_by_its_approval(editor, approver, client_for):
    client = client_for(editor)
    created = _post(
        client,
        "/v1/firewall/policies",
        {
            "name": "p",
            "default_verdict": "allow",
            "rules": [
                {
                    "priority": 1,
                    "name": "wires need a person",
                    "tool_name_glob": "bank.*",
                    "verdict": "require_approval",
                }
            ],
        },
    )
    assert (
        _post(client, f"/v1/firewall/policies/{created.json()['id']}/publish", {}).status_code
        == 201
    )
    call = {
        "tool": "bank.wire",
        "agent": "desk",
        "session": "s9",
        "arguments": {"to": "DE00", "amount": 900},
    }
    held = _post(client, "/v1/firewall/evaluate", call).json()
    assert (held["decision"], held["verdict"]) == ("confirm", "require_approval")
    assert client_for(approver).post(f"/v1/approvals/{held['approval']}/approve").status_code == 200
    token = client.get(f"/v1/approvals/{held['approval']}").json()["token"]
    ran = _post(client, "/v1/firewall/evaluate", {**call, "token": token}).json()
    assert (ran["decision"], ran["reasons"][-1]) == ("allow", "confirmed")
    other = _post(
        client,
        "/v1/firewall/evaluate",
        {**call, "arguments": {"to": "DE00", "amount": 9000}, "token": token},
    ).json()
    assert (other["decision"], other["reasons"]) == ("refuse", ["token_mismatch"])
    # The last two characters changed to two that differ from them, so the forgery never
    # equals the token (a token ending in "00" made the old forgery the token itself).
    twisted = "".join("1" if c == "0" else "0" for c in token[-2:])
    forged = _post(client, "/v1/firewall/evaluate", {**call, "token": token[:-2] + twisted}).json()
    assert forged["reasons"] == ["token_invalid"]


def test_the_queue_page_asks_the_catalogues_question_in_the_organisations_language(
    pending, approver, organisation, client_for
):
    from console.models import OrganisationSettings

    english = client_for(approver).get("/approvals/").content.decode()
    assert (
        "Refunds an amount of an order to the card it was paid with (order id 4411 and amount "
        "40.00). Shall I go ahead?"
    ) in english
    OrganisationSettings.objects.filter(organisation=organisation).update(language="pt-BR")
    portuguese = client_for(approver).get("/approvals/").content.decode()
    assert "(pedido 4411 e valor 40,00). Posso seguir?" in portuguese
    assert "com order_id" not in portuguese


def test_the_queue_page_shows_the_oldest_requests_and_counts_the_rest(
    editor, approver, organisation, client_for, actor_for
):
    # A runtime in a loop files requests faster than people answer them: the page (polled every
    # 3 s) draws a bounded number of cards, never the whole queue.
    from guard import approvals
    from guard.views import QUEUE_SHOWN

    actor = actor_for(editor, organisation)
    for n in range(QUEUE_SHOWN + 7):
        approvals.runtime_request_create(
            actor=actor,
            data={
                "agent": "desk",
                "session": "s-1",
                "call": {"tool": f"refund_{n}", "arguments": {"order_id": str(n)}},
                "history_at": 0,
            },
        )
    page = client_for(approver).get("/approvals/").content.decode()
    assert page.count('class="card approval"') == QUEUE_SHOWN
    assert 'data-tool="refund_0"' in page  # the oldest first
    assert 'id="queue-more">7 more calls are waiting' in page
