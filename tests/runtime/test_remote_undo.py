"""Undo last first against the console: the console plans the run's undo, the agent's process runs
it, each compensation checked by the console as the undo of its step and run once."""

from __future__ import annotations

import threading

import pytest

from stalwart_agents import Client

from .test_runtime_session import inbox_catalogue


@pytest.mark.django_db(transaction=True)
def test_a_refusal_against_the_console_undoes_the_runs_writes_last_first(
    live_server, admin, approver, organisation, actor_for, client_for
):
    from console import services as console_services

    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="undo", role="editor"
    )
    cancelled: list[str] = []
    session = Client(url=live_server.url, api_key=key).session(
        "assistant",
        catalogue=inbox_catalogue(),
        tools={"cancel_refund": lambda refund_id: cancelled.append(refund_id) or {"ok": True}},
    )
    session.read("refund 20 on order A1")
    read = session.execute("get_order", {"order_id": "A1"}, lambda order_id: {"order_id": order_id})
    assert read["outcome"] == "SUCCEEDED", read
    refund = {"order_id": "A1", "amount": 20}
    asked = session.execute("refund_card", refund, lambda **_: {"refund_id": "R1"})
    assert asked["outcome"] == "CONFIRM", asked
    threading.Timer(
        0.3, lambda: client_for(approver).post(f"/v1/approvals/{asked['approval']}/approve")
    ).start()
    token = session.wait_for_approval(asked, timeout=20, poll=0.1)
    ran = session.execute("refund_card", refund, lambda **_: {"refund_id": "R1"}, token=token)
    assert ran["outcome"] == "SUCCEEDED", ran
    refused = session.execute("delete_everything", {}, lambda **_: None)
    assert refused["outcome"] == "REFUSED" and refused["reasons"] == ["unknown_tool"]
    assert refused["undone"] == [
        {
            "index": 1,
            "tool": "refund_card",
            "status": "compensated",
            "compensation": "cancel_refund",
        }
    ]
    assert cancelled == ["R1"]
    # Undone once: the next refusal of the run finds nothing left to undo.
    assert "undone" not in session.execute("delete_everything", {}, lambda **_: None)
    # A new turn begins a new run.
    session.read("now something else")
    assert session.undo() == []
