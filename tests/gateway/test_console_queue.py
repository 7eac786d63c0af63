"""Against the console (STALWART_URL): a gateway's confirm waits in the approvals queue.

The gateway's session is the console's; a write the check confirms is not forwarded until an
approver answers in the queue, and then exactly once, with the token the approval signed. A
denial forwards nothing.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import pytest

from tests.gateway.conftest import calls_of, server_block

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_confirm_waits_for_the_console_queue_and_runs_once_approved(
    live_server, admin, approver, organisation, actor_for, client_for, tmp_path, monkeypatch
):  # noqa: ANN001
    from console import services as console_services
    from guard.models import ApprovalRequest
    from stalwart_agents import Client, cli
    from stalwart_agents.gateway import Gateway, load_config

    calls = tmp_path / "calls.txt"
    calls.write_text("", encoding="utf-8")
    monkeypatch.setenv("GATEWAY_TEST_CALLS", str(calls))
    config_path = tmp_path / "gateway.yaml"
    config_path.write_text("agent: desk\napproval_timeout: 30\nservers:\n" + server_block("shop"))
    assert cli.main(["gateway", "approve", "--config", str(config_path)]) == 0
    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="gateway", role="editor"
    )
    approvals = client_for(approver)

    def answer(verb: str) -> None:
        from django.db import connection

        try:
            for _ in range(200):
                pending = ApprovalRequest.objects.filter(status="pending").first()
                if pending is not None:
                    approvals.post(f"/v1/approvals/{pending.public_id}/{verb}")
                    return
                threading.Event().wait(0.1)
        finally:
            connection.close()  # this thread's own connection: the test database can be dropped

    async def run() -> tuple:
        gateway = Gateway(load_config(config_path), client=Client(live_server.url, key))
        async with gateway:
            assert gateway.session is not None, gateway.session_error
            yes = threading.Thread(target=answer, args=("approve",))
            yes.start()
            approved = await gateway.call_tool("shop.refund_card", {"order_id": "A7", "amount": 7})
            yes.join()
            no = threading.Thread(target=answer, args=("deny",))
            no.start()
            denied = await gateway.call_tool("shop.refund_card", {"order_id": "A8", "amount": 8})
            no.join()
            return approved, denied

    approved, denied = anyio.run(run)
    assert not approved.is_error, approved.content
    assert denied.is_error and "not approved" in denied.content[0].text
    refunds = [arguments for _, tool, arguments in calls_of(calls) if tool == "refund_card"]
    assert refunds == [{"amount": 7, "order_id": "A7"}]


def test_calls_waiting_in_the_console_queue_do_not_stall_the_gateway(
    live_server, admin, organisation, actor_for, tmp_path, monkeypatch
):  # noqa: ANN001
    """Each call held for a person waits in the console's queue on a worker thread, for up to
    `approval_timeout`. A client that sends many held calls at once (or a model told to by what
    it read) must not take every worker thread the gateway has: a read, checked by the console
    on a worker thread too, is still answered at once, and a held call past the bound is refused
    at once rather than left waiting."""
    from console import services as console_services
    from stalwart_agents import Client, cli
    from stalwart_agents.gateway import Gateway, load_config
    from stalwart_agents.gateway.core import MAX_WAITING

    calls = tmp_path / "calls.txt"
    calls.write_text("", encoding="utf-8")
    monkeypatch.setenv("GATEWAY_TEST_CALLS", str(calls))
    config_path = tmp_path / "gateway.yaml"
    config_path.write_text("agent: desk\napproval_timeout: 30\nservers:\n" + server_block("shop"))
    assert cli.main(["gateway", "approve", "--config", str(config_path)]) == 0
    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="gateway", role="editor"
    )
    held = 45  # more than anyio's default 40 worker threads

    async def run() -> tuple[Any, float, list[Any]]:
        gateway = Gateway(load_config(config_path), client=Client(live_server.url, key))
        refused: list[Any] = []
        async with gateway, anyio.create_task_group() as group:
            assert gateway.session is not None, gateway.session_error

            async def hold(number: int) -> None:
                result = await gateway.call_tool(
                    "shop.refund_card", {"order_id": f"H{number}", "amount": 1}
                )
                refused.append(result)

            for number in range(held):
                group.start_soon(hold, number)
            await anyio.sleep(8)  # every held call has been checked, and waits or was refused
            started = time.monotonic()
            with anyio.move_on_after(20):
                read = await gateway.call_tool("shop.get_order", {"order_id": "R1"})
            took = time.monotonic() - started
            group.cancel_scope.cancel()
        return (read if took < 20 else None), took, refused

    read, took, refused = anyio.run(run)
    assert read is not None and not read.is_error, f"the read waited {took:.1f} s"
    assert took < 5, f"the read waited {took:.1f} s behind the calls held for a person"
    # the rest waited in the queue until nobody answered them (approval_timeout)
    at_once = [r for r in refused if "wait for a person" in r.content[0].text]
    assert len(at_once) == held - MAX_WAITING
    assert all(result.is_error for result in refused)
    assert not [c for c in calls_of(calls) if c[1] == "refund_card"]
