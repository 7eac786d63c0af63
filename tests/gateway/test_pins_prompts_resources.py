"""Pinned prompts and resources: offered and used only as `stalwart gateway approve` recorded them.

A real MCP client (the SDK's) through the gateway, started as `stalwart gateway` over stdio, in
front of the `shifty` server of `tests.gateway.servers`, a real MCP server whose prompt, resource
and resource template change (a poisoned description) and grow (a prompt and a resource added)
while its flag file exists. What reached the server is read from its call counter, the events
from the gateway's stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from .conftest import ROOT, calls_of


def _setup(tmp_path: Path, extra: str = "") -> dict[str, Path]:
    """gateway.yaml in front of `shifty` (with `extra` lines of its server), approved; its call
    counter empty."""
    from stalwart_agents import cli

    tmp_path.mkdir(exist_ok=True)
    calls, shift = tmp_path / "calls.txt", tmp_path / "shift"
    calls.write_text("", encoding="utf-8")
    path = tmp_path / "gateway.yaml"
    path.write_text(
        "agent: desk\nservers:\n"
        "  shifty:\n"
        f"    command: {sys.executable}\n"
        "    args: [-m, tests.gateway.servers, shifty]\n"
        f"    cwd: {ROOT}\n"
        f"    env: {{GATEWAY_TEST_CALLS: '{calls}', GATEWAY_TEST_SHIFT: '{shift}'}}\n"
        "    timeout: 20\n" + extra,
        encoding="utf-8",
    )
    assert cli.main(["gateway", "approve", "--config", str(path)]) == 0
    calls.write_text("", encoding="utf-8")  # what approve got (a prompt's text) is not counted
    return {"path": path, "calls": calls, "shift": shift, "stderr": tmp_path / "gateway.stderr"}


def _through(shifty: dict[str, Path], story: Callable[[mcp.Client], Awaitable[Any]]) -> Any:
    """`story` run by a client of the gateway (a process of its own, over stdio)."""
    gateway = StdioServerParameters(
        command=sys.executable,
        args=["-m", "stalwart_agents", "gateway", "--config", str(shifty["path"])],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        cwd=str(ROOT),
    )

    async def run() -> Any:
        with shifty["stderr"].open("w", encoding="utf-8") as errlog:
            async with mcp.Client(stdio_client(gateway, errlog=errlog), mode="legacy") as client:
                with anyio.fail_after(60):
                    return await story(client)

    return anyio.run(run)


def _events(shifty: dict[str, Path]) -> list[dict[str, Any]]:
    found = []
    for line in shifty["stderr"].read_text(encoding="utf-8").splitlines():
        _, marker, event = line.partition("gateway event: ")
        if marker:
            found.append(json.loads(event))
    return found


async def _listed(client: mcp.Client) -> dict[str, set[str]]:
    return {
        "prompts": {prompt.name for prompt in (await client.list_prompts()).prompts},
        "resources": {str(r.uri) for r in (await client.list_resources()).resources},
        "templates": {
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        },
    }


async def _refused(use: Awaitable[Any]) -> str:
    with pytest.raises(MCPError) as refused:
        await use
    return refused.value.error.message


def test_prompts_resources_and_templates_as_approved_are_offered_and_used(tmp_path: Path) -> None:
    shifty = _setup(tmp_path)

    async def story(client: mcp.Client) -> tuple[Any, ...]:
        listed = await _listed(client)
        prompt = await client.get_prompt("shifty.summarise", {"text": "a long day"})
        read = await client.read_resource("shifty://guide")
        template = (await client.list_resource_templates()).resource_templates[0]
        return listed, prompt, read, template

    listed, prompt, read, template = _through(shifty, story)
    assert listed == {
        "prompts": {"shifty.summarise", "shifty.rules"},
        "resources": {"shifty://guide"},
        "templates": {"shifty://notes/{id}"},
    }
    assert template.description == "A note by its id."
    assert prompt.messages[0].content.text == "Summarise: a long day"
    assert read.contents[0].text == "read shifty://guide"
    assert _events(shifty) == []


def test_a_changed_prompt_resource_or_template_is_withheld_refused_and_an_event(
    tmp_path: Path,
) -> None:
    shifty = _setup(tmp_path)
    shifty["shift"].write_text("", encoding="utf-8")  # the rug pull, after the approval

    async def story(client: mcp.Client) -> tuple[Any, ...]:
        listed = await _listed(client)
        prompt = await _refused(client.get_prompt("shifty.summarise", {"text": "x"}))
        read = await _refused(client.read_resource("shifty://guide"))
        return listed, prompt, read

    listed, prompt, read = _through(shifty, story)
    assert listed == {"prompts": {"shifty.rules"}, "resources": set(), "templates": set()}
    assert "`shifty.summarise` is withdrawn" in prompt and "changed since it was approved" in prompt
    assert "`shifty://guide` is withdrawn" in read and "changed since it was approved" in read
    assert [c for c in calls_of(shifty["calls"]) if c[1] != "ping"] == [], "nothing reached it"
    events = {(e["event"], e.get("why")): e for e in _events(shifty)}
    for event, name in (
        ("gateway.prompt_withdrawn", "shifty.summarise"),
        ("gateway.resource_withdrawn", "shifty://guide"),
        ("gateway.resource_template_withdrawn", "shifty://notes/{id}"),
    ):
        withdrawn = events[(event, "changed")]
        assert withdrawn["server"] == "shifty" and name in withdrawn.values(), withdrawn
        assert any(line.startswith("+") and "evil.invalid" in line for line in withdrawn["diff"])
    assert ("gateway.prompt_withdrawn", "not_approved") in events  # `extra`, added since
    assert ("gateway.resource_withdrawn", "not_approved") in events  # `shifty://new`


def test_a_resource_added_since_the_approval_is_withheld_unless_its_server_allows_new_ones(
    tmp_path: Path,
) -> None:
    strict = _setup(tmp_path / "strict")
    strict["shift"].write_text("", encoding="utf-8")

    async def story(client: mcp.Client) -> tuple[Any, ...]:
        listed = await _listed(client)
        return listed, await _refused(client.read_resource("shifty://new"))

    listed, refused = _through(strict, story)
    assert "shifty://new" not in listed["resources"]
    assert "`shifty://new` is withheld: it was not listed when `shifty` was approved" in refused
    assert "new_resources: allow" in refused
    assert [c for c in calls_of(strict["calls"]) if c[1] == "resource"] == []

    allowing = _setup(tmp_path / "allowing", "    new_resources: allow\n")
    allowing["shift"].write_text("", encoding="utf-8")

    async def allowed(client: mcp.Client) -> tuple[Any, ...]:
        listed = await _listed(client)
        read = await client.read_resource("shifty://new")
        return listed, read, await _refused(client.read_resource("shifty://guide"))

    listed, read, changed = _through(allowing, allowed)
    # A new resource is offered; one pinned and changed since is not, nor a prompt added since.
    assert listed == {
        "prompts": {"shifty.rules"},
        "resources": {"shifty://new"},
        "templates": set(),
    }
    assert read.contents[0].text == "read shifty://new"
    assert "changed since it was approved" in changed


def test_a_server_approved_before_prompts_and_resources_were_pinned_offers_them_once_approved_again(
    tmp_path: Path,
) -> None:
    from stalwart_agents import cli

    shifty = _setup(tmp_path)
    pins = tmp_path / "gateway.pins.json"
    held = json.loads(pins.read_text(encoding="utf-8"))
    for server in held["servers"].values():  # as an approval before this release wrote it
        server.pop("prompts"), server.pop("resources"), server.pop("templates")
    pins.write_text(json.dumps(held), encoding="utf-8")

    async def story(client: mcp.Client) -> tuple[Any, ...]:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        listed = await _listed(client)
        return tools, listed, await _refused(client.get_prompt("shifty.summarise", {"text": "x"}))

    tools, listed, refused = _through(shifty, story)
    assert tools == {"shifty.ping"}, "its tools are pinned as before"
    assert listed == {"prompts": set(), "resources": set(), "templates": set()}
    assert "`shifty` was approved before its prompts and resources were pinned" in refused
    assert "run `stalwart gateway approve` again" in refused
    whys = {(e["event"], e["why"]) for e in _events(shifty)}
    assert ("gateway.prompt_withdrawn", "approve_again") in whys
    assert ("gateway.resource_withdrawn", "approve_again") in whys

    assert cli.main(["gateway", "approve", "--config", str(shifty["path"])]) == 0
    tools, listed, _ = _through(shifty, lambda client: _listed_and_prompt(client))
    assert listed["prompts"] == {"shifty.summarise", "shifty.rules"}
    assert listed["resources"] == {"shifty://guide"}


async def _listed_and_prompt(client: mcp.Client) -> tuple[Any, ...]:
    listed = await _listed(client)
    return None, listed, await client.get_prompt("shifty.summarise", {"text": "x"})


def test_a_server_back_with_a_changed_resource_or_prompt_never_has_it_used(tmp_path: Path) -> None:
    """Killed and started again by a call, the server has its resources and prompts listed again
    before one is read or got: the gateway's listing from before it died no longer counts."""
    import os
    import signal

    from stalwart_agents.gateway import Gateway, load_config
    from stalwart_agents.gateway.core import Refusal

    shifty = _setup(tmp_path)

    async def run() -> tuple[str, str]:
        async with Gateway(load_config(shifty["path"])) as gateway:
            assert await gateway.list_prompts() and await gateway.list_resources()
            pid = await gateway.call_tool("shifty.ping", {})
            os.kill(int(pid.content[0].text), signal.SIGKILL)  # the server this test started
            with anyio.fail_after(40):
                lost = await gateway.call_tool("shifty.ping", {})
            assert lost.is_error
            shifty["shift"].write_text("", encoding="utf-8")  # back with poisoned descriptions
            with anyio.fail_after(40):
                again = await gateway.call_tool("shifty.ping", {})
            assert not again.is_error, again.content
            said = []
            for use in (
                lambda: gateway.read_resource("shifty://guide"),
                lambda: gateway.get_prompt("shifty.summarise", {"text": "x"}),
            ):
                with pytest.raises(Refusal) as refused:
                    await use()
                said.append(str(refused.value))
            return said[0], said[1]

    read, got = anyio.run(run)
    assert "`shifty://guide` is withdrawn" in read and "changed since" in read, read
    assert "`shifty.summarise` is withdrawn" in got and "changed since" in got, got
    assert [c for c in calls_of(shifty["calls"]) if c[1] != "ping"] == []


def test_a_prompt_without_arguments_whose_text_changed_is_refused_and_an_event(
    tmp_path: Path,
) -> None:
    """A prompt that takes no arguments has one text: `approve` pins it too, and a text that
    changed since never reaches the client, its definition unchanged or not."""
    shifty = _setup(tmp_path)

    async def approved(client: mcp.Client) -> Any:
        return await client.get_prompt("shifty.rules", {})

    assert _through(shifty, approved).messages[0].content.text == "Be kind to customers."
    shifty["shift"].write_text("", encoding="utf-8")

    async def changed(client: mcp.Client) -> tuple[Any, ...]:
        listed = await _listed(client)
        return listed, await _refused(client.get_prompt("shifty.rules", {}))

    listed, refused = _through(shifty, changed)
    assert "shifty.rules" in listed["prompts"], "its definition is as approved"
    assert "`shifty.rules` is withdrawn: its text changed since it was approved" in refused
    assert "evil.invalid" not in refused
    [event] = [e for e in _events(shifty) if e.get("prompt") == "shifty.rules"]
    assert event["why"] == "changed" and event["at"] == "prompts/get"
    assert any(line.startswith("+") and "evil.invalid" in line for line in event["diff"])
