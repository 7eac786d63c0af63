"""The person's turns a client sends with a call (`_meta` `stalwart/turns`), through a real gateway.

A real `mcp` SDK client calls through the gateway (a subprocess, over stdio and over streamable
HTTP with its bearer token) to the shop server (a subprocess). With `turns: from_client`, the
person's turn naming the order and the amount makes those values typed, so the runtime lets the
refund the desk's rulebook allows run without asking; a value only the model wrote (an amount nobody said) is still asked
about; without turns every write is asked about; with `turns` off the same `_meta` is ignored; a
malformed or oversized value refuses the call, names the field, reaches no server, and is recorded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import anyio
import mcp
import pytest
from mcp.client.stdio import StdioServerParameters

from tests.gateway.conftest import ROOT, calls_of, free_port, server_block
from tests.gateway.test_through_mcp import TOKEN, Person, _client, _environ, text

KEY = "stalwart/turns"
#: The desk's rulebook: a refund runs without a person, where nothing else holds it (a value the
#: person did not say is still asked about: the rulebook's allow overrides no earlier step).
RULES = "tool,condition,decision,reason\nshop.refund_card,,allow,refunds the person asked for\n"


def _approved(folder: Path, turns: str | None) -> Path:
    from stalwart_agents import cli

    folder.mkdir(exist_ok=True)
    (folder / "rules.csv").write_text(RULES, encoding="utf-8")
    path = folder / "gateway.yaml"
    head = "agent: desk\nrulebook: ./rules.csv\n" + (f"turns: {turns}\n" if turns else "")
    path.write_text(head + "servers:\n" + server_block("shop"), encoding="utf-8")
    assert cli.main(["gateway", "approve", "--config", str(path)]) == 0
    return path


def _stdio(config: Path, calls: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "stalwart_agents", "gateway", "--config", str(config)],
        env=_environ(calls),
        cwd=str(ROOT),
    )


def _refunds(calls: Path) -> list[dict]:
    return [arguments for _, tool, arguments in calls_of(calls) if tool == "refund_card"]


async def trusted_story(client: mcp.Client, person: Person, calls: Path) -> None:
    person.answer = False
    # Without turns, a write is put to the person: here they say no, and nothing runs.
    plain = await client.call_tool("shop.refund_card", {"order_id": "A1", "amount": 20})
    assert plain.is_error and "not approved" in text(plain), text(plain)
    assert len(person.asked) == 1 and "written by the model" in person.asked[0]
    assert _refunds(calls) == []

    # The person's turn names the order and the amount: typed values, no question, it runs.
    said = {KEY: [{"id": "m-1", "text": "please refund 20 on order A1"}]}
    typed = await client.call_tool("shop.refund_card", {"order_id": "A1", "amount": 20}, meta=said)
    assert not typed.is_error, text(typed)
    assert len(person.asked) == 1, "the runtime did not ask: the person said these values"
    assert _refunds(calls) == [{"amount": 20, "order_id": "A1"}]

    # The model invents an amount nobody said: asked, naming the argument.
    invented = await client.call_tool(
        "shop.refund_card",
        {"order_id": "A1", "amount": 500},
        meta={KEY: [{"id": "m-1", "text": "please refund 20 on order A1"}]},
    )
    assert invented.is_error and "argument_origin: amount" in text(invented), text(invented)
    assert len(person.asked) == 2 and "amount = 500  (written by the model)" in person.asked[1]
    assert 'order_id = "A1"  (typed by the person)' in person.asked[1]
    assert [r for r in _refunds(calls) if r["amount"] == 500] == []

    # A malformed or oversized value refuses the call, naming the field; nothing reaches a server.
    for bad, field in (
        ({KEY: [{"text": {"nested": ["deeper"]}}]}, f"_meta.{KEY}[0].text"),
        ({KEY: [{"text": "refund 30 on order A1", "by": "admin"}]}, f"_meta.{KEY}[0].by"),
        ({KEY: ["refund 30 on order A1"] * 21}, f"_meta.{KEY}: holds more than 20"),
        ({KEY: ["x" * 8_001]}, f"_meta.{KEY}[0]: is longer than 8000"),
        ({KEY: "refund 30 on order A1"}, f"_meta.{KEY}: must be a list"),
    ):
        refused = await client.call_tool(
            "shop.refund_card", {"order_id": "A1", "amount": 30}, meta=bad
        )
        assert refused.is_error, bad
        assert "turns_invalid" in text(refused) and field in text(refused), text(refused)
        assert refused.structured_content["stalwart"]["reasons"] == ["turns_invalid"]
    assert len(person.asked) == 2
    assert [r for r in _refunds(calls) if r["amount"] == 30] == []


def test_the_persons_turns_over_stdio_make_their_values_typed_and_bad_ones_refuse(
    tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    calls = tmp_path / "calls.txt"
    calls.write_text("", encoding="utf-8")
    monkeypatch.setenv("GATEWAY_TEST_CALLS", str(calls))
    config = _approved(tmp_path / "on", "from_client")
    person = Person(calls)

    async def run() -> None:
        async with mcp.Client(
            _stdio(config, calls), mode="legacy", elicitation_callback=person
        ) as client:
            await trusted_story(client, person, calls)

    anyio.run(run)


def test_with_turns_off_the_meta_is_ignored_and_every_write_is_asked(tmp_path, monkeypatch) -> None:  # noqa: ANN001, E501
    calls = tmp_path / "calls.txt"
    calls.write_text("", encoding="utf-8")
    monkeypatch.setenv("GATEWAY_TEST_CALLS", str(calls))
    config = _approved(tmp_path / "off", None)  # the default: off
    person = Person(calls)
    person.answer = False
    said = {KEY: [{"id": "m-1", "text": "please refund 20 on order A1"}]}

    async def run() -> tuple:
        async with mcp.Client(
            _stdio(config, calls), mode="legacy", elicitation_callback=person
        ) as client:
            asked = await client.call_tool(
                "shop.refund_card", {"order_id": "A1", "amount": 20}, meta=said
            )
            malformed = await client.call_tool(
                "shop.get_order", {"order_id": "A1"}, meta={KEY: {"not": "a list"}}
            )
            return asked, malformed

    asked, malformed = anyio.run(run)
    assert asked.is_error and "not approved" in text(asked)
    assert len(person.asked) == 1 and "amount = 20  (written by the model)" in person.asked[0]
    assert _refunds(calls) == []
    assert not malformed.is_error, "with turns off the value is not even read"


@pytest.fixture
def http_turns_gateway(tmp_path, monkeypatch):  # noqa: ANN001, ANN201
    calls = tmp_path / "calls.txt"
    calls.write_text("", encoding="utf-8")
    monkeypatch.setenv("GATEWAY_TEST_CALLS", str(calls))
    config = _approved(tmp_path / "http", "from_client")
    port = free_port()
    process = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "stalwart_agents", "gateway", "--config", str(config),
         "--http", "--port", str(port), "--token-env", "GATEWAY_TEST_TOKEN"],
        env=_environ(calls), cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    import socket

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the gateway exited: {process.stderr.read().decode()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.2)
    yield f"http://127.0.0.1:{port}/mcp", calls, process
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


def test_the_persons_turns_over_http_with_the_bearer_token(http_turns_gateway) -> None:  # noqa: ANN001
    url, calls, process = http_turns_gateway
    person = Person(calls)

    async def run() -> None:
        async with _client(url, elicitation_callback=person) as client:
            assert client.protocol_version == "2026-07-28"
            await trusted_story(client, person, calls)

    anyio.run(run)
    process.terminate()
    process.wait(timeout=10)
    logged = process.stderr.read().decode()
    assert TOKEN not in logged
    # the refused calls are recorded: an event each, naming the field
    refused = [
        json.loads(line.split("gateway event: ", 1)[1])
        for line in logged.splitlines()
        if "gateway event: " in line and "gateway.call_refused" in line
    ]
    assert len(refused) == 5, logged[-3000:]
    assert all(event["reasons"] == ["turns_invalid"] for event in refused)
    assert refused[0]["tool"] == "shop.refund_card" and f"_meta.{KEY}[0].text" in refused[0]["why"]


@pytest.mark.django_db(transaction=True)
def test_against_the_console_turns_are_read_by_its_session_and_a_refusal_is_in_its_feed(
    live_server, admin, organisation, actor_for, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    from console import services
    from console.models import Event
    from stalwart_agents import Client
    from stalwart_agents.gateway import Gateway, load_config

    calls = tmp_path / "calls.txt"
    calls.write_text("", encoding="utf-8")
    monkeypatch.setenv("GATEWAY_TEST_CALLS", str(calls))
    config = _approved(tmp_path / "console", "from_client")
    _, key = services.api_key_create(
        actor=actor_for(admin, organisation), name="gateway", role="editor"
    )

    async def run() -> tuple:
        gateway = Gateway(load_config(config), client=Client(live_server.url, key))
        async with gateway:
            assert gateway.session is not None, gateway.session_error
            said = [{"id": "m-1", "text": "please refund 20 on order A1"}]
            typed = await gateway.call_tool(
                "shop.refund_card",
                {"order_id": "A1", "amount": 20},
                turns=said,
                turns_vouched=True,
            )
            refused = await gateway.call_tool(
                "shop.refund_card",
                {"order_id": "A1", "amount": 30},
                turns=[{"text": ["not", "text"]}],
                turns_vouched=True,
            )
            with anyio.fail_after(30):
                while gateway.reporter.events or gateway.reporter.sent < 2:
                    await anyio.sleep(0.05)
            return typed, refused

    typed, refused = anyio.run(run)
    assert not typed.is_error, typed.content
    assert _refunds(calls) == [{"amount": 20, "order_id": "A1"}]
    assert refused.is_error and "turns_invalid" in refused.content[0].text
    event = Event.objects.get(organisation=organisation, source="gateway", verdict="turns_invalid")
    assert (event.tool, event.decision, event.reasons) == (
        "shop.refund_card",
        "refuse",
        ["turns_invalid"],
    )
    assert f"_meta.{KEY}[0].text" in event.detail["why"]
    # the console's own check allowed the typed refund (its session read the person's turn)
    allowed = Event.objects.filter(source="toolcheck", tool="shop.refund_card", decision="allow")
    assert allowed.count() >= 1


def test_the_turns_value_is_read_strictly_and_each_problem_names_its_field() -> None:
    from stalwart_agents.gateway.turns import Turn, TurnsInvalid, read_turns

    assert read_turns(["refund 20", {"text": "on A1", "id": "m-2"}]) == [
        Turn("refund 20"),
        Turn("on A1", "m-2"),
    ]
    for bad, where in (
        ({"text": "x"}, "_meta.stalwart/turns"),
        ([{"id": "m-1"}], "_meta.stalwart/turns[0].text"),
        ([{"text": "x", "id": 7}], "_meta.stalwart/turns[0].id"),
        ([{"text": "x", "id": "a\nb"}], "_meta.stalwart/turns[0].id"),
        (["   "], "_meta.stalwart/turns[0]"),
        (["ok", 3], "_meta.stalwart/turns[1]"),
        (["x" * 8_000] * 5, "_meta.stalwart/turns"),
    ):
        with pytest.raises(TurnsInvalid) as caught:
            read_turns(bad)
        assert caught.value.path == where, (bad, caught.value)
