"""`execute_async`: the executor's rules for a coroutine tool, on the caller's event loop.

The MCP gateway runs every call this way (no thread per call), so it must keep every rule of
`execute`: a refusal or a confirm never awaits the tool, a write runs only with the person's
token, what ran is recorded in the signed history, and a tool's error is a `FAILED` outcome.
"""

from __future__ import annotations

import anyio

from stalwart_agents import Client
from tests.guard.engine.conftest import lab_catalogue


def test_execute_async_keeps_the_executors_rules() -> None:
    session = Client(url="").session("assistant", catalogue=lab_catalogue())
    awaited: list[tuple[str, dict]] = []

    def tool(name: str):  # noqa: ANN202
        async def run(arguments: dict, context) -> dict:  # noqa: ANN001
            await anyio.sleep(0)
            awaited.append((name, arguments))
            if arguments.get("order_id") == "boom":
                raise RuntimeError("the shop is closed")
            return {"order_id": arguments.get("order_id"), "ok": True}

        return run

    async def run() -> dict:
        outcomes = {}
        before = len(session.history)
        outcomes["read"] = await session.execute_async(
            "get_order", {"order_id": "A1"}, tool("get_order")
        )
        outcomes["recorded"] = len(session.history) - before
        outcomes["unknown"] = await session.execute_async("drop_tables", {}, tool("drop_tables"))
        refund = {"order_id": "A1", "amount": 20}
        outcomes["unasked"] = await session.execute_async("refund_card", refund, tool("refund"))
        check = session.check_tool_call("refund_card", refund)
        token = session.approve(check)
        outcomes["approved"] = await session.execute_async(
            "refund_card", refund, tool("refund"), token=token
        )
        outcomes["failed"] = await session.execute_async(
            "get_order", {"order_id": "boom"}, tool("get_order")
        )
        return outcomes

    outcomes = anyio.run(run)
    assert outcomes["read"]["outcome"] == "SUCCEEDED" and outcomes["recorded"] == 1
    assert outcomes["read"]["result"] == {"order_id": "A1", "ok": True}
    assert outcomes["unknown"]["outcome"] == "REFUSED"
    assert outcomes["unasked"]["outcome"] == "CONFIRM"
    assert outcomes["approved"]["outcome"] == "SUCCEEDED" and outcomes["approved"]["key"]
    assert outcomes["failed"]["outcome"] == "FAILED"
    assert "the shop is closed" in outcomes["failed"]["detail"]["error"]
    assert awaited == [
        ("get_order", {"order_id": "A1"}),
        ("refund", {"order_id": "A1", "amount": 20}),
        ("get_order", {"order_id": "boom"}),
    ]
