"""Deciding in the agent's process from the console's signed bundle, against a live console.

The console governs (holds, switches, settings, approvals), the runtime decides: a hold or a
switch raised on the console reaches the runtime within 2 s; a bundle past its max age, one that
does not verify, or a console that is gone long enough, makes every check fail closed.
"""

from __future__ import annotations

import copy
import sys
import threading
import time
from pathlib import Path

import pytest

from stalwart_agents import Client
from stalwart_agents.client import ApprovalDenied, ConnectedSession, SelectorUnavailableError

from .console_proxy import ConsoleProxy
from .test_runtime_session import inbox_catalogue

SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop" / "agent.yaml"

pytestmark = pytest.mark.django_db(transaction=True)


#: The longest the live console's long-polls wait in these tests: once a test's clients are
#: closed, what they still have in flight ends within it, before the test database goes.
CONSOLE_WAIT = 1.0


@pytest.fixture
def console(live_server, admin, organisation, actor_for, settings):  # noqa: ANN001, ANN201
    """The live console's url, an editor key and the organisation's bundle public key."""
    from console import bundles
    from console import services as console_services

    settings.STALWART_BUNDLE_MAX_WAIT = CONSOLE_WAIT
    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="runtime", role="editor"
    )
    yield {
        "url": live_server.url,
        "key": key,
        "public": bundles.public_key(organisation.pk),
        "organisation": organisation,
        "admin": admin,
    }
    time.sleep(CONSOLE_WAIT + 0.3)


def local_client(console, url: str | None = None, **given) -> Client:  # noqa: ANN001
    given.setdefault("wait", 5.0)
    return Client(
        url=url or console["url"],
        api_key=console["key"],
        decide="local",
        bundle_key=console["public"],
        **given,
    )


def refund_done(session: ConnectedSession) -> None:
    """A run that refunded R1 (the person's yes given in this process), so its undo is a write the
    tool check allows (`compensation`): the write a hold must stop."""
    session.read("refund 20 on order A1")
    assert (
        session.execute("get_order", {"order_id": "A1"}, lambda order_id: {"order_id": order_id})[
            "outcome"
        ]
        == "SUCCEEDED"
    )
    refund = {"order_id": "A1", "amount": 20}
    asked = session.execute("refund_card", refund, lambda **_: {"refund_id": "R1"})
    assert asked["outcome"] == "CONFIRM", asked
    token = session.approve(asked["approval"])
    ran = session.execute("refund_card", refund, lambda **_: {"refund_id": "R1"}, token=token)
    assert ran["outcome"] == "SUCCEEDED", ran


def undo_check(session: ConnectedSession):  # noqa: ANN201
    return session.check_tool_call("cancel_refund", {"refund_id": "R1"}, compensation_of=1)


def denied_in_feed(console, tool: str, rule: str) -> bool:  # noqa: ANN001
    """Whether the organisation's deny of `tool` by `rule` reached the console's feed from the
    runtime's decision log."""
    from console.models import Event

    return Event.objects.filter(
        organisation=console["organisation"], source="runtime", tool=tool, verdict="deny", rule=rule
    ).exists()


def until(predicate, seconds: float) -> float:  # noqa: ANN001
    """Seconds until `predicate()` held (checked every 20 ms); fails past `seconds`."""
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        time.sleep(0.02)
    return time.monotonic() - started


def closing(function):  # noqa: ANN001, ANN201
    """`function` for another thread, which closes that thread's database connection after it
    (else the connection outlives the test and the test database cannot be dropped)."""

    def run() -> None:
        from django.db import connections

        try:
            function()
        finally:
            connections.close_all()

    return run


def refuses(session: ConnectedSession) -> bool:
    """Whether a check of the session fails closed now."""
    try:
        session.check_tool_call("get_order", {"order_id": "A1"})
    except SelectorUnavailableError:
        return True
    return False


def test_a_local_session_decides_as_the_console_decides(console):  # noqa: ANN001
    remote = Client(url=console["url"], api_key=console["key"]).session(
        "assistant", catalogue=inbox_catalogue()
    )
    with local_client(console) as client:
        records: list[dict] = []
        local = client.session("assistant", catalogue=inbox_catalogue(), sink=records.append)
        assert isinstance(local, ConnectedSession)
        assert local.runtime.sink == records.append  # the decision logs' sink, handed on
        for session in (remote, local):
            session.read("refund 20 on order A1")
            session.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
        for call in (
            ("refund_card", {"order_id": "A1", "amount": 20}),
            ("refund_card", {"order_id": "A1", "amount": 500}),
            ("delete_everything", {}),
            ("get_order", {"order_id": "A1"}),
        ):
            want, got = remote.check_tool_call(*call), local.check_tool_call(*call)
            assert (got.decision, got.reasons) == (want.decision, want.reasons), call


def test_the_organisations_settings_decide_a_local_session(console):  # noqa: ANN001
    from console.models import OrganisationSettings

    OrganisationSettings.objects.update_or_create(
        organisation=console["organisation"], defaults={"taint_policy": "refuse"}
    )
    with local_client(console) as client:
        session = client.session("assistant", catalogue=inbox_catalogue())
        session.record("read_inbox", {}, {"body": "refund 20 on order A1"})
        session.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
        check = session.check_tool_call("refund_card", {"order_id": "A1", "amount": 20})
        assert (check.decision, check.reasons) == ("refuse", ["tainted_call"])


def test_a_rulebook_the_console_holds_comes_with_the_bundle(console, actor_for):  # noqa: ANN001
    from pathlib import Path

    from rulebooks.services import rulebook_upload
    from stalwart_agents import Agent

    shop = Path(__file__).resolve().parents[2] / "examples" / "shop"
    rulebook_upload(
        actor=actor_for(console["admin"], console["organisation"]),
        name="shop",
        data=(shop / "policy.co").read_bytes(),
        filename="policy.co",
    )
    desk = Agent.from_file(shop / "agent.yaml")
    with local_client(console) as client:
        record = client.rulebook("shop", agent="billing")
        with pytest.raises(KeyError):
            client.rulebook("nothing", agent="billing")
        session = client.session("billing", catalogue=desk.catalogue(), rulebook=record)
        session.read("estorne 40 do pedido 4411")
        check = session.check_tool_call(
            "refund_card",
            {"order_id": "4411", "amount": 40.0},
            origins={"order_id": "typed", "amount": "typed"},
            context={"order_paid": False},
        )
        assert check.decision == "refuse"


def test_a_hold_raised_on_the_console_stops_the_next_write_within_two_seconds(console):  # noqa: ANN001
    from console.models import SessionHold

    with local_client(console, wait=10.0) as client:
        session = client.session(
            "assistant",
            catalogue=inbox_catalogue(),
            tools={"cancel_refund": lambda refund_id: {"ok": True}},
        )
        refund_done(session)
        assert (undo_check(session).decision, undo_check(session).reasons) == (
            "allow",
            ["compensation"],
        )
        # What a sequence rule's `hold_session` writes (firewall/matching.py), while the runtime
        # is in the middle of a long-poll.
        time.sleep(0.3)
        SessionHold.objects.create(
            organisation=console["organisation"],
            agent="assistant",
            session=session.id,
            reason="sequence rule `exfiltration` matched",
        )
        took = until(lambda: undo_check(session).decision != "allow", 2.0)
        check = undo_check(session)
        assert (check.decision, check.reasons) == ("confirm", ["compensation", "session_held"])
        print(f"hold reached the runtime in {took:.3f} s")
        # Another session of the same agent is not held.
        other = client.session("assistant", catalogue=inbox_catalogue())
        other.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
        assert "session_held" not in other.check_tool_call("get_order", {"order_id": "A1"}).reasons


def test_a_tool_switched_off_and_writes_switched_off_reach_the_runtime(console, actor_for):  # noqa: ANN001
    from console.models import ToolSwitch
    from guard.executor import write_switch_set

    with local_client(console, wait=10.0) as client:
        session = client.session("assistant", catalogue=inbox_catalogue())
        session.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
        assert session.check_tool_call("get_order", {"order_id": "A1"}).decision == "allow"
        ToolSwitch.objects.create(
            organisation=console["organisation"],
            agent="assistant",
            tool="get_order",
            reason="sequence rule matched",
        )
        until(
            lambda: session.check_tool_call("get_order", {"order_id": "A1"}).decision != "allow",
            2.0,
        )
        check = session.check_tool_call("get_order", {"order_id": "A1"})
        assert (check.decision, check.reasons) == ("refuse", ["tool_disabled"])

        write_switch_set(
            actor=actor_for(console["admin"], console["organisation"]), tool="", enabled=False
        )
        ran: list[str] = []
        blocked = None

        def note_blocked() -> bool:
            nonlocal blocked
            blocked = session.execute(
                "save_note",
                {"order_id": "A1", "text": "x"},
                lambda **_: ran.append("x"),
                token=session.approve_call("save_note", {"order_id": "A1", "text": "x"}),
            )
            return blocked["outcome"] == "BLOCKED"

        until(note_blocked, 2.0)
        before = len(ran)
        assert note_blocked() and blocked["reasons"] == ["writes_disabled"]
        assert len(ran) == before  # the tool was not called


def test_a_bundle_past_its_max_age_makes_every_check_refuse(console):  # noqa: ANN001
    proxy = ConsoleProxy(console["url"])
    with local_client(console, url=proxy.url, max_age=2.0) as client:
        session = client.session("assistant", catalogue=inbox_catalogue())
        assert session.check_tool_call("get_order", {"order_id": "A1"}).decision == "allow"
        proxy.down()
        time.sleep(2.3)
        with pytest.raises(SelectorUnavailableError, match="past its max age"):
            session.check_tool_call("get_order", {"order_id": "A1"})
        ran: list[int] = []
        with pytest.raises(SelectorUnavailableError):
            session.execute("get_order", {"order_id": "A1"}, lambda **_: ran.append(1))
        assert ran == []


def test_the_console_down_the_session_decides_from_its_bundle_until_max_age_then_fails_closed(
    console,  # noqa: ANN001
):
    proxy = ConsoleProxy(console["url"])
    with local_client(console, url=proxy.url, max_age=3.0) as client:
        session = client.session("assistant", catalogue=inbox_catalogue())
        proxy.down()
        down_at = time.monotonic()
        decided = 0
        while time.monotonic() - down_at < 1.5:
            assert session.check_tool_call("get_order", {"order_id": "A1"}).decision == "allow"
            decided += 1
        assert decided > 10
        time.sleep(max(0.0, 3.3 - (time.monotonic() - down_at)))
        with pytest.raises(SelectorUnavailableError):
            session.check_tool_call("get_order", {"order_id": "A1"})
        # A new session cannot be opened either: no bundle to decide with.
        with pytest.raises(SelectorUnavailableError):
            client.session("assistant", catalogue=inbox_catalogue()).check_tool_call(
                "get_order", {"order_id": "A1"}
            )
        # The console back: the session decides again once the feed has a fresh signature.
        proxy.up()
        # Within the feed's longest retry (5 s) and a long-poll that the dead proxy left
        # hanging (the client's timeout), on a loaded machine.
        until(lambda: not refuses(session), 20.0)


def test_a_tampered_bundle_is_refused(console):  # noqa: ANN001
    proxy = ConsoleProxy(console["url"])

    def switch_nothing_off(bundle: dict) -> dict:
        bundle["content"]["writes"] = {"": True}
        bundle["content"]["holds"] = []
        return bundle

    proxy.tamper = switch_nothing_off
    with pytest.raises(SelectorUnavailableError, match="does not verify"):
        local_client(console, url=proxy.url).session("assistant", catalogue=inbox_catalogue())
    # A bundle signed by another organisation's key does not verify under this one's either.
    proxy.tamper = None
    from console import bundles

    wrong = Client(
        url=proxy.url,
        api_key=console["key"],
        decide="local",
        bundle_key=bundles.public_key(console["organisation"].pk + 1000),
    )
    with pytest.raises(SelectorUnavailableError, match="does not verify"):
        wrong.session("assistant", catalogue=inbox_catalogue())


def test_a_bundle_tampered_in_flight_later_makes_the_running_session_refuse(console):  # noqa: ANN001
    from console.models import SessionHold

    proxy = ConsoleProxy(console["url"])
    with local_client(console, url=proxy.url, wait=10.0) as client:
        session = client.session("assistant", catalogue=inbox_catalogue())
        assert session.check_tool_call("get_order", {"order_id": "A1"}).decision == "allow"

        def drop_holds(bundle: dict) -> dict:
            bundle["content"]["holds"] = []
            return bundle

        proxy.tamper = drop_holds
        SessionHold.objects.create(
            organisation=console["organisation"], agent="assistant", session=session.id, reason="x"
        )

        until(lambda: refuses(session), 2.0)


def test_an_approval_goes_through_the_consoles_queue_and_its_grant_is_accepted(
    console,  # noqa: ANN001
    approver,  # noqa: ANN001
    client_for,  # noqa: ANN001
):
    from guard.models import ApprovalRequest

    with local_client(console) as client:
        session = client.session("assistant", catalogue=inbox_catalogue())
        session.read("refund 20 on order A1")
        session.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
        refund = {"order_id": "A1", "amount": 20}
        asked = session.check_tool_call("refund_card", refund)
        assert asked.decision == "confirm"
        answered: list[int] = []

        def approve() -> None:
            request = ApprovalRequest.objects.get(source="runtime", status="pending")
            answered.append(
                client_for(approver).post(f"/v1/approvals/{request.public_id}/approve").status_code
            )

        pages: list[str] = []

        def approve_on_the_page() -> None:
            pages.append(client_for(approver).get("/approvals/").content.decode())
            approve()

        answering = threading.Timer(0.5, closing(approve_on_the_page))
        answering.start()
        token = session.wait_for_approval(asked, timeout=20, poll=0.1)
        answering.join()
        assert answered == [200]
        assert session.id in pages[0] and "(decided in the agent" in pages[0]
        request = ApprovalRequest.objects.get(source="runtime")
        assert request.detail == {"session": session.id} and request.call["arguments"] == refund
        check = session.check_tool_call("refund_card", refund, token=token)
        assert (check.decision, check.reasons) == ("allow", ["confirmed"])
        # The token is for exactly that call: another amount is not confirmed by it.
        other = session.check_tool_call(
            "refund_card", {"order_id": "A1", "amount": 30}, token=token
        )
        assert other.decision == "refuse"

        # A denial on the console: nothing runs.
        second = session.check_tool_call("save_note", {"order_id": "A1", "text": "refund 20"})
        assert second.decision == "confirm"

        def deny() -> None:
            request = ApprovalRequest.objects.get(source="runtime", status="pending")
            client_for(approver).post(f"/v1/approvals/{request.public_id}/deny")

        threading.Timer(0.5, closing(deny)).start()
        with pytest.raises(ApprovalDenied):
            session.wait_for_approval(second, timeout=20, poll=0.1)


def test_a_grant_for_another_point_of_the_session_is_refused(console, approver, client_for):  # noqa: ANN001
    from guard.models import ApprovalRequest

    with local_client(console) as client:
        session = client.session("assistant", catalogue=inbox_catalogue())
        session.read("refund 20 on order A1")
        session.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
        asked = session.check_tool_call("refund_card", {"order_id": "A1", "amount": 20})

        def approve_then_move_on() -> None:
            request = ApprovalRequest.objects.get(source="runtime", status="pending")
            # The session goes on before the answer comes back: the grant names the old point.
            session.record("get_order", {"order_id": "A2"}, {"order_id": "A2"})
            client_for(approver).post(f"/v1/approvals/{request.public_id}/approve")

        threading.Timer(0.5, closing(approve_then_move_on)).start()
        with pytest.raises(SelectorUnavailableError, match="history_at"):
            session.wait_for_approval(asked, timeout=20, poll=0.1)


def test_local_deciding_needs_the_consoles_url_and_the_public_key():
    with pytest.raises(ValueError, match="bundle public key"):
        Client(url="http://127.0.0.1:9", api_key="k", decide="local")
    with pytest.raises(ValueError, match="url"):
        Client(url="", api_key="k", decide="local", bundle_key="ed25519:AAAA")
    with pytest.raises(ValueError, match="console or local"):
        Client(url="http://127.0.0.1:9", decide="somewhere")


def test_an_old_bundle_replayed_refreshes_nothing_and_the_session_fails_closed(console):  # noqa: ANN001
    from console.models import SessionHold

    proxy = ConsoleProxy(console["url"])
    with local_client(console, url=proxy.url, max_age=3.0) as client:
        session = client.session("assistant", catalogue=inbox_catalogue())
        old = client.feed("assistant")
        assert session.check_tool_call("get_order", {"order_id": "A1"}).decision == "allow"
        import json
        import urllib.request

        request = urllib.request.Request(
            f"{console['url']}/v1/bundle?agent=assistant",
            headers={"Authorization": f"Bearer {console['key']}"},
        )
        with urllib.request.urlopen(request) as answer:  # noqa: S310 - the live console
            captured = json.loads(answer.read())
        # From now on whoever sits between the runtime and the console answers with the bundle
        # signed before the hold: it verifies, and is not newer than what the runtime holds.
        proxy.tamper = lambda _: captured
        SessionHold.objects.create(
            organisation=console["organisation"], agent="assistant", session=session.id, reason="x"
        )

        until(lambda: refuses(session), 5.0)
        assert old.version == captured["version"]


def test_the_firewall_decides_from_the_bundle_as_the_console_evaluates(console, actor_for):  # noqa: ANN001
    import json
    import urllib.request

    from console.models import ToolSwitch
    from firewall import services as firewall_services

    actor = actor_for(console["admin"], console["organisation"])
    policy = firewall_services.policy_import(
        actor=actor,
        data={
            "name": "main",
            "default_verdict": "allow",
            "rules": [
                {
                    "priority": 10,
                    "name": "no shell",
                    "tool_name_glob": "shell.*",
                    "verdict": "deny",
                },
                {
                    "priority": 20,
                    "name": "big refunds",
                    "tool_name_glob": "refund_card",
                    "args_match": [{"path": "$.amount", "op": "gt", "value": 100}],
                    "verdict": "require_approval",
                },
            ],
        },
    )
    firewall_services.policy_publish(actor=actor, policy=policy)

    def evaluated(body: dict) -> dict:
        request = urllib.request.Request(
            f"{console['url']}/v1/firewall/evaluate",
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Authorization": f"Bearer {console['key']}",
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(request) as answer:  # noqa: S310 - the live console
            return json.loads(answer.read())

    calls = [
        ("get_order", {"order_id": "A1"}),
        ("shell.exec", {"command": "ls"}),
        ("refund_card", {"order_id": "A1", "amount": 500}),
        ("refund_card", {"order_id": "A1", "amount": 5}),
    ]
    with local_client(console) as client:
        session = client.session("assistant", catalogue=inbox_catalogue())
        for tool, arguments in calls:
            want = evaluated({"tool": tool, "arguments": arguments, "agent": "assistant"})
            got = session.evaluate(tool, arguments)
            fields = ("verdict", "decision", "reasons", "rule", "policy", "policy_version")
            assert {k: got[k] for k in fields} == {k: want[k] for k in fields}, tool
        ToolSwitch.objects.create(
            organisation=console["organisation"], agent="assistant", tool="get_order", reason="x"
        )
        until(
            lambda: (
                session.evaluate("get_order", {"order_id": "A1"})["reasons"] == ["tool_disabled"]
            ),
            2.0,
        )
        want = evaluated(
            {"tool": "get_order", "arguments": {"order_id": "A1"}, "agent": "assistant"}
        )
        assert want["reasons"] == ["tool_disabled"]


def test_a_revoked_key_stops_the_runtime_at_its_next_look(console, actor_for):  # noqa: ANN001
    from console import services as console_services
    from console.models import ApiKey

    with local_client(console, wait=2.0) as client:
        session = client.session("assistant", catalogue=inbox_catalogue())
        assert not refuses(session)
        key = ApiKey.objects.get(prefix=console["key"].split("_")[1])
        console_services.api_key_revoke(
            actor=actor_for(console["admin"], console["organisation"]), key=key
        )
        until(lambda: refuses(session), 4.0)
        with pytest.raises(SelectorUnavailableError, match="refused this key"):
            session.check_tool_call("get_order", {"order_id": "A1"})


def test_a_local_session_may_only_tighten_and_follows_records_only(console):  # noqa: ANN001
    from console.models import OrganisationSettings
    from stalwart_agents.client import RequestRefused

    with local_client(console) as client:
        with pytest.raises(RequestRefused) as refused:
            client.session(
                "assistant",
                catalogue=inbox_catalogue(),
                settings={"licence_valid_until": "2999-01-01"},
            )
        assert list(refused.value.body) == ["settings.licence_valid_until"]
        with pytest.raises(RequestRefused):
            client.session(
                "assistant", catalogue=inbox_catalogue(), settings={"said": {"s1_veto": "loud"}}
            )
    OrganisationSettings.objects.update_or_create(
        organisation=console["organisation"], defaults={"compiled_records_only": True}
    )
    source = (Path(__file__).resolve().parents[2] / "examples" / "shop" / "policy.co").read_text()
    with local_client(console) as client:
        with pytest.raises(RequestRefused) as refused:
            client.session("assistant", catalogue=inbox_catalogue(), rulebook=source)
        assert "compiled rulebook records only" in str(refused.value.body["rulebook"])


def test_a_local_sessions_decisions_reach_the_consoles_feed_through_its_decision_log(console):  # noqa: ANN001
    """Decided here, recorded there: with no sink of its own, a local session writes each
    decision to the client's spool, which ships it to the console's feed, once, with the firewall
    version of the bundle it was decided under."""
    from console.models import Event

    with local_client(console) as client:
        local = client.session("assistant", catalogue=inbox_catalogue())
        spool = client.decision_log()
        assert local.runtime.sink == spool
        assert spool.path.name.startswith("decisions-")  # one spool per console and key
        local.check_tool_call("delete_everything", {})

        def shipped() -> bool:
            return Event.objects.filter(
                organisation=console["organisation"], source="runtime", tool="delete_everything"
            ).exists()

        until(shipped, 10.0)
        event = Event.objects.get(source="runtime", tool="delete_everything")
        assert (event.decision, event.reasons) == ("refuse", ["unknown_tool"])
        assert event.session == local.runtime.history.session
        until(lambda: spool.pending() == 0, 10.0)  # deleted from the spool once the console took it


def test_agent_chat_decides_from_the_bundle_and_its_decisions_reach_the_feed(console, monkeypatch):  # noqa: ANN001
    """`Agent.chat` under `STALWART_DECIDE=local`: its conversation's runtime session decides
    from the bundle (a tool switched off on the console is refused at the next turn) and writes
    its decision logs, which reach the console's feed."""
    from console.models import Event, ToolSwitch

    shop = chatting_locally(console, monkeypatch)
    try:
        reply = shop.chat("show me order 4411", user="ana", agent="desk")
        assert [done["tool"] for done in reply.ran] == ["get_order"], reply.text
        ToolSwitch.objects.create(
            organisation=console["organisation"], agent="desk", tool="get_order", reason="test"
        )

        def switched_off() -> bool:
            again = shop.chat("show me order 4411", user="ana", agent="desk")
            return not again.ran and "tool_disabled" in again.text

        until(switched_off, 5.0)
        until(
            lambda: Event.objects.filter(
                organisation=console["organisation"], source="runtime", reasons=["tool_disabled"]
            ).exists(),
            15.0,
        )
    finally:
        shop._local_client().close()


def test_a_rotation_keeps_a_runtime_given_the_next_key_deciding_and_stops_one_given_only_the_old(
    console,  # noqa: ANN001
    actor_for,  # noqa: ANN001
    approver,  # noqa: ANN001
    client_for,  # noqa: ANN001
):
    from console import bundles
    from console.models import SessionHold
    from guard.models import ApprovalRequest

    ring = bundles.key_ring(console["organisation"].pk)
    assert ring.current.public == console["public"]
    both = Client(
        url=console["url"],
        api_key=console["key"],
        decide="local",
        bundle_key=[ring.current.public, ring.next.public],
        wait=5.0,
    )
    with both, local_client(console) as old_only:
        rolling = both.session("assistant", catalogue=inbox_catalogue())
        stale = old_only.session("assistant", catalogue=inbox_catalogue())
        for session in (rolling, stale):
            session.read("refund 20 on order A1")
            session.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
            assert session.check_tool_call("get_order", {"order_id": "A1"}).decision == "allow"

        time.sleep(0.3)  # both runtimes in the middle of a long-poll
        rotated = bundles.bundle_key_rotate(
            actor=actor_for(console["admin"], console["organisation"])
        )
        assert rotated.public == ring.next.public
        # The runtime given only the old key fails closed at its next bundle, signed with the new.
        took = until(lambda: refuses(stale), 2.0)
        print(f"the old key's runtime failed closed {took:.3f} s after the rotation")
        with pytest.raises(SelectorUnavailableError, match="does not trust"):
            stale.check_tool_call("get_order", {"order_id": "A1"})
        # The runtime given both keeps deciding, from bundles the new key signed.
        assert rolling.check_tool_call("get_order", {"order_id": "A1"}).decision == "allow"
        hold_reaches(console, both, rolling)
        SessionHold.objects.filter(session=rolling.id).update(released_at=time_now())
        feed = both.feed("assistant")
        until(lambda: not feed.current().held("assistant", rolling.id), 3.0)
        # A person's approval after the rotation is a grant signed with the new key: accepted.
        asked = rolling.check_tool_call("refund_card", {"order_id": "A1", "amount": 20})
        assert asked.decision == "confirm"

        def approve() -> None:
            request = ApprovalRequest.objects.get(source="runtime", status="pending")
            client_for(approver).post(f"/v1/approvals/{request.public_id}/approve")

        threading.Timer(0.5, closing(approve)).start()
        token = rolling.wait_for_approval(asked, timeout=20, poll=0.1)
        check = rolling.check_tool_call(
            "refund_card", {"order_id": "A1", "amount": 20}, token=token
        )
        assert (check.decision, check.reasons) == ("allow", ["confirmed"])


def hold_reaches(console, client: Client, session: ConnectedSession) -> float:  # noqa: ANN001
    """Hold the session on the console; the seconds until the runtime's bundle says so (< 2 s)."""
    from console.models import SessionHold

    SessionHold.objects.create(
        organisation=console["organisation"],
        agent="assistant",
        session=session.id,
        reason="sequence rule `exfiltration` matched",
    )
    feed = client.feed("assistant")
    return until(lambda: feed.current().held("assistant", session.id), 2.0)


def time_now():  # noqa: ANN201
    from django.utils import timezone

    return timezone.now()


def test_a_console_with_too_many_long_polls_answers_at_once_and_the_runtime_keeps_deciding(
    console,  # noqa: ANN001
    settings,  # noqa: ANN001
):

    settings.STALWART_BUNDLE_MAX_POLLS = 0  # no long-poll may wait: each is answered at once
    proxy = ConsoleProxy(console["url"])
    try:
        with local_client(console, url=proxy.url, max_age=2.0, wait=10.0) as client:
            session = client.session("assistant", catalogue=inbox_catalogue())
            session.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
            asked_before = proxy.bundle_requests
            # Past twice its max age, the bundle is still fresh: each 304 came with a stamp.
            deadline = time.monotonic() + 4.5
            while time.monotonic() < deadline:
                assert session.check_tool_call("get_order", {"order_id": "A1"}).decision == "allow"
                time.sleep(0.1)
            asked = proxy.bundle_requests - asked_before
            # Retry-After was followed (no tight loop), yet often enough to stay fresh.
            assert 3 <= asked <= 12, asked
            took = hold_reaches(console, client, session)
            print(f"{asked} bundle requests in 4.5 s; the hold reached the runtime in {took:.3f} s")
    finally:
        proxy.down()


def handoff_catalogue() -> dict:
    """`assistant` and `billing`, one conversation: billing is handed the session."""
    catalogue = inbox_catalogue()
    catalogue["agents"]["billing"] = {"tools": ["get_order", "cancel_refund", "save_note"]}
    return catalogue


def test_a_handoff_agents_switch_and_hold_stop_it_locally_as_on_the_console(console):  # noqa: ANN001
    """A sequence alert raised on the events of the agent a session was handed to (its calls
    carry its name) switches the tool off and holds the session for that agent: a local session
    applies both to that agent's calls, as the console's check does."""
    from console.models import ToolSwitch

    tools = {"cancel_refund": lambda refund_id: {"ok": True}}
    remote = Client(url=console["url"], api_key=console["key"]).session(
        "assistant", catalogue=handoff_catalogue(), tools=tools
    )
    with local_client(console, wait=10.0) as client:
        local = client.session("assistant", catalogue=handoff_catalogue(), tools=tools)
        for session in (remote, local):
            session.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
            check = session.check_tool_call("get_order", {"order_id": "A1"}, agent="billing")
            assert check.decision == "allow", check
        ToolSwitch.objects.create(
            organisation=console["organisation"],
            agent="billing",
            tool="get_order",
            reason="sequence rule matched",
        )
        # the console reads its rows at once; the local session within the bundle's long-poll
        for session, within in ((remote, 0.1), (local, 2.0)):
            until(
                lambda session=session: (
                    session.check_tool_call(
                        "get_order", {"order_id": "A1"}, agent="billing"
                    ).decision
                    != "allow"
                ),
                within,
            )
            check = session.check_tool_call("get_order", {"order_id": "A1"}, agent="Billing")
            assert (check.decision, check.reasons) == ("refuse", ["tool_disabled"]), session
            # the session's own agent is not switched off
            assert session.check_tool_call("get_order", {"order_id": "A1"}).decision == "allow"


def test_a_hold_of_the_agent_a_session_was_handed_to_holds_its_writes_locally(console):  # noqa: ANN001
    """As the console's check does (`console.controls`: the calling agent's hold or the
    session's own agent's, tests/console/test_controls_rule.py)."""
    from console.models import SessionHold

    tools = {"cancel_refund": lambda refund_id: {"ok": True}}
    with local_client(console, wait=10.0) as client:
        local = client.session("assistant", catalogue=handoff_catalogue(), tools=tools)

        def undo(agent: str = "billing") -> tuple[str, list[str]]:
            check = local.check_tool_call(
                "cancel_refund", {"refund_id": "R1"}, compensation_of=1, agent=agent
            )
            return check.decision, check.reasons

        refund_done(local)
        assert undo() == ("allow", ["compensation"])
        # What `hold_session` writes for an alert on billing's events in this session.
        SessionHold.objects.create(
            organisation=console["organisation"],
            agent="billing",
            session=local.id,
            reason="sequence rule `exfiltration` matched",
        )
        until(lambda: undo()[0] != "allow", 2.0)
        assert undo() == ("confirm", ["compensation", "session_held"])


def test_a_runtime_started_on_an_old_bundle_replayed_refuses_it(console, actor_for):  # noqa: ANN001
    """A runtime that starts has seen no bundle to call the replayed one older than: whoever sits
    between it and the console must not be able to start it on a bundle signed before the
    console switched writes off (or a tool, or published a stricter policy). Each answer is
    bound to the request it answers, so a bundle or a stamp from another request is refused."""
    import json
    import urllib.request

    from guard.executor import write_switch_set

    request = urllib.request.Request(
        f"{console['url']}/v1/bundle?agent=assistant",
        headers={"Authorization": f"Bearer {console['key']}"},
    )
    with urllib.request.urlopen(request) as answer:  # noqa: S310 - the live console
        captured = json.loads(answer.read())
    write_switch_set(
        actor=actor_for(console["admin"], console["organisation"]), tool="", enabled=False
    )
    proxy = ConsoleProxy(console["url"])
    proxy.tamper = lambda _: captured
    with pytest.raises(SelectorUnavailableError), local_client(console, url=proxy.url) as client:
        session = client.session("assistant", catalogue=inbox_catalogue())
        # (what the runtime would do with the old bundle: run a write the console switched off)
        ran: list[str] = []
        session.execute(
            "save_note",
            {"order_id": "A1", "text": "x"},
            lambda **_: ran.append("x"),
            token=session.approve_call("save_note", {"order_id": "A1", "text": "x"}),
        )
        pytest.fail(f"a replayed bundle decided: the write ran {len(ran)} time(s)")
    # Not replayed, the same runtime starts and the console's switch decides.
    with local_client(console) as client:
        session = client.session("assistant", catalogue=inbox_catalogue())
        blocked = session.execute(
            "save_note",
            {"order_id": "A1", "text": "x"},
            lambda **_: None,
            token=session.approve_call("save_note", {"order_id": "A1", "text": "x"}),
        )
        assert (blocked["outcome"], blocked["reasons"]) == ("BLOCKED", ["writes_disabled"])


def test_a_local_sessions_firewall_calls_reach_the_feed_and_the_sequence_matchers(
    console,  # noqa: ANN001
    actor_for,  # noqa: ANN001
):
    """What `evaluate` decides in the agent's process is recorded as the console records what
    `POST /v1/firewall/evaluate` decides: a deny is in the feed, and a chain of calls completed
    locally (here: a read, an export, then the data sent out) raises the policy's sequence alert
    as it would on the console. Nothing recorded, an agent deciding locally could run the chain
    the rule exists to catch without it ever firing."""
    from console.models import SHARDS, Event
    from firewall import matching
    from firewall import services as firewall_services

    actor = actor_for(console["admin"], console["organisation"])
    policy = firewall_services.policy_import(
        actor=actor,
        data={
            "name": "main",
            "default_verdict": "allow",
            "rules": [
                {
                    "priority": 10,
                    "name": "no shell",
                    "tool_name_glob": "shell.*",
                    "verdict": "deny",
                },
                {
                    "priority": 50,
                    "name": "exfil chain",
                    "verdict": "audit",
                    "sequence": {
                        "steps": [
                            {"tool_glob": "crm.read"},
                            {"tool_glob": "*.export"},
                            {"tool_glob": "*", "egress": True},
                        ],
                        "window_seconds": 600,
                    },
                },
            ],
        },
    )
    firewall_services.policy_publish(actor=actor, policy=policy)
    with local_client(console) as client:
        session = client.session("assistant", catalogue=inbox_catalogue())
        assert session.evaluate("shell.exec", {"command": "ls"})["verdict"] == "deny"
        session.evaluate("crm.read", {"id": 1})
        session.evaluate("crm.export", {"format": "csv"})
        sent = session.evaluate(
            "http.post", {"body": "x"}, stage="egress", destination="https://example.org/x"
        )
        assert sent["decision"] == "allow"

        def shipped() -> bool:
            return Event.objects.filter(
                organisation=console["organisation"], source="runtime", stage="egress"
            ).exists()

        until(shipped, 10.0)
    denied = Event.objects.get(source="runtime", tool="shell.exec")
    assert (denied.decision, denied.verdict, denied.rule) == ("refuse", "deny", "no shell")
    for shard in range(SHARDS):
        while matching.drain_shard(shard):
            pass
    alert = Event.objects.get(organisation=console["organisation"], source="sequence")
    assert (alert.rule, alert.session) == ("exfil chain", session.id)


def test_two_keys_given_one_spool_never_ship_one_organisations_records_into_another(
    console,  # noqa: ANN001
    outsider,  # noqa: ANN001
    other_organisation,  # noqa: ANN001
    actor_for,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
    tmp_path,  # noqa: ANN001
):
    """`STALWART_SPOOL` names one file; two clients of two organisations in one host (a gateway
    serving two tenants) must not ship each other's records: a spool is its console's and key's,
    and the second key's records go to a spool of its own beside it."""
    from console import bundles
    from console import services as console_services
    from console.models import Event

    monkeypatch.setenv("STALWART_SPOOL", str(tmp_path / "decisions.sqlite3"))
    _, their_key = console_services.api_key_create(
        actor=actor_for(outsider, other_organisation), name="runtime", role="editor"
    )
    theirs = Client(
        url=console["url"],
        api_key=their_key,
        decide="local",
        bundle_key=bundles.public_key(other_organisation.pk),
        wait=5.0,
    )
    with theirs, local_client(console) as ours:
        theirs.session("assistant", catalogue=inbox_catalogue())  # their spool, shipping
        session = ours.session("assistant", catalogue=inbox_catalogue())
        assert ours.decision_log().path != theirs.decision_log().path
        ours._log[1].stop()  # our records wait in our spool: only another shipper could send them
        session.check_tool_call("delete_everything", {})
        time.sleep(1.5)
        assert not Event.objects.filter(organisation=other_organisation, source="runtime").exists()
        ours._log[1].start()
        until(
            lambda: Event.objects.filter(
                organisation=console["organisation"], tool="delete_everything"
            ).exists(),
            10.0,
        )


def test_a_session_of_no_named_agent_takes_no_other_agents_bundle(console):  # noqa: ANN001
    """An agent's bundle holds only that agent's switches and holds. The feed of a session with
    no agent's name is given the organisation's whole bundle, so it must refuse one made for a
    named agent: whoever sits between it and the console (asking, with this runtime's own
    request, for `?agent=other`) would otherwise leave out what was switched off for it."""
    from console.models import ToolSwitch

    ToolSwitch.objects.create(
        organisation=console["organisation"], agent="", tool="get_order", reason="x"
    )
    with local_client(console) as client:
        check = client.session("", catalogue=inbox_catalogue()).check_tool_call(
            "get_order", {"order_id": "A1"}
        )
        assert (check.decision, check.reasons) == ("refuse", ["tool_disabled"])

    def other_agents(path: str) -> str:
        base, _, query = path.partition("?")
        if base != "/v1/bundle":
            return path
        return "/v1/bundle?" + "&".join(part for part in ("agent=other", query) if part)

    proxy = ConsoleProxy(console["url"])
    proxy.rewrite = other_agents
    with pytest.raises(SelectorUnavailableError, match="bundle.agent"):
        with local_client(console, url=proxy.url) as client:
            client.session("", catalogue=inbox_catalogue()).check_tool_call(
                "get_order", {"order_id": "A1"}
            )


def publish(console, actor_for, *rules: dict) -> None:  # noqa: ANN001
    """The organisation's firewall policy, published on the console (what the bundle carries)."""
    from firewall import services as firewall_services

    actor = actor_for(console["admin"], console["organisation"])
    policy = firewall_services.policy_import(
        actor=actor, data={"name": "main", "default_verdict": "allow", "rules": list(rules)}
    )
    firewall_services.policy_publish(actor=actor, policy=policy)


def chatting_locally(console, monkeypatch):  # noqa: ANN001, ANN201
    """The shop's agent, its conversations deciding from the console's bundle."""
    from stalwart_agents import Agent

    for name, value in {
        "STALWART_URL": console["url"],
        "STALWART_API_KEY": console["key"],
        "STALWART_DECIDE": "local",
        "STALWART_BUNDLE_KEY": console["public"],
    }.items():
        monkeypatch.setenv(name, value)
    return Agent.from_file(SHOP, verify=False)


def test_agent_chat_is_gated_by_the_organisations_published_firewall_policy(
    console,  # noqa: ANN001
    actor_for,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
):
    """The security team's published policy denies a tool: a turn decided from the bundle does
    not run it (the reply names the rule), and the deny reaches the console's feed as the
    console records a firewall evaluation."""
    publish(
        console,
        actor_for,
        {"priority": 10, "name": "no lookups", "tool_name_glob": "get_order", "verdict": "deny"},
    )
    shop = chatting_locally(console, monkeypatch)
    try:
        reply = shop.chat("show me order 4411", user="ana", agent="desk")
        assert reply.ran == [] and reply.waiting is None, reply.text
        assert "no lookups" in reply.text
        until(lambda: denied_in_feed(console, "get_order", "no lookups"), 15.0)
    finally:
        shop._local_client().close()


def test_agent_chat_with_no_published_policy_has_no_organisation_gate(
    console,  # noqa: ANN001
    actor_for,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
):
    """No active policy on the console: the organisation's gate is absent (nothing refused for
    it, nothing recorded as a firewall decision); a policy published later gates the next turn."""
    from console.models import Event

    shop = chatting_locally(console, monkeypatch)
    try:
        reply = shop.chat("show me order 4411", user="ana", agent="desk")
        assert [done["tool"] for done in reply.ran] == ["get_order"], reply.text
        publish(
            console,
            actor_for,
            {
                "priority": 10,
                "name": "no lookups",
                "tool_name_glob": "get_order",
                "verdict": "deny",
            },
        )

        def denied() -> bool:
            again = shop.chat("show me order 4412", user="ana", agent="desk")
            return not again.ran and "no lookups" in again.text

        until(denied, 5.0)
        spool = shop._local_client().decision_log()
        until(lambda: spool.pending() == 0, 15.0)
        # before the policy, no call was refused for want of one
        for absent in (["no_active_policy"], ["policy_not_published"]):
            assert not Event.objects.filter(source="runtime", reasons=absent).exists()
    finally:
        shop._local_client().close()


def test_agent_chat_asks_the_person_where_the_organisations_policy_requires_approval(
    console,  # noqa: ANN001
    actor_for,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
):
    """A `require_approval` of the published policy is a confirm, as the file's is: nothing runs
    until the person says yes to exactly that call."""
    publish(
        console,
        actor_for,
        {
            "priority": 10,
            "name": "ask first",
            "tool_name_glob": "get_order",
            "verdict": "require_approval",
        },
    )
    shop = chatting_locally(console, monkeypatch)
    try:
        asked = shop.chat("show me order 4411", user="ana", agent="desk")
        assert asked.waiting == "confirm" and asked.ran == [], asked.text
        ran = shop.chat("yes", user="ana", agent="desk")
        assert [done["tool"] for done in ran.ran] == ["get_order"], ran.text
        shop.chat("show me order 4412", user="ana", agent="desk")
        refused = shop.chat("no", user="ana", agent="desk")
        assert refused.ran == []
    finally:
        shop._local_client().close()


def test_a_write_in_a_session_the_console_holds_is_approved_by_its_approvers_never_here(
    console,  # noqa: ANN001
    approver,  # noqa: ANN001
    client_for,  # noqa: ANN001
):
    """A hold is the security team's: deciding from the bundle, a yes to a write in a held
    session is not signed in this process (not by the host, not by the session's own approver).
    It goes to the console's queue, and only the approvers' grant lets the write run."""
    from console.models import SessionHold
    from guard.models import ApprovalRequest
    from stalwart_agents.runtime import HeldOnConsole

    asked_here: list[dict] = []

    def yes_here(question: dict) -> bool:
        asked_here.append(question)
        return True

    with local_client(console) as client:
        session = client.session(
            "assistant",
            catalogue=inbox_catalogue(),
            tools={"cancel_refund": lambda refund_id: {"ok": True}},
            approver=yes_here,
        )
        refund_done(session)
        asked_here.clear()
        SessionHold.objects.create(
            organisation=console["organisation"],
            agent="assistant",
            session=session.id,
            reason="sequence rule `exfiltration` matched",
        )
        until(lambda: "session_held" in undo_check(session).reasons, 2.0)
        check = undo_check(session)
        assert check.decision == "confirm"
        undo = {"refund_id": "R1"}
        with pytest.raises(HeldOnConsole):
            session.approve(check)
        with pytest.raises(HeldOnConsole):
            session.approve_call("cancel_refund", undo)
        # The session's own approver is not asked: the console's approvers are.
        answered: list[int] = []

        def approve() -> None:
            request = ApprovalRequest.objects.get(source="runtime", status="pending")
            answered.append(
                client_for(approver).post(f"/v1/approvals/{request.public_id}/approve").status_code
            )

        answering = threading.Timer(0.5, closing(approve))
        answering.start()
        token = session.wait_for_approval(check, timeout=20, poll=0.1)
        answering.join()
        assert answered == [200] and asked_here == []
        again = session.check_tool_call("cancel_refund", undo, compensation_of=1, token=token)
        assert (again.decision, again.reasons) == ("allow", ["confirmed"])
        # A read is not held: it needs no one.
        assert session.check_tool_call("get_order", {"order_id": "A1"}).decision == "allow"


def _chat_held(console, monkeypatch):  # noqa: ANN001, ANN202
    """The shop's agent deciding from the bundle, Ana's conversation held by the console, and a
    refund she asked for and said yes to: what that yes answered."""
    from console.models import SessionHold

    shop = chatting_locally(console, monkeypatch)
    shop.chat("show me order 4411", user="ana", agent="desk")
    orders = sys.modules["shop.tools"].ORDERS  # the refund changes it: put back after the test
    monkeypatch.setitem(orders, "4411", copy.deepcopy(orders["4411"]))
    runtime = shop.conversation(user="ana", agent="desk").session
    SessionHold.objects.create(
        organisation=console["organisation"],
        agent="desk",
        session=runtime.session,
        reason="sequence rule `exfiltration` matched",
    )
    until(lambda: runtime.controls.feed.current().held("desk", runtime.session), 5.0)
    asked = shop.chat("refund 40 on order 4411", user="ana", agent="desk")
    assert asked.waiting == "confirm" and asked.ran == [], asked.text
    return shop, shop.chat("yes", user="ana", agent="desk")


def test_agent_chat_sends_a_held_write_to_the_consoles_queue_not_the_persons_yes(
    console,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
    approver,  # noqa: ANN001
    client_for,  # noqa: ANN001
):
    """Deciding from the bundle, a yes said in the conversation does not sign a write in a
    session the console holds: the write is filed in the console's queue, the reply says so and
    nothing runs; once the console's approvers said yes, the person's next yes runs it, once."""
    from guard.models import ApprovalRequest

    shop, said = _chat_held(console, monkeypatch)
    try:
        assert said.ran == [] and said.waiting == "console", said.text
        request = ApprovalRequest.objects.get(source="runtime", status="pending")
        assert str(request.public_id) in said.text
        assert request.call["tool"] == "refund_card"
        # asked again before anyone answered: the same request, still waiting, nothing run
        again = shop.chat("yes", user="ana", agent="desk")
        assert again.ran == [] and again.waiting == "console", again.text
        assert ApprovalRequest.objects.filter(source="runtime").count() == 1
        answered = client_for(approver).post(f"/v1/approvals/{request.public_id}/approve")
        assert answered.status_code == 200, answered.content
        done = shop.chat("yes", user="ana", agent="desk")
        assert [call["tool"] for call in done.ran] == ["refund_card"], done.text
        assert done.waiting is None
    finally:
        shop._local_client().close()


def test_agent_chat_runs_no_held_write_the_consoles_approvers_denied(
    console,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
    approver,  # noqa: ANN001
    client_for,  # noqa: ANN001
):
    """The console's approvers said no: the person's yes runs nothing, and the reply says why."""
    from guard.models import ApprovalRequest

    shop, said = _chat_held(console, monkeypatch)
    try:
        assert said.waiting == "console", said.text
        request = ApprovalRequest.objects.get(source="runtime", status="pending")
        answered = client_for(approver).post(f"/v1/approvals/{request.public_id}/deny")
        assert answered.status_code == 200, answered.content
        done = shop.chat("yes", user="ana", agent="desk")
        assert done.ran == [] and done.waiting is None, done.text
        assert "approval_denied" in done.text, done.text
    finally:
        shop._local_client().close()
