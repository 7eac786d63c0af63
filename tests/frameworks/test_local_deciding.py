"""A framework door over a client that decides in this process (`decide="local"`): the guard's
checks are decided here from the console's signed bundle, and recorded there through the
decision logs. The door is the same `Guard`; only the client differs."""

from __future__ import annotations

import pytest

from stalwart_agents.client import ConnectedSession
from stalwart_agents.guarded import Guard, plain_function
from tests.runtime.test_decide_local import console, local_client, until  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_guard_over_a_local_client_decides_here_and_records_there(console, shop, functions, ran):  # noqa: ANN001, F811
    from console.models import Event

    tools = {name: plain_function(f) for name, f in functions.items()}
    with local_client(console) as client:
        guard = Guard.for_agent(shop, "desk", client=client, tools=tools)
        assert isinstance(guard.session, ConnectedSession)
        guard.read("show me order 4411")
        assert guard.call_with("get_order", {"order_id": "4411"}).status == "ran"
        refused = guard.call_with("delete_order", {"order_id": "4411"}, function=lambda a: "x")
        assert (refused.status, refused.reasons) == ("refused", ("unknown_tool",))
        assert [name for name, _ in ran] == ["get_order"]

        def recorded() -> set[str]:
            rows = Event.objects.filter(organisation=console["organisation"], source="runtime")
            return set(rows.values_list("tool", flat=True))

        until(lambda: {"get_order", "delete_order"} <= recorded(), 15.0)
