"""Against the console: a gateway reports its servers and pinned tools, and a rug pull is an event.

A real gateway (real MCP servers as subprocesses) with `STALWART_URL` and an API key reports at
start and on change to `POST /v1/gateways/<name>/report`; a tool whose description changed
between two `tools/list` is withdrawn and the console records the change, with its diff, as an
event of the feed; a call its firewall file denies is an event too. The report endpoint is
authenticated, validated and bounded; the Gateways page is read by every role and only an admin
may forget a gateway.
"""

from __future__ import annotations

import json
import os
import signal
import time

import anyio
import pytest

from tests.gateway.conftest import FIREWALL, server_block

pytestmark = pytest.mark.django_db(transaction=True)


def _wait(predicate, seconds: float = 30.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("the console did not get the report in time")
        time.sleep(0.1)


def test_a_gateway_reports_its_tools_and_a_changed_tool_is_an_event_with_its_diff(
    live_server, admin, organisation, actor_for, tmp_path, monkeypatch
):  # noqa: ANN001
    from console import services as console_services
    from console.models import Event, Gateway
    from stalwart_agents import Client, cli
    from stalwart_agents.gateway import Gateway as McpGateway
    from stalwart_agents.gateway import load_config

    calls = tmp_path / "calls.txt"
    calls.write_text("", encoding="utf-8")
    monkeypatch.setenv("GATEWAY_TEST_CALLS", str(calls))
    (tmp_path / "firewall.json").write_text(json.dumps(FIREWALL), encoding="utf-8")
    path = tmp_path / "gateway.yaml"
    path.write_text(
        "agent: desk\nfirewall: ./firewall.json\nservers:\n"
        + server_block("shop")
        + server_block("drift")
    )
    assert cli.main(["gateway", "approve", "--config", str(path)]) == 0
    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="gateway", role="editor"
    )

    async def run() -> tuple:
        console = Client(live_server.url, key)
        gateway = McpGateway(load_config(path), client=console)
        async with gateway:
            assert gateway.session is not None, gateway.session_error
            with anyio.fail_after(30):
                while gateway.reporter.sent < 1:
                    await anyio.sleep(0.05)
            answer = await anyio.to_thread.run_sync(console.get, "/v1/gateways")
            at_start = answer["gateways"][0]["servers"]
            listed = {tool.name for tool in await gateway.list_tools()}  # drift changes now
            denied = await gateway.call_tool("shop.close_account", {"customer_id": "c-1"})
            with anyio.fail_after(30):
                while gateway.reporter.sent < 2 or gateway.reporter.events:
                    await anyio.sleep(0.05)
            # A server that dies is reported down, with why.
            pid = await gateway.call_tool("shop.server_pid", {})
            os.kill(int(pid.content[0].text), signal.SIGKILL)  # the server this test started
            sent = gateway.reporter.sent
            with anyio.fail_after(40):
                await gateway.call_tool("shop.get_order", {"order_id": "A1"})
                while gateway.reporter.sent <= sent:
                    await anyio.sleep(0.05)
            answer = await anyio.to_thread.run_sync(console.get, "/v1/gateways")
            return at_start, listed, denied, answer["gateways"][0]["servers"]["shop"]

    at_start, listed, denied, shop_down = anyio.run(run)
    assert shop_down["state"] == "down" and "closed its connection" in shop_down["error"]
    assert "drift.lookup" not in listed and "shop.get_order" in listed
    assert denied.is_error
    shop = {tool["name"]: tool for tool in at_start["shop"]["tools"]}
    assert at_start["shop"]["state"] == "connected"
    assert shop["get_order"]["status"] == "pinned" and shop["get_order"]["kind"] == "read"
    assert at_start["drift"]["tools"][0]["status"] == "pinned"

    _wait(lambda: Event.objects.filter(source="gateway", verdict="withdrawn").exists())
    gateway = Gateway.objects.get(organisation=organisation, name="desk")
    drift = gateway.servers["drift"]["tools"][0]
    assert drift["status"] == "withdrawn" and drift["why"] == "changed"
    assert any("evil.invalid" in line for line in drift["diff"])
    event = Event.objects.get(source="gateway", verdict="withdrawn")
    assert event.tool == "drift.lookup" and event.decision == "refuse" and event.agent == "desk"
    assert any(line.startswith("+") and "evil.invalid" in line for line in event.detail["diff"])
    _wait(lambda: Event.objects.filter(source="gateway", stage="tool_call").exists())
    firewall = Event.objects.get(source="gateway", stage="tool_call", tool="shop.close_account")
    assert firewall.tool == "shop.close_account" and firewall.decision == "refuse"
    assert firewall.rule == "no account closing"
    # the tool check's own decisions are the sessions API's events, as for every door
    assert Event.objects.filter(source="toolcheck", tool="shop.close_account").exists()
    assert not [line for line in calls.read_text().splitlines() if "close_account" in line]


def _report(**servers):  # noqa: ANN003, ANN202
    return {"servers": servers, "events": []}


TOOL = {"name": "get_order", "digest": "a" * 64, "kind": "read", "status": "pinned"}


def test_the_report_endpoint_is_authenticated_validated_and_bounded(
    admin, auditor, organisation, actor_for, client
) -> None:  # noqa: ANN001
    from console import services as console_services
    from console.models import Gateway

    _, editor_key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="gw", role="editor"
    )
    _, auditor_key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="audit", role="auditor"
    )

    def post(body, key=editor_key, name="desk"):  # noqa: ANN001, ANN202
        headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
        return client.post(
            f"/v1/gateways/{name}/report", json.dumps(body), "application/json", **headers
        )

    good = _report(shop={"state": "connected", "tools": [TOOL]})
    assert post(good, key=None).status_code in (401, 403)
    assert post(good, key="sk_wrong").status_code in (401, 403)
    assert post(good, key=auditor_key).status_code == 403
    assert not Gateway.objects.exists()

    bad = post(_report(shop={"state": "up", "tools": [{**TOOL, "digest": "x"}]}))
    assert bad.status_code == 400
    errors = json.dumps(bad.json())
    assert "servers.shop.state" in errors and "servers.shop.tools[0].digest" in errors
    too_many = post(_report(shop={"state": "connected", "tools": [TOOL] * 501}))
    assert too_many.status_code == 400 and "servers.shop.tools" in json.dumps(too_many.json())
    event = {"kind": "tool_withdrawn", "server": "shop", "tool": "shop.x", "why": "changed"}
    long_diff = post({**good, "events": [{**event, "diff": ["+" * 501]}]})
    assert long_diff.status_code == 400 and "events[0].diff[0]" in json.dumps(long_diff.json())
    assert post(good, name="no spaces").status_code in (400, 404)
    assert not Gateway.objects.exists()

    assert post(good).status_code == 200
    listed = client.get("/v1/gateways", HTTP_AUTHORIZATION=f"Bearer {auditor_key}")
    assert listed.status_code == 200
    assert listed.json()["gateways"][0]["servers"]["shop"]["tools"][0]["name"] == "get_order"


def test_every_role_reads_the_gateways_page_and_only_an_admin_forgets_one(
    people, organisation, client_for
) -> None:  # noqa: ANN001
    from console.models import Gateway

    withdrawn = {**TOOL, "name": "lookup", "status": "withdrawn", "why": "changed"}
    withdrawn["diff"] = ['-  "description": "Look up a word."', '+  "description": "evil"']
    gateway = Gateway.objects.create(
        organisation=organisation,
        name="desk",
        servers={
            "shop": {"state": "connected", "error": "", "tools": [TOOL]},
            "drift": {"state": "down", "error": "the server `drift` closed", "tools": [withdrawn]},
        },
    )
    for role in ("admin", "editor", "approver", "auditor"):
        page = client_for(people[role]).get("/gateways/")
        assert page.status_code == 200, role
        text = page.content.decode()
        assert "shop.get_order" in text and "drift.lookup" in text and "evil" in text
        assert "the server `drift` closed" in text
        assert ("Forget this gateway" in text) == (role == "admin"), role
        if role != "admin":
            refused = client_for(people[role]).post(f"/gateways/{gateway.pk}/forget")
            assert refused.status_code == 403, role
            assert Gateway.objects.filter(pk=gateway.pk).exists()
    outsider = client_for(people["outsider"]).get("/gateways/")  # another organisation's person
    assert "shop.get_order" not in outsider.content.decode()
    assert client_for(people["outsider"]).post(f"/gateways/{gateway.pk}/forget").status_code in (
        403,
        404,
    )
    done = client_for(people["admin"]).post(f"/gateways/{gateway.pk}/forget")
    assert done.status_code == 302
    assert not Gateway.objects.filter(pk=gateway.pk).exists()


def _approved_desk(folder, admin_actor):  # noqa: ANN001, ANN202
    """A gateway.yaml of agent `desk` in front of the shop, approved, and an editor's API key."""
    from console import services as console_services
    from stalwart_agents import cli

    path = folder / "gateway.yaml"
    path.write_text("agent: desk\nservers:\n" + server_block("shop"), encoding="utf-8")
    assert cli.main(["gateway", "approve", "--config", str(path)]) == 0
    _, key = console_services.api_key_create(actor=admin_actor, name="gateway", role="editor")
    return path, key


def test_a_gateway_sent_sigterm_reports_itself_stopped_and_the_page_says_so(
    live_server, people, organisation, actor_for, client_for, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    """`stalwart gateway` over stdio, as an MCP client starts it: running once it has reported;
    SIGTERM stops it in order, and its last report marks it stopped (API and page)."""
    import subprocess
    import sys

    from console.models import Gateway
    from tests.gateway.conftest import ROOT

    monkeypatch.setenv("GATEWAY_TEST_CALLS", str(tmp_path / "calls.txt"))
    path, key = _approved_desk(tmp_path, actor_for(people["admin"], organisation))
    environ = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "STALWART_URL": live_server.url,
        "STALWART_API_KEY": key,
        "GATEWAY_TEST_CALLS": str(tmp_path / "calls.txt"),
    }
    process = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "stalwart_agents", "gateway", "--config", str(path)],
        cwd=ROOT, env=environ, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        _wait(lambda: Gateway.objects.filter(organisation=organisation, name="desk").exists(), 60)
        page = client_for(people["auditor"]).get("/gateways/").content.decode()
        assert 'data-status="running"' in page and "(running)" in page
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, process.stderr.read().decode()[-2000:]
    finally:
        if process.poll() is None:
            process.kill()
    gateway = Gateway.objects.get(organisation=organisation, name="desk")
    assert gateway.stopped_at is not None
    assert gateway.servers["shop"]["state"] == "connected", "its servers as they were"
    listed = client_for(people["auditor"]).get("/v1/gateways").json()["gateways"][0]
    assert listed["status"] == "stopped" and listed["stopped_at"]
    page = client_for(people["auditor"]).get("/gateways/").content.decode()
    assert 'data-status="stopped"' in page and "(stopped)" in page and "Stopped at" in page


def test_a_running_gateway_reports_with_nothing_new_and_a_silent_one_is_shown_not_reporting(
    live_server, people, organisation, actor_for, client_for, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    from datetime import timedelta

    from django.utils import timezone

    from console import services as console_services
    from console.models import Gateway
    from stalwart_agents import Client
    from stalwart_agents.gateway import Gateway as McpGateway
    from stalwart_agents.gateway import core, load_config

    monkeypatch.setattr(core, "HEARTBEAT", 0.2)
    monkeypatch.setenv("GATEWAY_TEST_CALLS", str(tmp_path / "calls.txt"))
    path, key = _approved_desk(tmp_path, actor_for(people["admin"], organisation))

    async def run() -> int:
        gateway = McpGateway(load_config(path), client=Client(live_server.url, key))
        async with gateway:
            with anyio.fail_after(30):
                while gateway.reporter.sent < 4:  # the first, then heartbeats: nothing changed
                    await anyio.sleep(0.05)
        return gateway.reporter.sent

    assert anyio.run(run) >= 5, "the last report, as it stopped, is one more"
    row = Gateway.objects.get(organisation=organisation, name="desk")
    assert row.stopped_at is not None
    # Reported again (started anew): running; then silent past three heartbeats of the console's.
    _, reporter = console_services.api_key_create(
        actor=actor_for(people["admin"], organisation), name="again", role="editor"
    )
    body = {"servers": row.servers, "events": [], "instance": row.instance, "host": row.host}
    again = Client(live_server.url, reporter).post("/v1/gateways/desk/report", body)
    assert again["status"] == "running" and again["stopped_at"] is None
    Gateway.objects.filter(pk=row.pk).update(reported_at=timezone.now() - timedelta(seconds=181))
    listed = client_for(people["auditor"]).get("/v1/gateways").json()["gateways"][0]
    assert listed["status"] == "silent"
    page = client_for(people["auditor"]).get("/gateways/").content.decode()
    assert (
        'data-status="silent"' in page and "(not reporting)" in page and "No report since" in page
    )
    Gateway.objects.filter(pk=row.pk).update(reported_at=timezone.now() - timedelta(seconds=170))
    assert client_for(people["auditor"]).get("/v1/gateways").json()["gateways"][0]["status"] == (
        "running"
    )
    from stalwart_agents.client import RequestRefused

    with pytest.raises(RequestRefused) as refused:
        Client(live_server.url, reporter).post(
            "/v1/gateways/desk/report", {**body, "state": "gone"}
        )
    assert "state" in str(refused.value)


def test_the_gateways_page_draws_the_latest_reported_and_counts_the_rest(
    admin, organisation, client_for
) -> None:  # noqa: ANN001
    # A gateway started in a new folder each time (a CI job's checkout) is a new instance: over
    # months they pile up, and the page drew every one with every tool it listed.
    import datetime as dt

    from django.utils import timezone

    from console.gateways import GATEWAYS_SHOWN
    from console.models import Gateway

    now = timezone.now()
    Gateway.objects.bulk_create(
        Gateway(
            organisation=organisation,
            name="ci",
            instance=f"run-{n:04d}",
            servers={"shop": {"state": "connected", "error": "", "tools": [TOOL]}},
            reported_at=now - dt.timedelta(minutes=n),
        )
        for n in range(GATEWAYS_SHOWN + 5)
    )
    page = client_for(admin).get("/gateways/").content.decode()
    assert page.count('class="card gateway"') == GATEWAYS_SHOWN
    assert 'data-instance="run-0000"' in page  # the latest reported
    assert f'data-instance="run-{GATEWAYS_SHOWN + 4:04d}"' not in page
    assert 'id="more-gateways">5 more gateways' in page


def test_a_changed_prompt_or_resource_is_an_event_of_the_feed_with_its_diff(
    live_server, admin, organisation, actor_for, tmp_path
) -> None:  # noqa: ANN001
    from console import services as console_services
    from console.models import Event
    from stalwart_agents import Client
    from stalwart_agents.gateway import Gateway as McpGateway
    from stalwart_agents.gateway import load_config
    from stalwart_agents.gateway.core import Refusal
    from tests.gateway.test_pins_prompts_resources import _setup

    shifty = _setup(tmp_path)
    shifty["shift"].write_text("", encoding="utf-8")  # changed after the approval
    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="gateway", role="editor"
    )

    async def run() -> tuple[list, str]:
        gateway = McpGateway(load_config(shifty["path"]), client=Client(live_server.url, key))
        async with gateway:
            assert gateway.session is not None, gateway.session_error
            listed = await gateway.list_prompts()
            try:
                await gateway.read_resource("shifty://guide")
            except Refusal as refused:
                why = str(refused)
            with anyio.fail_after(30):
                while gateway.reporter.events or gateway.reporter.sent < 2:
                    await anyio.sleep(0.05)
        return listed, why

    listed, why = anyio.run(run)
    assert [prompt.name for prompt in listed] == ["shifty.rules"]  # the one not changed
    assert "changed since it was approved" in why
    _wait(lambda: Event.objects.filter(source="gateway", stage="resources/read").exists())
    prompt = Event.objects.get(source="gateway", tool="shifty.summarise", verdict="withdrawn")
    assert prompt.stage == "prompts/list" and prompt.decision == "refuse"
    assert prompt.detail["what"] == "prompt" and prompt.detail["why"] == "changed"
    assert any(line.startswith("+") and "evil.invalid" in line for line in prompt.detail["diff"])
    resource = Event.objects.get(source="gateway", tool="shifty://guide", verdict="withdrawn")
    assert resource.detail["what"] == "resource" and resource.stage == "resources/read"
    added = Event.objects.get(source="gateway", tool="shifty.extra", verdict="withdrawn")
    assert added.detail["why"] == "not_approved"


def test_a_reported_prompt_or_resource_withdrawn_is_an_event_where_it_was_found(
    admin, organisation, actor_for, client
) -> None:  # noqa: ANN001
    from console import services as console_services
    from console.models import Event

    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="gw", role="editor"
    )

    def post(*events):  # noqa: ANN002, ANN202
        body = {**_report(shop={"state": "connected", "tools": [TOOL]}), "events": list(events)}
        return client.post(
            "/v1/gateways/desk/report",
            json.dumps(body),
            "application/json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )

    prompt = {"kind": "prompt_withdrawn", "server": "shop", "tool": "shop.ask_order"}
    prompt.update(why="changed", at="prompts/get", diff=['+  "description": "evil"'])
    resource = {"kind": "resource_withdrawn", "server": "shop", "tool": "shop://policy"}
    resource.update(why="approve_again", at="resources/list")
    assert post(prompt, resource).status_code == 200
    got = Event.objects.get(source="gateway", tool="shop.ask_order")
    assert (got.stage, got.verdict, got.decision) == ("prompts/get", "withdrawn", "refuse")
    assert got.detail["what"] == "prompt" and got.detail["diff"] == ['+  "description": "evil"']
    listed = Event.objects.get(source="gateway", tool="shop://policy")
    assert listed.stage == "resources/list" and listed.reasons == ["withdrawn", "approve_again"]
    bad = post({**prompt, "at": "somewhere"}, {**resource, "kind": "resource_gone"})
    assert bad.status_code == 400
    errors = json.dumps(bad.json())
    assert "events[0].at" in errors and "events[1].kind" in errors
