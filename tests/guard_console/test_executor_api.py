"""The executor over the API: the SDK runs the tool, the console holds the controls and the ledger."""

from __future__ import annotations

import threading

import pytest

from guard.models import Effect
from tests.guard_console.test_approvals import REFUND, shop  # noqa: F401 - the fixture
from tests.guard_console.test_sessions_api import _open, _post

pytestmark = pytest.mark.django_db


@pytest.mark.django_db(transaction=True)
def test_the_sdk_runs_an_approved_refund_once(
    live_server,
    shop,  # noqa: F811
    admin,
    approver,
    organisation,
    actor_for,
    client_for,
):
    from console import services as console_services
    from guard.counters import counters
    from stalwart_agents import Client, Replayed

    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="rt", role="editor"
    )
    session = Client(url=live_server.url, api_key=key).session(
        "billing", catalogue=shop[0], rulebook=shop[1]
    )
    refunds: dict[str, dict] = {}

    def refund_card(arguments, context):  # noqa: ANN001, ANN202
        if context.key in refunds:
            return Replayed(refunds[context.key])
        refunds[context.key] = {"refunded": arguments["amount"], "tenant": context.tenant}
        return refunds[context.key]

    call = dict(origins=REFUND["origins"], context=REFUND["context"])
    asked = session.execute("refund_card", REFUND["arguments"], refund_card, **call)
    assert asked["outcome"] == "CONFIRM" and "argument_origin: amount" in asked["reasons"]
    threading.Timer(
        0.3, lambda: client_for(approver).post(f"/v1/approvals/{asked['approval']}/approve")
    ).start()
    token = session.wait_for_approval(asked, timeout=20, poll=0.1)
    done = session.execute("refund_card", REFUND["arguments"], refund_card, token=token, **call)
    assert done["outcome"] == "SUCCEEDED", done
    assert done["result"] == {"refunded": 40.0, "tenant": "acme"}
    again = session.execute("refund_card", REFUND["arguments"], refund_card, token=token, **call)
    assert again["outcome"] == "SUCCEEDED" and again["duplicate"] is True
    assert len(refunds) == 1
    panel = counters(organisation)["refund_card"]
    assert (panel["effects"], panel["duplicates_suppressed"]) == (1, 1)


def test_a_report_must_name_the_call_that_was_begun(shop, editor, approver, client_for):  # noqa: F811
    client = client_for(editor)
    session = _open(client, shop)
    begun = _post(client, f"/v1/sessions/{session}/execute", REFUND).json()
    assert begun["outcome"] == "CONFIRM"
    client_for(approver).post(f"/v1/approvals/{begun['approval']}/approve")
    token = client.get(f"/v1/approvals/{begun['approval']}").json()["token"]
    run = _post(client, f"/v1/sessions/{session}/execute", {**REFUND, "token": token}).json()
    assert run["outcome"] == "RUN" and run["tenant"] == "acme" and run["key"].startswith("ik1-")
    report = {"tool": "refund_card", "arguments": REFUND["arguments"], "key": run["key"]}
    other = {**report, "arguments": {"order_id": "4411", "amount": 400.0}, "result": {}}
    wrong = _post(client, f"/v1/sessions/{session}/effects", other)
    assert wrong.status_code == 400 and "key" in wrong.json()
    both = _post(client, f"/v1/sessions/{session}/effects", {**report, "result": {}, "failed": "x"})
    assert both.status_code == 400 and "result" in both.json()
    unknown = _post(client, f"/v1/sessions/{session}/effects", {**report, "result": {}, "nope": 1})
    assert unknown.status_code == 400 and "nope" in unknown.json()
    assert Effect.objects.get().status == "claimed"
    ok = _post(client, f"/v1/sessions/{session}/effects", {**report, "result": {"ok": True}})
    assert ok.json()["outcome"] == "SUCCEEDED"
    twice = _post(client, f"/v1/sessions/{session}/effects", {**report, "result": {"ok": True}})
    assert twice.json()["duplicate"] is True
    assert Effect.objects.get().status == "done"


def test_an_auditor_cannot_execute(shop, editor, auditor, client_for):  # noqa: F811
    session = _open(client_for(editor), shop)
    assert _post(client_for(auditor), f"/v1/sessions/{session}/execute", REFUND).status_code == 403


def test_another_organisation_cannot_execute_in_the_session(shop, editor, outsider, client_for):  # noqa: F811
    session = _open(client_for(editor), shop)
    answer = _post(client_for(outsider), f"/v1/sessions/{session}/execute", REFUND)
    assert answer.status_code == 404
