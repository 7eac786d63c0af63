"""An upstream over streamable HTTP: headers filled from the environment, never logged."""

from __future__ import annotations

import logging
import subprocess
import sys
import time

import anyio

from stalwart_agents import cli
from stalwart_agents.gateway import Gateway, load_config
from tests.gateway.conftest import ROOT, free_port

SECRET = "tok-s3cret-42"


def test_headers_come_from_the_environment_and_never_reach_a_log(
    tmp_path, monkeypatch, caplog, capsys
) -> None:  # noqa: ANN001
    port = free_port()
    server = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "tests.gateway.servers", "web", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import socket

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert server.poll() is None, "the HTTP server exited"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.2)
        monkeypatch.setenv("GATEWAY_TEST_TOKEN", SECRET)
        path = tmp_path / "gateway.yaml"
        path.write_text(
            "servers:\n  web:\n"
            f"    url: http://127.0.0.1:{port}/mcp\n"
            "    headers: {Authorization: 'Bearer ${GATEWAY_TEST_TOKEN}'}\n",
            encoding="utf-8",
        )
        assert SECRET not in path.read_text(encoding="utf-8")
        assert cli.main(["gateway", "approve", "--config", str(path), "--verbose"]) == 0
        caplog.set_level(logging.DEBUG)

        async def run():  # noqa: ANN202
            async with Gateway(load_config(path)) as gateway:
                return await gateway.call_tool("web.whoami", {})

        result = anyio.run(run)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert not result.is_error, result.content
    assert result.content[0].text == "authorised"
    captured = capsys.readouterr()
    assert SECRET not in caplog.text + captured.out + captured.err
    assert SECRET not in (tmp_path / "gateway.pins.json").read_text(encoding="utf-8")


def _serve_web(port: int) -> subprocess.Popen:
    import socket

    server = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "tests.gateway.servers", "web", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert server.poll() is None, "the HTTP server exited"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise AssertionError("the HTTP server did not listen")


def test_an_http_server_that_goes_away_is_reached_again_when_it_is_back(
    tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    port = free_port()
    monkeypatch.setenv("GATEWAY_TEST_TOKEN", SECRET)
    path = tmp_path / "gateway.yaml"
    path.write_text(
        f"servers:\n  web:\n    url: http://127.0.0.1:{port}/mcp\n    timeout: 10\n"
        "    headers: {Authorization: 'Bearer ${GATEWAY_TEST_TOKEN}'}\n",
        encoding="utf-8",
    )
    servers = [_serve_web(port)]
    try:
        assert cli.main(["gateway", "approve", "--config", str(path)]) == 0

        async def run() -> list:
            seen = []
            async with Gateway(load_config(path)) as gateway:
                seen.append(await gateway.call_tool("web.whoami", {}))
                servers[0].kill()  # the server this test started goes away
                servers[0].wait(timeout=10)
                with anyio.fail_after(60):
                    seen.append(await gateway.call_tool("web.whoami", {}))  # meets it gone
                    seen.append(await gateway.call_tool("web.whoami", {}))  # cannot reach it
                servers.append(await anyio.to_thread.run_sync(_serve_web, port))  # back
                web = gateway.upstreams["web"]
                await anyio.sleep(max(0.0, web.next_attempt - time.monotonic()) + 0.1)
                with anyio.fail_after(60):
                    seen.append(await gateway.call_tool("web.whoami", {}))
                seen.append(web.connections)
            return seen

        first, gone, down, back, connections = anyio.run(run)
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=10)
    assert not first.is_error and first.content[0].text == "authorised"
    assert gone.is_error and down.is_error
    assert down.structured_content["stalwart"]["reasons"] == ["upstream_unavailable"]
    assert "the server `web`" in down.content[0].text
    assert not back.is_error, back.content
    assert back.content[0].text == "authorised" and connections == 2


def test_a_header_value_that_cannot_be_sent_is_refused_without_showing_it(
    tmp_path, monkeypatch, caplog, capsys
) -> None:  # noqa: ANN001
    """A header filled from the environment with a value HTTP cannot carry (a secret read from a
    file, its line break kept) is refused naming the header, never spelling the value: not to the
    client, not in the log, not in what the console is told."""
    port = free_port()
    server = _serve_web(port)
    try:
        path = tmp_path / "gateway.yaml"
        path.write_text(
            "servers:\n  web:\n"
            f"    url: http://127.0.0.1:{port}/mcp\n"
            "    timeout: 10\n"
            "    headers: {Authorization: 'Bearer ${GATEWAY_TEST_TOKEN}'}\n",
            encoding="utf-8",
        )
        monkeypatch.setenv("GATEWAY_TEST_TOKEN", SECRET)
        assert cli.main(["gateway", "approve", "--config", str(path)]) == 0
        caplog.set_level(logging.DEBUG)
        for value in (f"{SECRET}\n", f"{SECRET} ", f"{SECRET}\r\nX-Other: 1"):
            monkeypatch.setenv("GATEWAY_TEST_TOKEN", value)

            async def run():  # noqa: ANN202
                async with Gateway(load_config(path)) as gateway:
                    return await gateway.call_tool("web.whoami", {}), gateway.state()

            result, state = anyio.run(run)
            assert result.is_error
            shown = result.content[0].text
            assert "servers.web.headers.Authorization" in shown, shown
            assert SECRET not in shown
            assert SECRET not in str(state)
            assert "servers.web.headers.Authorization" in state["web"]["error"]
    finally:
        server.terminate()
        server.wait(timeout=10)
    captured = capsys.readouterr()
    assert SECRET not in caplog.text + captured.out + captured.err


def test_an_answer_over_the_bound_is_refused_and_never_held_whole(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """A server over HTTP answers a call with one JSON body, which the SDK reads whole (an event
    stream's events it bounds one by one). A hostile server's answer of any size would be held
    in the gateway's memory, and handed to the client: the gateway reads at most
    `MAX_RESPONSE_BYTES` of it, compressed or not, and the call is refused."""
    import socket

    from stalwart_agents.gateway import upstream as upstream_module

    calls = tmp_path / "calls.txt"
    calls.write_text("", encoding="utf-8")
    port = free_port()
    server = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "tests.gateway.servers", "evil", str(port)],
        cwd=ROOT,
        env={**__import__("os").environ, "GATEWAY_TEST_CALLS": str(calls)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert server.poll() is None, "the HTTP server exited"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.2)
        path = tmp_path / "gateway.yaml"
        path.write_text(
            f"servers:\n  evil:\n    url: http://127.0.0.1:{port}/mcp\n    timeout: 20\n",
            encoding="utf-8",
        )
        assert cli.main(["gateway", "approve", "--config", str(path)]) == 0
        bound = 1_000_000
        monkeypatch.setattr(upstream_module, "MAX_RESPONSE_BYTES", bound)

        async def run():  # noqa: ANN202
            async with Gateway(load_config(path)) as gateway:
                small = await gateway.call_tool("evil.huge", {"size": bound // 2})
                large = await gateway.call_tool("evil.huge", {"size": 3 * bound})
                after = await gateway.call_tool("evil.huge", {"size": 10})
                return small, large, after

        small, large, after = anyio.run(run)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert not small.is_error and len(small.content[0].text) == bound // 2
    assert large.is_error, f"{len(large.content[0].text)} characters handed on"
    assert "evil" in large.content[0].text and "bytes" in large.content[0].text
    assert not after.is_error and after.content[0].text == "A" * 10
