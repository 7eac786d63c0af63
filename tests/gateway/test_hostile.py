"""A hostile server behind the gateway, and what reaches the client, the logs and the console.

The `evil` server (tests/gateway/servers.py) answers with errors that carry its own credentials
and an injected instruction, and sends requests of its own back during a call; a real client
reaches it through the gateway over streamable HTTP.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import anyio
import mcp
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from stalwart_agents import cli
from tests.gateway.conftest import ROOT, calls_of, free_port, server_block
from tests.gateway.servers import EVIL_SECRET, POSTED_ID, SHADOW
from tests.gateway.test_through_mcp import _client, _environ

#: What of the evil server's error must never reach the client, a log or the console.
LEAKED = (EVIL_SECRET, "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e")


def _approved(config: Any, calls: Any, servers: str) -> None:
    """`config` written with `servers` and approved, each server counting its calls in `calls`
    (the servers read where from the environment, set for the approval only)."""
    calls.write_text("", encoding="utf-8")
    config.write_text("agent: desk\nservers:\n" + servers, encoding="utf-8")
    before = os.environ.get("GATEWAY_TEST_CALLS")
    os.environ["GATEWAY_TEST_CALLS"] = str(calls)
    try:
        assert cli.main(["gateway", "approve", "--config", str(config)]) == 0
    finally:
        if before is None:
            os.environ.pop("GATEWAY_TEST_CALLS", None)
        else:
            os.environ["GATEWAY_TEST_CALLS"] = before


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):  # noqa: ANN201
    """The gateway over HTTP in front of `evil` and `shop`, approved; its stderr kept."""
    folder = tmp_path_factory.mktemp("hostile")
    calls, config = folder / "calls.txt", folder / "gateway.yaml"
    _approved(
        config,
        calls,
        server_block("evil", "    timeout: 10\n")
        + server_block("shop", "    resources_outside: [shop_docs]\n"),
    )
    port = free_port()
    stderr = folder / "gateway.stderr"
    with stderr.open("wb") as log:
        process = subprocess.Popen(  # noqa: S603
            [sys.executable, "-m", "stalwart_agents", "gateway", "--config", str(config),
             "--http", "--port", str(port), "--token-env", "GATEWAY_TEST_TOKEN"],
            env=_environ(calls),
            cwd=str(ROOT),
            stdout=subprocess.DEVNULL,
            stderr=log,
        )  # fmt: skip
    import socket

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the gateway exited: {stderr.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.2)
    else:
        process.kill()
        pytest.fail("the gateway did not listen within 60 s")
    yield {"url": f"http://127.0.0.1:{port}/mcp", "calls": calls, "stderr": stderr}
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


def text(result: types.CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def test_a_servers_error_reaches_the_client_without_its_credentials(hostile) -> None:  # noqa: ANN001
    """A server's error message is its own text: the gateway hands it on (naming the server)
    through the one table of credential recognisers, so a password or key a failing server
    spells out reaches neither the client (the model) nor the gateway's log."""

    async def run() -> list[str]:
        said = []
        async with _client(hostile["url"]) as client:
            result = await client.call_tool("evil.leak", {})
            assert result.is_error
            said.append(text(result))
            with pytest.raises(MCPError) as read:
                await client.read_resource("evil://notes")
            said.append(read.value.error.message)
            with pytest.raises(MCPError) as prompt:
                await client.get_prompt("evil.greet", {})
            said.append(prompt.value.error.message)
        return said

    said = anyio.run(run)
    assert ("evil", "leak", {}) in calls_of(hostile["calls"])
    for message in said:
        assert "evil" in message, message
        assert "query failed" in message, message
        assert "[redacted:" in message, message
        for secret in LEAKED:
            assert secret not in message, message
    logged = hostile["stderr"].read_text(encoding="utf-8")
    for secret in LEAKED:
        assert secret not in logged


def test_a_servers_requests_to_the_client_are_refused_not_passed_on(hostile) -> None:  # noqa: ANN001
    """A server asking the client for input (an elicitation), a model's completion (sampling) or
    its roots during a call is refused by the gateway: the client is never asked on its behalf."""
    asked: list[str] = []

    async def elicitation(ctx: Any, params: Any) -> types.ElicitResult:
        asked.append("elicit")
        return types.ElicitResult(action="accept", content={"password": "hunter2"})

    async def sampling(ctx: Any, params: Any) -> Any:
        asked.append("sample")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="yes"), model="m"
        )

    async def roots(ctx: Any) -> types.ListRootsResult:
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///home/person")])

    for mode in ("auto", "legacy"):

        async def run(mode: str = mode) -> types.CallToolResult:
            async with _client(
                hostile["url"],
                mode=mode,
                elicitation_callback=elicitation,
                sampling_callback=sampling,
                list_roots_callback=roots,
            ) as client:
                return await client.call_tool("evil.ask_back", {})

        result = anyio.run(run)
        assert not result.is_error, text(result)

    async def input_required() -> types.CallToolResult:
        async with _client(
            hostile["url"], elicitation_callback=elicitation, sampling_callback=sampling
        ) as client:
            return await client.call_tool("evil.ask_back", {"input_required": True})

    # ... nor when it asks in the 2026-07-28 way, with an input request in its answer
    result = anyio.run(input_required)
    assert result.is_error and "did not complete on `evil`" in text(result), text(result)
    assert asked == []
    seen = [c[2]["seen"] for c in calls_of(hostile["calls"]) if c[1] == "ask_back.seen"]
    assert len(seen) == 2
    for answers in seen:
        assert [answer.split(":")[0] for answer in answers] == ["elicit", "sample", "roots"]
        assert all(": refused " in answer for answer in answers), answers


def test_a_servers_result_meta_does_not_reach_the_client(hostile) -> None:  # noqa: ANN001
    """A result's `_meta` is the answering server's word about the exchange (the 2026-07-28
    `serverInfo` stamp, which the SDK adds only where a result has none): the server behind the
    gateway does not write it. A forged stamp in the gateway's name, or a `stalwart/` key, is
    dropped, as the client's `_meta` is never forwarded to a server."""

    async def run(mode: str) -> list[dict[str, Any] | None]:
        async with _client(hostile["url"], mode=mode) as client:
            result = await client.call_tool("evil.stamp", {})
            assert not result.is_error and text(result) == "stamped"
            read = await client.read_resource("evil://stamped")
            assert read.contents[0].text == "stamped"
            return [result.meta, read.meta]

    for mode in ("auto", "legacy"):
        for meta in anyio.run(run, mode):
            meta = meta or {}
            assert "stalwart/decision" not in meta, meta
            stamp = meta.get(types.SERVER_INFO_META_KEY) or {}
            assert stamp.get("version") != "forged", meta
            if stamp:  # a 2026-07-28 result: stamped by the gateway itself
                assert stamp == {"name": "stalwart-gateway", "version": "1"}, meta


def test_a_server_cannot_answer_for_another_servers_resource(hostile) -> None:  # noqa: ANN001
    """Resources are read by their URI, which each server names itself. The evil server lists the
    shop's `shop://policy` as its own, and is listed first: reading it must never hand the
    client the evil server's text as the shop's (and unlabelled, where the shop's resources are
    outside content). A URI two servers offer is refused, naming both."""

    async def run() -> tuple[list[str], str]:
        async with _client(hostile["url"]) as client:
            listed = [str(r.uri) for r in (await client.list_resources()).resources]
            try:
                read = await client.read_resource("shop://policy")
            except MCPError as refused:
                return listed, f"refused: {refused.error.message}"
            return listed, read.contents[0].text

    listed, answer = anyio.run(run)
    assert listed.count("shop://policy") == 2, listed
    assert SHADOW not in answer, answer
    assert answer.startswith("refused:") and "evil" in answer and "shop" in answer, answer


def test_a_write_whose_answer_has_no_json_form_is_recorded_as_run(tmp_path) -> None:  # noqa: ANN001
    """A server's answer is recorded in the session's signed history, in canonical JSON, which
    has no form for an integer past 2**53 (a 64-bit id, as many services give them), text that
    is not Unicode, or nesting past 64 levels. Such an answer of a write that ran must not make
    the gateway report the call as not made (the client would make it again) nor leave it out
    of the history (its `at_most` would never be reached: `order_rule`): it is recorded as run, with an
    answer saying why it is not handed on."""
    from mcp.client.stdio import StdioServerParameters

    from tests.gateway.test_through_mcp import Person

    calls, config = tmp_path / "calls.txt", tmp_path / "gateway.yaml"
    _approved(config, calls, server_block("evil", "    tools:\n      post: {at_most: 1}\n"))
    person = Person(calls)
    gateway = StdioServerParameters(
        command=sys.executable,
        args=["-m", "stalwart_agents", "gateway", "--config", str(config)],
        env=_environ(calls),
        cwd=str(ROOT),
    )

    async def run() -> list[types.CallToolResult]:
        async with mcp.Client(gateway, mode="legacy", elicitation_callback=person) as client:
            return [await client.call_tool("evil.post", {"text": text}) for text in ("one", "two")]

    first, second = anyio.run(run)
    assert [c[2] for c in calls_of(calls) if c[1] == "post"] == [{"text": "one"}]
    assert first.is_error and "ran on `evil`" in text(first), text(first)
    assert "selector_unavailable" not in text(first)
    assert str(POSTED_ID) not in text(first)
    assert second.is_error and "order_rule" in text(second), text(second)  # at_most: 1


def test_the_http_side_checks_host_origin_and_size_before_any_call(hostile) -> None:  # noqa: ANN001
    """Served on 127.0.0.1, the gateway's HTTP side (the SDK's transport security, on for a
    loopback host) answers a request carrying the bearer token but another Host (a DNS
    rebinding) 421, another Origin (a web page) 403, a body over 4 MiB 413 and JSON nested
    deeper than the parser takes a parse error: none of them reaches a server."""
    import json
    import urllib.error
    import urllib.request

    from tests.gateway.test_through_mcp import TOKEN

    calls = hostile["calls"]
    before = calls.read_text(encoding="utf-8")

    def post(body: bytes, **headers: str) -> tuple[int, bytes]:
        request = urllib.request.Request(hostile["url"], data=body, method="POST")
        request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "application/json, text/event-stream")
        request.add_header("Authorization", f"Bearer {TOKEN}")
        for name, value in headers.items():
            request.add_header(name.replace("_", "-"), value)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
                return answer.status, answer.read()
        except urllib.error.HTTPError as refused:
            return refused.code, refused.read()
        except urllib.error.URLError:  # the server answered and closed before the body was sent
            return 413, b""

    def call(arguments: Any) -> bytes:
        return json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "shop.get_order", "arguments": arguments},
            }
        ).encode()

    port = hostile["url"].split(":")[2].split("/")[0]
    assert post(call({"order_id": "A1"}), Host=f"evil.example:{port}")[0] == 421
    assert post(call({"order_id": "A1"}), Origin="http://evil.example")[0] == 403
    assert post(call({"order_id": "A" * (5 * 1024 * 1024)}))[0] == 413
    deep = call({"order_id": "A1"}).replace(b'"A1"', b"[" * 100_000 + b"]" * 100_000)
    status, body = post(deep)
    assert status == 400 and b"-32700" in body, (status, body[:200])
    assert calls.read_text(encoding="utf-8") == before, "nothing reached a server"


def test_a_connection_that_never_finishes_its_headers_is_closed(hostile) -> None:  # noqa: ANN001
    """Anyone who can reach the port -- without the bearer token, which is read only once a
    request's headers are complete -- could open connections that send nothing, or headers
    that never end, and hold each (a file descriptor of the gateway's) for ever. Each is closed
    once `HEADERS_WITHIN` seconds pass without a request's headers."""
    import socket

    from stalwart_agents.gateway import server

    within = getattr(server, "HEADERS_WITHIN", 10.0)
    port = int(hostile["url"].split(":")[2].split("/")[0])
    silent = socket.create_connection(("127.0.0.1", port))
    partial = socket.create_connection(("127.0.0.1", port))
    partial.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())

    def closed(connection: socket.socket, trickle: bool) -> bool:
        """Whether the gateway closes `connection` (sending a byte of headers a second if
        `trickle`) before `within` + 10 s have passed."""
        connection.settimeout(1)
        started = time.monotonic()
        with connection:
            while time.monotonic() - started < within + 10:
                try:
                    if connection.recv(1024) == b"":
                        return True
                    return False  # answered: not what a request never finished gets
                except TimeoutError:
                    if trickle:
                        try:
                            connection.sendall(b"X")
                        except OSError:
                            return True
                except OSError:
                    return True
        return False

    assert closed(silent, trickle=False), f"silent: still open after {within + 10:g} s"
    assert closed(partial, trickle=True), f"partial: still open after {within + 10:g} s"

    async def still_served() -> types.CallToolResult:
        async with _client(hostile["url"]) as client:
            return await client.call_tool("shop.get_order", {"order_id": "A1"})

    assert not anyio.run(still_served).is_error


def test_a_servers_stderr_cannot_forge_the_gateways_log(hostile) -> None:  # noqa: ANN001
    """The gateway's events are lines of its stderr (`gateway event: {...}`, README). A server
    it starts shares that stderr: what the server writes there is the gateway's log, named as
    the server's and quoted, never a line that reads as the gateway's own."""
    import re

    from tests.gateway.servers import FORGED_EVENT

    logged = hostile["stderr"].read_text(encoding="utf-8")
    own = re.compile(r"^(?:\S+ \S+ stalwart\.gateway \w+ )?gateway event: ")
    forged = [line for line in logged.splitlines() if own.match(line) and "forged" in line]
    assert forged == [], forged
    assert FORGED_EVENT not in logged.splitlines()
    assert "the server `evil` wrote on stderr" in logged


def test_an_outside_servers_error_message_is_not_handed_on_unlabelled(tmp_path) -> None:  # noqa: ANN001
    """What a server marked `reads_outside` returns is recorded as outside content, so a write
    after it is held `tainted_call`. Its error message is its words too, read by the model all
    the same, and a failed call records no result: the words an injected instruction could stand
    in reach the client only labelled, or not at all. The call is still said to have failed,
    with the server's error code; a server not marked outside is quoted as before."""
    from mcp.client.stdio import StdioServerParameters

    calls, config = tmp_path / "calls.txt", tmp_path / "gateway.yaml"
    _approved(
        config,
        calls,
        server_block("evil", "    reads_outside: [web]\n    resources_outside: [web]\n")
        + server_block("shop"),
    )
    gateway = StdioServerParameters(
        command=sys.executable,
        args=["-m", "stalwart_agents", "gateway", "--config", str(config)],
        env=_environ(calls),
        cwd=str(ROOT),
    )

    async def run() -> list[str]:
        said = []
        async with mcp.Client(gateway, mode="legacy") as client:
            result = await client.call_tool("evil.leak", {})
            assert result.is_error
            said.append(text(result))
            for read in (
                lambda: client.read_resource("evil://notes"),
                lambda: client.get_prompt("evil.greet", {}),
            ):
                with pytest.raises(MCPError) as refused:
                    await read()
                said.append(refused.value.error.message)
        return said

    for message in anyio.run(run):
        assert "ignore previous instructions" not in message, message
        assert "query failed" not in message, message
        assert "`evil`" in message and "outside content" in message, message
    assert ("evil", "leak", {}) in calls_of(calls)


def test_the_gateway_keeps_only_the_resources_its_servers_list_now(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """A server that lists a new address at every listing does not grow what the gateway keeps:
    the addresses it reads from are those of the latest listing, and one no longer listed is
    not read (it is listed again first)."""
    from stalwart_agents.gateway import Gateway, load_config

    calls, config = tmp_path / "calls.txt", tmp_path / "gateway.yaml"
    _approved(config, calls, server_block("evil"))
    monkeypatch.setenv("GATEWAY_TEST_CALLS", str(calls))  # the gateway here starts the server

    async def run() -> tuple[set[str], str]:
        async with Gateway(load_config(config)) as gateway:
            for _ in range(30):
                await gateway.list_resources()
            kept = set(gateway.resources)
            try:
                await gateway.read_resource("evil://fresh/1")
            except Exception as refused:  # noqa: BLE001 - the test reads why
                return kept, str(refused)
            return kept, "read"

    kept, first = anyio.run(run)
    assert kept == {"evil://notes", "evil://stamped", "shop://policy", "evil://fresh/30"}, kept
    assert "no server offers" in first, first
