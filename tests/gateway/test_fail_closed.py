"""Fail closed: a console that cannot answer, a firewall that cannot answer: no call is made."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from stalwart_agents import Client
from stalwart_agents.gateway import Gateway
from stalwart_agents.gateway.config import read_config
from tests.gateway.conftest import free_port


def _config(tmp_path: Path, **top):  # noqa: ANN003, ANN201
    servers = {"down": {"url": f"http://127.0.0.1:{free_port()}/mcp", "timeout": 5}}
    return read_config({"servers": servers, **top}, base=tmp_path)


def test_a_console_that_cannot_answer_means_no_call_and_says_why(tmp_path: Path) -> None:
    async def run():  # noqa: ANN202
        console = Client(f"http://127.0.0.1:{free_port()}", "key", timeout=2)
        async with Gateway(_config(tmp_path), client=console) as gateway:
            return gateway, await gateway.call_tool("down.anything", {})

    gateway, result = anyio.run(run)
    assert gateway.session is None
    assert result.is_error
    assert "cannot answer" in result.content[0].text
    assert result.structured_content["stalwart"]["reasons"] == ["selector_unavailable"]


def test_an_unreachable_server_is_named_with_why(tmp_path: Path) -> None:
    async def run():  # noqa: ANN202
        async with Gateway(_config(tmp_path)) as gateway:
            return await gateway.call_tool("down.anything", {})

    result = anyio.run(run)
    assert result.is_error
    assert "the server `down` cannot be reached" in result.content[0].text


def test_a_firewall_file_that_is_not_a_policy_refuses_every_call(tmp_path: Path) -> None:
    (tmp_path / "firewall.json").write_text(json.dumps({"rules": "nope"}), encoding="utf-8")

    async def run():  # noqa: ANN202
        async with Gateway(_config(tmp_path, firewall="firewall.json")) as gateway:
            return gateway, await gateway.call_tool("down.anything", {})

    gateway, result = anyio.run(run)
    assert gateway.firewall_error and "firewall cannot answer" in gateway.firewall_error
    assert result.is_error
    assert result.structured_content["stalwart"]["reasons"] == ["firewall_unavailable"]


def test_an_unaskable_write_is_not_made_and_a_server_that_dies_is_named(tmp_path: Path) -> None:
    import os
    import signal

    from stalwart_agents import cli
    from tests.gateway.conftest import server_block

    calls = tmp_path / "calls.txt"
    calls.write_text("", encoding="utf-8")
    path = tmp_path / "gateway.yaml"
    path.write_text(
        "servers:\n" + server_block("shop").replace("${GATEWAY_TEST_CALLS}", str(calls))
    )
    assert cli.main(["gateway", "approve", "--config", str(path)]) == 0

    async def run():  # noqa: ANN202
        from stalwart_agents.gateway import load_config

        async with Gateway(load_config(path)) as gateway:
            # A write nobody can be asked about (no elicitation, no console) is not made.
            unasked = await gateway.call_tool("shop.refund_card", {"order_id": "A1", "amount": 1})
            assert unasked.is_error and "nobody can be asked" in unasked.content[0].text
            assert calls.read_text(encoding="utf-8") == ""
            pid = await gateway.call_tool("shop.server_pid", {})
            assert not pid.is_error, pid.content
            os.kill(int(pid.content[0].text), signal.SIGKILL)  # the server this test started
            with anyio.fail_after(40):
                return await gateway.call_tool("shop.get_order", {"order_id": "A1"})

    result = anyio.run(run)
    assert result.is_error
    assert result.structured_content["stalwart"]["reasons"] == ["failed"]
    assert result.content[0].text == (
        "`shop.get_order` did not complete on `shop`: Connection closed (failed)"
    )


def test_a_server_killed_mid_session_is_started_again_on_the_next_call_with_backoff(
    tmp_path: Path,
) -> None:
    import os
    import signal

    from stalwart_agents import cli
    from stalwart_agents.gateway import load_config, upstream
    from tests.gateway.conftest import server_block

    calls, off = tmp_path / "calls.txt", tmp_path / "switched-off"
    calls.write_text("", encoding="utf-8")
    block = server_block("shop").replace("${GATEWAY_TEST_CALLS}", str(calls))
    block = block.replace("'}\n", f"', GATEWAY_TEST_DOWN: '{off}'}}\n")
    path = tmp_path / "gateway.yaml"
    path.write_text("servers:\n" + block)
    assert cli.main(["gateway", "approve", "--config", str(path)]) == 0

    async def pid_of(gateway: Gateway) -> int:
        result = await gateway.call_tool("shop.server_pid", {})
        assert not result.is_error, result.content
        return int(result.content[0].text)

    async def run() -> None:
        async with Gateway(load_config(path)) as gateway:
            first = await pid_of(gateway)
            os.kill(first, signal.SIGKILL)  # the server this test started
            off.write_text("", encoding="utf-8")  # and it cannot be started again, for now
            with anyio.fail_after(40):
                lost = await gateway.call_tool("shop.get_order", {"order_id": "A1"})
            assert lost.is_error and "Connection closed" in lost.content[0].text
            # The next call tries to start it again at once: it fails closed, saying why.
            again = await gateway.call_tool("shop.get_order", {"order_id": "A2"})
            assert again.is_error
            assert again.structured_content["stalwart"]["reasons"] == ["upstream_unavailable"]
            assert "the server `shop` cannot be reached" in again.content[0].text
            # Within the backoff no attempt is made: the same refusal, and when it is tried again.
            shop = gateway.upstreams["shop"]
            tried = shop.failures
            waiting = await gateway.call_tool("shop.get_order", {"order_id": "A3"})
            assert waiting.is_error and "the next attempt in" in waiting.content[0].text
            assert shop.failures == tried
            assert calls.read_text(encoding="utf-8") == "", "nothing reached a server while down"
            # Switched on again and past the backoff: the next call starts it and is made.
            off.unlink()
            await anyio.sleep(max(0.0, shop.next_attempt - time.monotonic()) + 0.1)
            with anyio.fail_after(40):
                second = await pid_of(gateway)
            assert second != first and shop.connections == 2
            made = await gateway.call_tool("shop.get_order", {"order_id": "A4"})
            assert not made.is_error, made.content
            assert calls.read_text(encoding="utf-8").splitlines() == [
                'shop get_order {"order_id": "A4"}'
            ]

    import time

    assert upstream.BACKOFF >= 1.0
    anyio.run(run)
