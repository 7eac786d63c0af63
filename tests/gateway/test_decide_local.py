"""A gateway deciding each call in its own process from the console's signed bundle.

With `STALWART_URL`, the API key, and `console: {decide: local, bundle_key_env: ...}` in
gateway.yaml (or `STALWART_DECIDE=local`), the gateway opens its session through the SDK's
locally-deciding client, as `Agent.chat` does: every `tools/call` is decided in process from the
verified bundle (no check request reaches the console), a tool switched off on the console is
refused from the bundle, a bundle that does not verify makes every call refused naming why, and
each decision reaches the console's feed through the decision-log spool, once.
"""

from __future__ import annotations

import json
import time

import anyio
import pytest

from tests.gateway.conftest import FIREWALL, calls_of, server_block

pytestmark = pytest.mark.django_db(transaction=True)

CONSOLE_WAIT = 1.0


@pytest.fixture
def console(live_server, admin, organisation, actor_for, settings, tmp_path, monkeypatch):  # noqa: ANN001, ANN201
    from console import bundles, services

    settings.STALWART_BUNDLE_MAX_WAIT = CONSOLE_WAIT
    _, key = services.api_key_create(
        actor=actor_for(admin, organisation), name="gateway", role="editor"
    )
    monkeypatch.setenv("STALWART_URL", live_server.url)
    monkeypatch.setenv("STALWART_API_KEY", key)
    monkeypatch.delenv("STALWART_DECIDE", raising=False)
    monkeypatch.delenv("STALWART_BUNDLE_KEY", raising=False)
    monkeypatch.setenv("STALWART_SPOOL", str(tmp_path / "spool.sqlite3"))
    yield {
        "public": bundles.public_key(organisation.pk),
        "organisation": organisation,
        "admin": admin,
    }
    time.sleep(CONSOLE_WAIT + 0.3)


def _config(tmp_path, monkeypatch, name: str = "gateway", *, firewall: dict | None = None):  # noqa: ANN001, ANN202
    from stalwart_agents import cli
    from stalwart_agents.gateway import load_config

    calls = tmp_path / "calls.txt"
    calls.write_text("", encoding="utf-8")
    monkeypatch.setenv("GATEWAY_TEST_CALLS", str(calls))
    path = tmp_path / f"{name}.yaml"
    own = ""
    if firewall is not None:
        (tmp_path / "firewall.json").write_text(json.dumps(firewall), encoding="utf-8")
        own = "firewall: ./firewall.json\n"
    path.write_text(
        "agent: desk\nconsole: {decide: local, bundle_key_env: GW_BUNDLE_KEY}\n"
        + own
        + "servers:\n"
        + server_block("shop"),
        encoding="utf-8",
    )
    assert cli.main(["gateway", "approve", "--config", str(path)]) == 0
    return load_config(path), calls


def _until(predicate, seconds: float) -> None:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"not within {seconds} s"
        time.sleep(0.05)


def test_the_gateway_decides_from_the_bundle_and_its_decisions_reach_the_feed_once(
    console, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    from console.models import Event, ToolSwitch
    from guard.models import GuardSession
    from stalwart_agents.client import ConnectedSession
    from stalwart_agents.gateway import Gateway

    monkeypatch.setenv("GW_BUNDLE_KEY", console["public"])
    config, calls = _config(tmp_path, monkeypatch)

    async def run() -> tuple:
        async with Gateway(config) as gateway:
            assert isinstance(gateway.session, ConnectedSession), gateway.session_error
            read = await gateway.call_tool("shop.get_order", {"order_id": "A1"})
            await anyio.to_thread.run_sync(
                lambda: ToolSwitch.objects.create(
                    organisation=console["organisation"],
                    agent="desk",
                    tool="shop.get_order",
                    reason="switched off for the test",
                )
            )
            feed = gateway.session.feed
            with anyio.fail_after(10):  # the switch reaches the gateway with the next bundle
                while not feed.current().tool_switched("desk", "shop.get_order"):
                    await anyio.sleep(0.05)
            refused = await gateway.call_tool("shop.get_order", {"order_id": "A2"})
            again = await gateway.call_tool("shop.get_order", {"order_id": "A3"})
            assert again.is_error
            spool = gateway.client.decision_log()
            with anyio.fail_after(20):
                while spool.pending():
                    await anyio.sleep(0.1)
            return read, refused, gateway.session.runtime.history.session

    read, refused, session = anyio.run(run)
    assert not read.is_error, read.content
    assert refused.is_error and "tool_disabled" in refused.content[0].text
    assert [c[2] for c in calls_of(calls)] == [{"order_id": "A1"}], "refused: never forwarded"
    # decided here: the console was never asked to check (no session of its own, no event of
    # its tool check), and what was decided reached its feed from the spool, each decision once
    assert not GuardSession.objects.exists()
    assert not Event.objects.filter(source="toolcheck").exists()
    decided = Event.objects.filter(
        organisation=console["organisation"], source="runtime", session=session, stage="tool_call"
    )
    allowed = [e for e in decided if e.decision == "allow"]
    assert len(allowed) == 1, [(e.decision, e.reasons) for e in decided]
    assert {(e.tool, e.agent) for e in allowed} == {("shop.get_order", "desk")}
    refusals = [e for e in decided if e.decision == "refuse"]
    assert [tuple(e.reasons) for e in refusals] == [("tool_disabled",)] * 2
    executed = Event.objects.filter(source="runtime", session=session, stage="execute")
    assert [(e.tool, e.verdict) for e in executed] == [("shop.get_order", "succeeded")]


def test_a_bundle_that_does_not_verify_refuses_every_call_naming_why(
    console, other_organisation, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    from console import bundles
    from stalwart_agents.gateway import Gateway

    monkeypatch.setenv("GW_BUNDLE_KEY", bundles.public_key(other_organisation.pk))
    config, calls = _config(tmp_path, monkeypatch)

    async def run() -> list:
        async with Gateway(config) as gateway:
            assert gateway.session is None
            return [
                await gateway.call_tool("shop.get_order", {"order_id": "A1"}),
                await gateway.call_tool("shop.refund_card", {"order_id": "A1", "amount": 2}),
            ]

    for result in anyio.run(run):
        assert result.is_error
        text = result.content[0].text
        assert "selector_unavailable" in text and "verif" in text, text
    assert calls_of(calls) == [], "nothing reached the server"


def test_local_deciding_without_a_bundle_key_is_refused_at_start(
    console, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    from stalwart_agents import cli

    _config(tmp_path, monkeypatch)
    code = cli.main(["gateway", "--config", str(tmp_path / "gateway.yaml")])
    assert code == 1


def _approves_the_first_waiting(approvals, answered: list[int] | None = None) -> None:  # noqa: ANN001
    """An approver on the console: says yes to the first request that waits (for up to 30 s),
    from a thread of its own (its database connection closed after)."""
    import threading

    from django.db import connection

    from guard.models import ApprovalRequest

    try:
        for _ in range(300):
            pending = ApprovalRequest.objects.filter(status="pending").first()
            if pending is not None:
                done = approvals.post(f"/v1/approvals/{pending.public_id}/approve")
                if answered is not None:
                    answered.append(done.status_code)
                return
            threading.Event().wait(0.1)
    finally:
        connection.close()


def test_a_confirm_decided_from_the_bundle_waits_in_the_consoles_queue(
    console, approver, client_for, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    """No client to ask: the confirm is filed in the console's approvals queue, and the call runs
    once, only after the approver's yes (its signed grant verified here)."""
    import threading

    from stalwart_agents.gateway import Gateway

    monkeypatch.setenv("GW_BUNDLE_KEY", console["public"])
    config, calls = _config(tmp_path, monkeypatch)
    approvals = client_for(approver)

    async def run():  # noqa: ANN202
        async with Gateway(config) as gateway:
            yes = threading.Thread(target=_approves_the_first_waiting, args=(approvals,))
            yes.start()
            done = await gateway.call_tool("shop.refund_card", {"order_id": "A7", "amount": 7})
            yes.join()
            return done

    done = anyio.run(run)
    assert not done.is_error, done.content
    refunds = [arguments for _, tool, arguments in calls_of(calls) if tool == "refund_card"]
    assert refunds == [{"amount": 7, "order_id": "A7"}]


def _publish(console, actor_for, *rules: dict) -> None:  # noqa: ANN001
    """The organisation's firewall policy, published on the console (what the bundle carries)."""
    from firewall import services as firewall_services

    actor = actor_for(console["admin"], console["organisation"])
    policy = firewall_services.policy_import(
        actor=actor, data={"name": "main", "default_verdict": "allow", "rules": list(rules)}
    )
    firewall_services.policy_publish(actor=actor, policy=policy)


class _Person:
    """The MCP client's elicitation callback: says yes, and keeps what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, ctx, params):  # noqa: ANN001, ANN204
        import mcp_types as types

        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})


def _text(result) -> str:  # noqa: ANN001
    return " ".join(getattr(block, "text", "") for block in result.content)


NO_LOOKUPS = {
    "priority": 10,
    "name": "no lookups",
    "tool_name_glob": "shop.get_order",
    "verdict": "deny",
}


def test_the_organisations_published_policy_gates_a_tools_call_decided_from_the_bundle(
    console, actor_for, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    """The security team's published policy denies a tool: a `tools/call` from an MCP client,
    decided from the bundle, is refused naming the rule, reaches no server, and the deny is in
    the console's feed as the console records a firewall evaluation."""
    import mcp

    from console.models import Event
    from stalwart_agents.gateway import Gateway
    from stalwart_agents.gateway.server import build_server

    _publish(console, actor_for, NO_LOOKUPS)
    monkeypatch.setenv("GW_BUNDLE_KEY", console["public"])
    config, calls = _config(tmp_path, monkeypatch)

    async def run():  # noqa: ANN202
        async with Gateway(config) as gateway:
            async with mcp.Client(build_server(gateway)) as client:
                denied = await client.call_tool("shop.get_order", {"order_id": "A1"})
            spool = gateway.client.decision_log()
            with anyio.fail_after(20):
                while spool.pending():
                    await anyio.sleep(0.1)
            return denied

    denied = anyio.run(run)
    assert denied.is_error and "no lookups" in _text(denied), _text(denied)
    assert calls_of(calls) == [], "the deny reached nothing"
    # the organisation's deny and the tool check's allow: each recorded once
    decided = Event.objects.filter(
        organisation=console["organisation"], source="runtime", tool="shop.get_order"
    )
    assert sorted((e.decision, e.verdict, e.rule) for e in decided) == [
        ("allow", "", ""),
        ("refuse", "deny", "no lookups"),
    ]
    # ... and only there: the gateway's own report (sent as it stopped) does not repeat the
    # organisation's deny, which sequence rules would otherwise count twice
    reported = Event.objects.filter(organisation=console["organisation"], source="gateway")
    assert [(e.tool, e.verdict) for e in reported] == []


def test_the_files_deny_is_reported_by_the_gateway_and_the_organisations_by_the_runtime(
    console, actor_for, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    """gateway.yaml's own firewall file and the published policy both decide: each deny reaches
    the feed once, the file's as the gateway's report (source `gateway`, its rule), the
    organisation's from the decision log (source `runtime`), never both for one call."""
    import mcp

    from console.models import Event
    from stalwart_agents.gateway import Gateway
    from stalwart_agents.gateway.server import build_server

    _publish(console, actor_for, NO_LOOKUPS)
    monkeypatch.setenv("GW_BUNDLE_KEY", console["public"])
    config, calls = _config(tmp_path, monkeypatch, firewall=FIREWALL)
    assert config.firewall is not None

    async def run():  # noqa: ANN202
        async with Gateway(config) as gateway:
            assert gateway.reporter is not None
            async with mcp.Client(build_server(gateway)) as client:
                by_org = await client.call_tool("shop.get_order", {"order_id": "A1"})
                by_file = await client.call_tool("shop.close_account", {"customer_id": "C1"})
            spool = gateway.client.decision_log()
            with anyio.fail_after(20):
                while spool.pending():
                    await anyio.sleep(0.1)
            return by_org, by_file

    by_org, by_file = anyio.run(run)  # the gateway's last report is sent as it stops
    assert by_org.is_error and "no lookups" in _text(by_org), _text(by_org)
    assert by_file.is_error and "no account closing" in _text(by_file), _text(by_file)
    assert calls_of(calls) == []
    denies = Event.objects.filter(organisation=console["organisation"], decision="refuse")
    assert sorted((e.source, e.tool, e.rule) for e in denies if e.verdict == "deny") == [
        ("gateway", "shop.close_account", "no account closing"),
        ("runtime", "shop.get_order", "no lookups"),
    ]


def test_with_no_published_policy_the_gateway_has_no_organisation_gate(
    console, actor_for, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    """No active policy on the console: calls go on (none refused for want of a policy); a policy
    published while the gateway runs gates the next call."""
    import mcp

    from stalwart_agents.door_firewall import published
    from stalwart_agents.gateway import Gateway
    from stalwart_agents.gateway.server import build_server

    monkeypatch.setenv("GW_BUNDLE_KEY", console["public"])
    config, calls = _config(tmp_path, monkeypatch)

    def publish() -> None:  # from a worker thread, whose connection it closes after it
        from django.db import connection

        try:
            _publish(console, actor_for, NO_LOOKUPS)
        finally:
            connection.close()

    async def run():  # noqa: ANN202
        async with Gateway(config) as gateway:
            async with mcp.Client(build_server(gateway)) as client:
                before = await client.call_tool("shop.get_order", {"order_id": "A1"})
                await anyio.to_thread.run_sync(publish)
                feed = gateway.session.feed
                with anyio.fail_after(10):
                    while not published(feed.current()):
                        await anyio.sleep(0.05)
                after = await client.call_tool("shop.get_order", {"order_id": "A2"})
            return before, after

    before, after = anyio.run(run)
    assert not before.is_error, _text(before)
    assert after.is_error and "no lookups" in _text(after), _text(after)
    assert [arguments for _, _, arguments in calls_of(calls)] == [{"order_id": "A1"}]


def test_a_require_approval_of_the_published_policy_asks_the_person_through_elicitation(
    console, actor_for, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    """A read the check allows, held by the organisation's policy: the person is asked over the
    client's elicitation, as for the gateway's own file, and the call runs once on a yes."""
    import mcp

    from stalwart_agents.gateway import Gateway
    from stalwart_agents.gateway.server import build_server

    _publish(
        console,
        actor_for,
        {**NO_LOOKUPS, "name": "ask first", "verdict": "require_approval"},
    )
    monkeypatch.setenv("GW_BUNDLE_KEY", console["public"])
    config, calls = _config(tmp_path, monkeypatch)
    person = _Person()

    async def run():  # noqa: ANN202
        async with Gateway(config) as gateway:
            async with mcp.Client(build_server(gateway), elicitation_callback=person) as client:
                asked = await client.call_tool("shop.get_order", {"order_id": "A1"})
            async with mcp.Client(build_server(gateway)) as client:
                nobody = await client.call_tool("shop.get_order", {"order_id": "A2"})
            return asked, nobody

    asked, nobody = anyio.run(run)
    assert not asked.is_error, _text(asked)
    assert len(person.asked) == 1 and "ask first" in person.asked[0], person.asked
    # nobody to ask (no elicitation, no request in the console's queue): refused, as for the file
    assert nobody.is_error and "ask first" in _text(nobody), _text(nobody)
    assert [arguments for _, _, arguments in calls_of(calls)] == [{"order_id": "A1"}]


def test_a_write_in_a_session_the_console_holds_goes_to_its_approvers_not_the_clients_person(
    console, approver, client_for, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    """A hold is the security team's: a write in a held session is not put to the client's
    person (whose yes the gateway would sign here) but to the console's approvals queue, and runs
    once, only after the approvers' yes."""
    import threading

    import mcp

    from console.models import SessionHold
    from stalwart_agents.gateway import Gateway
    from stalwart_agents.gateway.server import build_server

    monkeypatch.setenv("GW_BUNDLE_KEY", console["public"])
    config, calls = _config(tmp_path, monkeypatch)
    person = _Person()
    approvals = client_for(approver)
    answered: list[int] = []

    async def run():  # noqa: ANN202
        async with Gateway(config) as gateway:
            session = gateway.session.runtime.session
            await anyio.to_thread.run_sync(
                lambda: SessionHold.objects.create(
                    organisation=console["organisation"], agent="desk", session=session, reason="t"
                )
            )
            with anyio.fail_after(10):  # the hold reaches the gateway's bundle
                while not gateway.session.feed.current().held("desk", session):
                    await anyio.sleep(0.05)
            yes = threading.Thread(target=_approves_the_first_waiting, args=(approvals, answered))
            yes.start()
            async with mcp.Client(build_server(gateway), elicitation_callback=person) as client:
                done = await client.call_tool("shop.refund_card", {"order_id": "A7", "amount": 7})
            yes.join()
            return done

    done = anyio.run(run)
    assert not done.is_error, _text(done)
    assert person.asked == [], "the client's person was asked about a write in a held session"
    assert answered == [200]
    refunds = [arguments for _, tool, arguments in calls_of(calls) if tool == "refund_card"]
    assert refunds == [{"amount": 7, "order_id": "A7"}]
