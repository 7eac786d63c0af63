"""A session deciding from the bundle treats what it files and records as the console's check does:
the arguments the catalogue marks secret are masked for approvers and in the feed, the person a
call is for may not answer it, a handoff agent's call is filed under that agent, and a tool runs
under the organisation's tenant, not a name of the process's own. Against a live console."""

from __future__ import annotations

import json
import threading

import pytest

from stalwart_agents import Client
from stalwart_agents.client import ApprovalTimeout

from .test_decide_local import closing, console, handoff_catalogue, local_client, until  # noqa: F401
from .test_runtime_session import inbox_catalogue

pytestmark = pytest.mark.django_db(transaction=True)

SECRET_TOOL = {
    "name": "set_member_code",
    "kind": "write",
    "secret": ["member_code"],
    "parameters": {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "member_code": {"type": "string"}},
    },
}
CODE = "ZX7781QQ"


def with_tool(tool: dict) -> dict:
    catalogue = inbox_catalogue()
    catalogue["tools"].append(tool)
    catalogue["agents"]["assistant"]["tools"].append(tool["name"])
    return catalogue


def filed(local, call: tuple[str, dict], **given):  # noqa: ANN001, ANN202
    """The runtime request a local session files for `call` (nobody answers it)."""
    from guard.models import ApprovalRequest

    held = local.check_tool_call(*call, **given)
    assert held.decision == "confirm", held
    with pytest.raises(ApprovalTimeout):
        local.wait_for_approval(held, timeout=0.3, poll=0.1)
    return ApprovalRequest.objects.filter(source="runtime").latest("id")


def test_a_secret_argument_is_masked_for_approvers_and_in_the_feed_as_on_the_console(console):  # noqa: ANN001, F811
    from console.models import Event
    from guard import approvals
    from guard.models import ApprovalRequest

    catalogue = with_tool(SECRET_TOOL)
    call = ("set_member_code", {"order_id": "A1", "member_code": CODE})
    remote = Client(url=console["url"], api_key=console["key"]).session(
        "assistant", catalogue=catalogue
    )
    remote.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
    assert remote.check_tool_call(*call).decision == "confirm"
    console_shown = approvals.shown_arguments(ApprovalRequest.objects.get(source="toolcheck"))
    with local_client(console) as client:
        local = client.session("assistant", catalogue=catalogue)
        local.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
        request = filed(local, call)
        assert approvals.shown_arguments(request) == console_shown
        assert console_shown["member_code"] != CODE and console_shown["order_id"] == "A1"
        until(lambda: Event.objects.filter(source="runtime", tool="set_member_code").exists(), 10.0)
    for event in Event.objects.filter(tool="set_member_code"):
        assert CODE not in json.dumps(event.detail), event.source


def test_the_person_a_call_is_for_cannot_answer_it(console, approver, client_for):  # noqa: ANN001, F811
    refund = {"order_id": "A1", "amount": 20}
    with local_client(console) as client:
        local = client.session(
            "assistant",
            catalogue=inbox_catalogue(),
            tools={"refund_card": lambda **_: {"refund_id": "R1"}},
        )
        local.read("refund 20 on order A1")
        local.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
        held = local.execute("refund_card", refund, user=approver.username)
        assert held["outcome"] == "CONFIRM"
        answered: list[int] = []

        def answer() -> None:
            from guard.models import ApprovalRequest

            until(lambda: ApprovalRequest.objects.filter(source="runtime").exists(), 5.0)
            request = ApprovalRequest.objects.get(source="runtime")
            assert request.requested_for == approver.username
            answered.append(
                client_for(approver).post(f"/v1/approvals/{request.public_id}/approve").status_code
            )

        answering = threading.Thread(target=closing(answer))
        answering.start()
        with pytest.raises(ApprovalTimeout):
            local.wait_for_approval(held["approval"], timeout=2.0, poll=0.1)
        answering.join()
        assert answered == [403]


def test_a_handoff_agents_call_is_filed_under_that_agent(console):  # noqa: ANN001, F811
    note = ("save_note", {"order_id": "A1", "text": "x"})
    with local_client(console) as client:
        local = client.session("assistant", catalogue=handoff_catalogue())
        local.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
        request = filed(local, note, agent="billing")
        assert (request.agent, request.call["agent"]) == ("billing", "billing")


TENANT_TOOL = {
    "name": "tenant_orders",
    "kind": "read",
    "parameters": {"type": "object", "properties": {"tenant": {"type": "string"}}},
}


def test_a_tool_runs_under_the_organisations_tenant_as_on_the_console(console):  # noqa: ANN001, F811
    seen: list[str] = []

    def tenant_orders(arguments, context):  # noqa: ANN001, ANN202
        seen.append(context.tenant)
        return {"orders": []}

    catalogue = with_tool(TENANT_TOOL)
    tools = {"tenant_orders": tenant_orders}
    remote = Client(url=console["url"], api_key=console["key"]).session(
        "assistant", catalogue=catalogue, tools=tools
    )
    with local_client(console) as client:
        local = client.session("assistant", catalogue=catalogue, tools=tools)
        outcomes = {
            name: [
                session.execute("tenant_orders", {"tenant": t})["outcome"]
                for t in ("acme", "local")
            ]
            for name, session in (("console", remote), ("local", local))
        }
    slug = console["organisation"].slug
    assert outcomes["local"] == outcomes["console"]
    assert seen and set(seen) == {slug}


def test_more_holds_than_a_bundle_carries_make_the_runtime_fail_closed(console, monkeypatch):  # noqa: ANN001, F811
    """A hold the bundle would leave out could let a held write through: no deciding instead."""
    from console.models import SessionHold
    from stalwart_agents import bundle
    from stalwart_agents.client import SelectorUnavailableError

    monkeypatch.setattr(bundle, "MAX_CONTROLS", 3)
    with local_client(console, wait=10.0) as client:
        local = client.session("assistant", catalogue=inbox_catalogue())
        local.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
        assert local.check_tool_call("get_order", {"order_id": "A1"}).decision == "allow"
        SessionHold.objects.bulk_create(
            [
                SessionHold(
                    organisation=console["organisation"],
                    agent="assistant",
                    session=f"s-{n}",
                    reason="sequence rule matched",
                )
                for n in range(3)
            ]
        )
        SessionHold.objects.create(
            organisation=console["organisation"],
            agent="assistant",
            session="s-9",
            reason="sequence rule matched",
        )  # the fourth, announced

        def refuses() -> bool:
            try:
                local.check_tool_call("get_order", {"order_id": "A1"})
            except SelectorUnavailableError as exc:
                assert "more than 3 in force" in str(exc)
                return True
            return False

        until(refuses, 5.0)


def test_an_agent_named_with_capitals_decides_locally_as_on_the_console(console):  # noqa: ANN001, F811
    catalogue = inbox_catalogue()
    catalogue["agents"]["Assistant"] = catalogue["agents"].pop("assistant")
    remote = Client(url=console["url"], api_key=console["key"]).session(
        "Assistant", catalogue=catalogue
    )
    with local_client(console) as client:
        local = client.session("Assistant", catalogue=catalogue)
        for session in (remote, local):
            session.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
            assert session.check_tool_call("get_order", {"order_id": "A1"}).decision == "allow"


def test_a_write_blocked_anyway_is_blocked_before_anybody_is_asked(console, actor_for):  # noqa: ANN001, F811
    from guard.executor import write_switch_set

    refund = {"order_id": "A1", "amount": 20}
    tools = {"refund_card": lambda **_: {"refund_id": "R1"}}
    remote = Client(url=console["url"], api_key=console["key"]).session(
        "assistant", catalogue=inbox_catalogue(), tools=tools
    )
    with local_client(console, wait=10.0) as client:
        local = client.session("assistant", catalogue=inbox_catalogue(), tools=tools)
        for session in (remote, local):
            session.read("refund 20 on order A1")
            session.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
        write_switch_set(
            actor=actor_for(console["admin"], console["organisation"]), tool="", enabled=False
        )
        until(lambda: not client.feed("assistant").current().writes_enabled("refund_card"), 3.0)
        for session in (remote, local):
            ran = session.execute("refund_card", refund)
            assert (ran["outcome"], ran["reasons"]) == ("BLOCKED", ["writes_disabled"])


def test_a_malformed_rulebook_record_is_refused_locally_as_on_the_console(console):  # noqa: ANN001, F811
    from stalwart_agents.client import RequestRefused

    record = {"tools": {"refund_card": {"routes": [], "rules": []}}}
    statuses = []
    with local_client(console) as client:
        for opener in (Client(url=console["url"], api_key=console["key"]), client):
            with pytest.raises(RequestRefused) as refused:
                opener.session("assistant", catalogue=inbox_catalogue(), rulebook=record)
            statuses.append(refused.value.status)
    assert statuses == [400, 400]


def test_a_write_on_another_tenants_object_is_blocked_before_anybody_is_asked() -> None:
    catalogue = with_tool(
        {
            "name": "close_ticket",
            "kind": "write",
            "parameters": {"type": "object", "properties": {"tenant": {"type": "string"}}},
        }
    )
    session = Client(url="").session(
        "assistant", catalogue=catalogue, tools={"close_ticket": lambda **_: {"ok": True}}
    )
    ran = session.execute("close_ticket", {"tenant": "globex"})
    assert (ran["outcome"], ran["reasons"]) == ("BLOCKED", ["tenant: tenant"])
    assert session.execute("close_ticket", {"tenant": session.tenant})["outcome"] == "CONFIRM"


def test_the_same_call_asked_twice_at_one_point_is_one_request(console):  # noqa: ANN001, F811
    from guard.models import ApprovalRequest

    refund = ("refund_card", {"order_id": "A1", "amount": 20})
    with local_client(console) as client:
        local = client.session("assistant", catalogue=inbox_catalogue())
        local.read("refund 20 on order A1")
        local.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
        first = filed(local, refund)
        second = filed(local, refund)
        assert first.pk == second.pk
        assert ApprovalRequest.objects.filter(source="runtime").count() == 1
        local.record("get_order", {"order_id": "A2"}, {"order_id": "A2"})
        assert filed(local, refund).pk != first.pk  # another point of the history: asked anew


def test_an_active_policy_with_nothing_published_is_refused_for_that_locally_too(
    console,  # noqa: ANN001, F811
    actor_for,  # noqa: ANN001
):
    import urllib.request

    from firewall import services as firewall_services

    firewall_services.policy_import(
        actor=actor_for(console["admin"], console["organisation"]),
        data={"name": "main", "default_verdict": "allow", "rules": []},
    )
    request = urllib.request.Request(  # noqa: S310 - the live console of this test
        f"{console['url']}/v1/firewall/evaluate",
        data=json.dumps({"tool": "get_order", "arguments": {"order_id": "A1"}}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {console['key']}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as answer:  # noqa: S310
        want = json.loads(answer.read())
    with local_client(console) as client:
        got = client.session("assistant", catalogue=inbox_catalogue()).evaluate(
            "get_order", {"order_id": "A1"}
        )
    assert (got["decision"], got["reasons"]) == (want["decision"], want["reasons"])
    assert want["reasons"] == ["policy_not_published"]
