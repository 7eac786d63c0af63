"""`execute` takes what `check_tool_call` takes (`checks`, `usage`, `cost`) on every door: in this
process and through the console's executor, where the tool runs here and is recorded there."""

from __future__ import annotations

import pytest

from stalwart_agents import Client

OBJECT = {"type": "object", "properties": {"q": {"type": "string"}}}


def catalogue() -> dict:
    return {
        "agents": {"desk": {"tools": ["lookup", "quote"]}},
        "tools": [
            {
                "name": "lookup",
                "kind": "read",
                "checks": [{"at_most": {"count": 3, "per": "day"}}],
                "parameters": OBJECT,
            },
            {"name": "quote", "kind": "read", "checks": [{"cap_cost": 5}], "parameters": OBJECT},
        ],
    }


@pytest.fixture(params=["local", "console"])
def door(request, live_server, admin, organisation, actor_for):  # noqa: ANN001, ANN201
    if request.param == "local":
        return Client().session("desk", catalogue=catalogue())
    from console import services as console_services

    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="options", role="editor"
    )
    return Client(url=live_server.url, api_key=key).session("desk", catalogue=catalogue())


@pytest.mark.django_db(transaction=True)
def test_execute_reads_the_hosts_usage_and_checks(door):  # noqa: ANN001
    ran: list[str] = []

    def lookup(q: str) -> dict:
        ran.append(q)
        return {"q": q}

    unknown = door.execute("lookup", {"q": "a"}, lookup)
    assert (unknown["outcome"], unknown["reasons"]) == ("REFUSED", ["usage_unknown"])
    within = door.execute("lookup", {"q": "b"}, lookup, usage={"count": {"day": 2}})
    assert within["outcome"] == "SUCCEEDED", within
    reached = door.execute("lookup", {"q": "c"}, lookup, usage={"count": {"day": 3}})
    assert (reached["outcome"], reached["reasons"]) == ("REFUSED", ["limit_reached"])
    # The host's own list of checks leaves the limit out: the call runs without a usage.
    unlimited = door.execute("lookup", {"q": "d"}, lookup, checks=["allowed_tools", "arguments"])
    assert unlimited["outcome"] == "SUCCEEDED", unlimited
    assert ran == ["b", "d"]


@pytest.mark.django_db(transaction=True)
def test_execute_adds_the_hosts_cost_to_the_run_and_caps_it(door):  # noqa: ANN001
    first = door.execute("quote", {"q": "a"}, lambda q: {"price": 3}, cost=3)
    assert first["outcome"] == "SUCCEEDED", first
    second = door.execute("quote", {"q": "b"}, lambda q: {"price": 3}, cost=3)
    assert (second["outcome"], second["reasons"]) == ("REFUSED", ["cost_exceeded"])


@pytest.mark.django_db(transaction=True)
def test_execute_names_an_unknown_check_and_runs_nothing(door):  # noqa: ANN001
    from guard.engine.errors import UnknownCheck
    from stalwart_agents.client import RequestRefused

    ran: list[str] = []
    with pytest.raises((RequestRefused, UnknownCheck), match="no check named `nope`"):
        door.execute("lookup", {"q": "a"}, lambda q: ran.append(q), checks=["nope"])
    assert ran == []
