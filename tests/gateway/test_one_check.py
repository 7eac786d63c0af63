"""The gateway checks each `tools/call` once: the executor's check is the call's one check.

A real MCP client (the SDK's, connected in process to the gateway's MCP server) through the
gateway to a real MCP server (a subprocess). In this process the runtime's check is counted by
wrapping the session's own `check_call`; against a live console, a proxy in front of it counts the
requests that decide a call, and the console's feed its `toolcheck` events. An allowed read is one
check, forwarded once; a refused call is one check, never forwarded, with its reasons; a confirm
is the check that asks and the check with the person's token, and runs once.
"""

from __future__ import annotations

import re
from typing import Any

import anyio
import mcp
import mcp_types as types
import pytest

from tests.gateway.conftest import calls_of, server_block

#: The question a person is shown for the refund below (as every door asks it, then the call).
REFUND_QUESTION = (
    "Refund an amount to the card an order was paid with (order Id A1 and amount 20). "
    "Shall I go ahead?\n"
    "Stalwart holds a call for your yes: shop.refund_card\n"
    "Why: argument_origin: amount, argument_origin: order_id\n"
    "Arguments:\n"
    '  order_id = "A1"  (written by the model)\n'
    "  amount = 20  (written by the model)\n"
    "Yes runs it once, with exactly these arguments; no runs nothing."
)


class Person:
    """The elicitation callback: says yes, and keeps what it was shown."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, ctx: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})


def text(result: types.CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def _approved(tmp_path, monkeypatch):  # noqa: ANN001, ANN202
    from stalwart_agents import cli
    from stalwart_agents.gateway import load_config

    calls = tmp_path / "calls.txt"
    calls.write_text("", encoding="utf-8")
    monkeypatch.setenv("GATEWAY_TEST_CALLS", str(calls))
    path = tmp_path / "gateway.yaml"
    path.write_text("agent: desk\napproval_timeout: 30\nservers:\n" + server_block("shop"))
    assert cli.main(["gateway", "approve", "--config", str(path)]) == 0
    return load_config(path), calls


def test_in_process_each_call_is_checked_once_by_the_runtime(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    from stalwart_agents import Client
    from stalwart_agents.gateway import Gateway
    from stalwart_agents.gateway.server import build_server

    for name in ("STALWART_URL", "STALWART_API_KEY", "STALWART_DECIDE"):
        monkeypatch.delenv(name, raising=False)
    config, calls = _approved(tmp_path, monkeypatch)
    person = Person()
    checked: list[tuple[str, bool]] = []

    async def run() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Gateway(config, client=Client()) as gateway:
            runtime = gateway.session.runtime
            check_call = runtime.check_call

            def counted(call: Any, **options: Any) -> Any:
                checked.append((str(call["tool"]), bool(options.get("token"))))
                return check_call(call, **options)

            runtime.check_call = counted  # this session's own check, counted where it runs
            async with mcp.Client(build_server(gateway), elicitation_callback=person) as client:
                seen["read"] = await client.call_tool("shop.get_order", {"order_id": "A1"})
                seen["read checks"], checked[:] = list(checked), []
                seen["refund"] = await client.call_tool(
                    "shop.refund_card", {"order_id": "A1", "amount": 20}
                )
                seen["refund checks"], checked[:] = list(checked), []
                writes = list(runtime.run_writes)
                seen["rejected"] = await client.call_tool(
                    "shop.refund_card", {"order_id": "A2", "amount": "lots"}
                )
                seen["rejected checks"], checked[:] = list(checked), []
                # The refusal undid nothing: the call was never made, as when the gateway
                # refused it before the executor.
                seen["writes kept"] = runtime.run_writes == writes and bool(writes)
                seen["unknown"] = await client.call_tool("shop.delete_everything", {})
                seen["unknown checks"] = list(checked)
        return seen

    seen = anyio.run(run)
    assert not seen["read"].is_error, text(seen["read"])
    assert seen["read checks"] == [("shop.get_order", False)]
    assert [c for c in calls_of(calls) if c[1] == "get_order"] == [
        ("shop", "get_order", {"order_id": "A1"})
    ]

    # A confirm: the check that asks, the person, then the check with the token; run once.
    assert not seen["refund"].is_error, text(seen["refund"])
    assert seen["refund checks"] == [("shop.refund_card", False), ("shop.refund_card", True)]
    assert person.asked == [REFUND_QUESTION]
    assert [c for c in calls_of(calls) if c[1] == "refund_card"] == [
        ("shop", "refund_card", {"amount": 20, "order_id": "A1"})
    ]

    # A refused call: one check, never forwarded, the MCP tool error naming the reasons.
    rejected = seen["rejected"]
    assert rejected.is_error and "`shop.refund_card` is refused (" in text(rejected)
    reasons = rejected.structured_content["stalwart"]["reasons"]
    assert reasons and all(r.startswith("argument_schema") for r in reasons), reasons
    assert seen["rejected checks"] == [("shop.refund_card", False)]
    assert not [c for c in calls_of(calls) if c[2].get("order_id") == "A2"]
    assert seen["writes kept"]
    assert len(person.asked) == 1

    # A tool no server offers: the check refuses it, once.
    unknown = seen["unknown"]
    assert unknown.is_error and "`shop.delete_everything` is refused (unknown_tool" in text(unknown)
    assert seen["unknown checks"] == [("shop.delete_everything", False)]


DECIDES = re.compile(r"/v1/sessions/[^/?]+/(check|execute)")


@pytest.mark.django_db(transaction=True)
def test_against_the_console_a_call_is_one_check_request_and_one_toolcheck_event(
    live_server, admin, organisation, actor_for, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    from console import services as console_services
    from console.models import Event
    from stalwart_agents import Client
    from stalwart_agents.gateway import Gateway
    from stalwart_agents.gateway.server import build_server
    from tests.runtime.console_proxy import ConsoleProxy

    config, calls = _approved(tmp_path, monkeypatch)
    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="gateway", role="editor"
    )
    proxy = ConsoleProxy(live_server.url)

    def deciding(since: int) -> list[str]:
        return [path for _, path in proxy.requests[since:] if DECIDES.fullmatch(path)]

    async def run() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Gateway(config, client=Client(proxy.url, key)) as gateway:
            assert gateway.session is not None, gateway.session_error
            seen["session"] = gateway.session.id
            async with mcp.Client(build_server(gateway)) as client:
                at = len(proxy.requests)
                seen["read"] = await client.call_tool("shop.get_order", {"order_id": "A1"})
                seen["read requests"] = deciding(at)
                at = len(proxy.requests)
                seen["rejected"] = await client.call_tool(
                    "shop.refund_card", {"order_id": "A2", "amount": "lots"}
                )
                seen["rejected requests"] = deciding(at)
                seen["undo requests"] = [p for _, p in proxy.requests[at:] if "/undo" in p]
        return seen

    try:
        seen = anyio.run(run)
    finally:
        proxy.down()
    execute = f"/v1/sessions/{seen['session']}/execute"
    assert not seen["read"].is_error, text(seen["read"])
    assert seen["read requests"] == [execute]
    reads = Event.objects.filter(source="toolcheck", tool="shop.get_order")
    assert reads.count() == 1 and reads.get().decision == "allow"
    assert [c for c in calls_of(calls) if c[1] == "get_order"] == [
        ("shop", "get_order", {"order_id": "A1"})
    ]

    rejected = seen["rejected"]
    assert rejected.is_error and "`shop.refund_card` is refused (" in text(rejected)
    assert rejected.structured_content["stalwart"]["reasons"]
    assert seen["rejected requests"] == [execute] and seen["undo requests"] == []
    refunds = Event.objects.filter(source="toolcheck", tool="shop.refund_card")
    assert refunds.count() == 1 and refunds.get().decision == "refuse"
    assert not [c for c in calls_of(calls) if c[1] == "refund_card"]
