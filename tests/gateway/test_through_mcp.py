"""A real MCP client through the gateway to real MCP servers: over stdio and streamable HTTP.

Over stdio the client speaks the handshake era (`initialize`), so a confirm reaches it as an
`elicitation/create` request; over HTTP it speaks 2026-07-28, where the same confirm is an
`InputRequiredResult` its SDK answers with the same elicitation callback. Each story runs in one
connection, in order: what ran earlier in the session (the injected page) is what the last write
is held for.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp
import mcp_types as types
import pytest
from mcp.client.stdio import StdioServerParameters

from tests.gateway.conftest import ROOT, calls_of, free_port


class Person:
    """The elicitation callback: says yes or no, and keeps what it was shown."""

    def __init__(self, calls: Path) -> None:
        self.calls = calls
        self.answer = True
        self.asked: list[str] = []
        self.seen_calls: list[int] = []

    async def __call__(self, ctx: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params.message)
        self.seen_calls.append(len(calls_of(self.calls)))
        if self.answer:
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")


def text(result: types.CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def story(client: mcp.Client, person: Person, calls: Path) -> None:
    listed = {tool.name for tool in (await client.list_tools()).tools}
    assert {"shop.get_order", "shop.refund_card", "web.fetch_page"} <= listed
    assert "drift.lookup" not in listed, "a tool whose description changed is not offered"

    # A read runs, without asking anyone.
    read = await client.call_tool("shop.get_order", {"order_id": "A1"})
    assert not read.is_error, text(read)
    assert "paid" in text(read)
    assert person.asked == []

    # The firewall's sanitize forwards the cleaned arguments, never the original.
    cleaned = await client.call_tool("shop.get_order", {"order_id": "SECRET-42"})
    assert not cleaned.is_error, text(cleaned)
    assert ("shop", "get_order", {"order_id": "[redacted:custom]"}) in calls_of(calls)
    assert "SECRET-42" not in calls.read_text(encoding="utf-8")

    # A write is put to the person first, and reaches the server only after the yes.
    refund = await client.call_tool("shop.refund_card", {"order_id": "A1", "amount": 20})
    assert not refund.is_error, text(refund)
    assert len(person.asked) == 1
    assert "shop.refund_card" in person.asked[0] and "amount = 20" in person.asked[0]
    # The question itself is in words: the server's description of the tool, then its arguments.
    first = person.asked[0].splitlines()[0]
    assert first.startswith("Refund an amount to the card an order was paid with (")
    assert "refund_card" not in first and first.endswith("Shall I go ahead?")
    refunds = [c for c in calls_of(calls) if c[1] == "refund_card"]
    assert refunds == [("shop", "refund_card", {"amount": 20, "order_id": "A1"})]
    assert ("shop", "refund_card") not in [
        (s, t) for s, t, _ in calls_of(calls)[: person.seen_calls[0]]
    ]

    # A write the person says no to never runs.
    person.answer = False
    said_no = await client.call_tool("shop.refund_card", {"order_id": "A2", "amount": 5})
    assert said_no.is_error and "not approved" in text(said_no)
    assert not [c for c in calls_of(calls) if c[2].get("order_id") == "A2"]

    # An unknown tool and a changed tool are refused, named.
    unknown = await client.call_tool("shop.delete_everything", {})
    assert unknown.is_error and "unknown_tool" in text(unknown)
    changed = await client.call_tool("drift.lookup", {"word": "gateway"})
    assert changed.is_error and "withdrawn" in text(changed)
    assert "changed since it was approved" in text(changed)
    assert not [c for c in calls_of(calls) if c[0] == "drift"]

    # The firewall's deny never reaches the server, and nobody is asked.
    asked = len(person.asked)
    denied = await client.call_tool("shop.close_account", {"customer_id": "c-1"})
    assert denied.is_error and "firewall: no account closing" in text(denied)
    assert not [c for c in calls_of(calls) if c[1] == "close_account"]
    assert len(person.asked) == asked

    # An upstream that cannot be reached: a clean error, nothing forwarded.
    down = await client.call_tool("down.anything", {})
    assert down.is_error and "`down` cannot be reached" in text(down)

    # Prompts pass through, named after their server.
    prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
    assert "shop.ask_order" in prompts
    prompt = await client.get_prompt("shop.ask_order", {"order_id": "A9"})
    assert "order A9" in prompt.messages[0].content.text

    # A resource of a server marked resources_outside passes through, and labels the session.
    policy = await client.read_resource("shop://policy")
    assert "Refunds up to 50" in policy.contents[0].text
    person.answer = False
    after_docs = await client.call_tool("shop.refund_card", {"order_id": "A3", "amount": 3})
    assert after_docs.is_error and "tainted_call" in text(after_docs)
    assert "shop_docs" in person.asked[-1]

    # After a page carrying an injected instruction, the write it asks for is held tainted_call.
    # The firewall's require_approval puts even a read to the person.
    person.answer = True
    page = await client.call_tool("web.fetch_page", {"page": "help"})
    assert not page.is_error and "ignore previous instructions" in text(page)
    assert "web.fetch_page" in person.asked[-1] and "firewall: pages need a yes" in person.asked[-1]
    person.answer = False
    injected = await client.call_tool("shop.refund_card", {"order_id": "A1", "amount": 500})
    assert injected.is_error and "tainted_call" in text(injected)
    assert "tainted_call" in person.asked[-1] and "web" in person.asked[-1]
    assert not [c for c in calls_of(calls) if c[2].get("amount") == 500]


#: The bearer token the HTTP gateway's clients send (from the variable --token-env names).
TOKEN = "gw-tok-" + "7" * 24


def _environ(calls: Path) -> dict[str, str]:
    return {
        **os.environ,
        "GATEWAY_TEST_CALLS": str(calls),
        "PYTHONPATH": str(ROOT),
        "GATEWAY_TEST_TOKEN": TOKEN,
    }


def _client(
    url: str, token: str | None = TOKEN, *, answers: list[str] | None = None, **given: Any
) -> mcp.Client:
    """An HTTP client of the gateway; `answers` collects the content type of each `tools/call`
    answer."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    http = create_mcp_http_client(headers=headers)
    if answers is not None:

        async def seen(response: Any) -> None:
            if b'"tools/call"' in response.request.content:
                answers.append(response.headers.get("content-type", "").split(";")[0])

        http.event_hooks["response"].append(seen)
    return mcp.Client(streamable_http_client(url, http_client=http), **given)


def test_a_client_over_stdio_goes_through_the_gateway(approved_gateway) -> None:  # noqa: ANN001
    assert approved_gateway["approve_code"] == 1, "`down` cannot be approved: exit 1"
    calls = approved_gateway["calls"]
    calls.write_text("", encoding="utf-8")
    person = Person(calls)
    gateway = StdioServerParameters(
        command=sys.executable,
        args=["-m", "stalwart_agents", "gateway", "--config", str(approved_gateway["config"])],
        env=_environ(calls),
        cwd=str(ROOT),
    )

    async def run() -> None:
        async with mcp.Client(gateway, mode="legacy", elicitation_callback=person) as client:
            await story(client, person, calls)

    anyio.run(run)


@pytest.fixture(scope="module")
def http_gateway(approved_gateway):  # noqa: ANN001, ANN201
    calls = approved_gateway["calls"]
    port = free_port()
    process = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "stalwart_agents", "gateway", "--config",
         str(approved_gateway["config"]), "--http", "--port", str(port),
         "--token-env", "GATEWAY_TEST_TOKEN"],
        env=_environ(calls),
        cwd=str(ROOT),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    import socket

    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the gateway exited: {process.stderr.read().decode()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.2)
    else:
        process.kill()
        pytest.fail("the gateway did not listen within 60 s")
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
    logged = process.stderr.read().decode()
    assert TOKEN not in logged, "the bearer token is never logged"


def test_a_client_over_streamable_http_goes_through_the_gateway(
    approved_gateway, http_gateway
) -> None:  # noqa: ANN001, E501
    calls = approved_gateway["calls"]
    calls.write_text("", encoding="utf-8")
    person = Person(calls)

    async def run() -> None:
        async with _client(http_gateway, elicitation_callback=person) as client:
            assert client.protocol_version == "2026-07-28"
            await story(client, person, calls)

    anyio.run(run)


@pytest.mark.parametrize(
    ("mode", "answered_in"), [("auto", "application/json"), ("legacy", "text/event-stream")]
)
def test_http_answers_a_modern_call_in_json_and_keeps_a_handshake_era_call_on_its_stream(
    approved_gateway, http_gateway, mode: str, answered_in: str
) -> None:  # noqa: ANN001
    """A 2026-07-28 call is answered with one JSON body (a confirm is an `InputRequiredResult`;
    the SDK opens an SSE stream, with pings, only for an answer that takes over 15 s, such as a
    person answering in the console's queue); a handshake-era client is asked on its call's SSE
    stream (`elicitation/create`), so the whole story, confirms included, runs over HTTP in that
    era too."""
    calls = approved_gateway["calls"]
    calls.write_text("", encoding="utf-8")
    person = Person(calls)
    answers: list[str] = []

    async def run() -> str:
        async with _client(
            http_gateway, answers=answers, mode=mode, elicitation_callback=person
        ) as client:
            await story(client, person, calls)
            return client.protocol_version

    version = anyio.run(run)
    assert (version == "2026-07-28") == (mode == "auto"), version
    assert person.asked, "the story's writes were confirmed by the person"
    assert answers and set(answers) == {answered_in}, answers


def test_an_http_tools_call_reaches_the_server_once_without_listing_its_tools(
    approved_gateway, http_gateway
) -> None:  # noqa: ANN001
    """The SDK's HTTP transport checks a call's `Mcp-Param-*` headers against the tool's input
    schema: the gateway answers from its pins, not by listing the servers for every call."""
    calls = approved_gateway["calls"]
    lists = Path(f"{calls}.lists")
    calls.write_text("", encoding="utf-8")

    async def run() -> tuple[int, int]:
        async with _client(http_gateway) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert listed["shop.get_order"].input_schema["required"] == ["order_id"]
            before = lists.read_text(encoding="utf-8").count("shop")
            for number in range(5):
                result = await client.call_tool("shop.get_order", {"order_id": f"L{number}"})
                assert not result.is_error, result.content
            return before, lists.read_text(encoding="utf-8").count("shop")

    before, after = anyio.run(run)
    assert before >= 1, "the client's tools/list reached the shop"
    assert after == before, f"{after - before} tools/list reached the shop for 5 calls"
    assert calls_of(calls) == [("shop", "get_order", {"order_id": f"L{n}"}) for n in range(5)]


def test_the_http_gateway_answers_401_without_its_token_and_forwards_nothing(
    approved_gateway, http_gateway
) -> None:  # noqa: ANN001
    import json
    import urllib.error
    import urllib.request

    calls = approved_gateway["calls"]
    calls.write_text("", encoding="utf-8")
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "shop.get_order", "arguments": {"order_id": "A1"}},
        }
    ).encode()
    for header in (None, "Bearer wrong-token", f"Basic {TOKEN}", f"Bearer {TOKEN}x"):
        request = urllib.request.Request(http_gateway, data=body, method="POST")
        request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "application/json, text/event-stream")
        if header:
            request.add_header("Authorization", header)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)  # noqa: S310
        assert refused.value.code == 401, header
        assert TOKEN not in refused.value.read().decode()

    async def wrong() -> None:
        async with _client(http_gateway, token="not-it") as client:
            await client.call_tool("shop.get_order", {"order_id": "A2"})

    with pytest.raises(BaseException):  # noqa: B017, PT011 - the SDK's own error for a 401
        anyio.run(wrong)
    assert calls.read_text(encoding="utf-8") == "", "nothing reached a server"

    async def right() -> None:
        async with _client(http_gateway) as client:
            result = await client.call_tool("shop.get_order", {"order_id": "A3"})
            assert not result.is_error, result.content

    anyio.run(right)
    assert calls_of(calls) == [("shop", "get_order", {"order_id": "A3"})]
