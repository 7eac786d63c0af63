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


def test_a_write_in_a_session_the_console_holds_runs_on_its_approvers_yes_not_the_resumes(
    console,  # noqa: ANN001, F811
    shop,  # noqa: ANN001
    functions,  # noqa: ANN001
    ran,  # noqa: ANN001
    approver,  # noqa: ANN001
    client_for,  # noqa: ANN001
):
    """A hold is the security team's: deciding from the bundle, a framework's resume with a yes
    to a write in a held session files it in the console's queue and waits; the write runs once
    the console's approvers say yes, and not when they say no."""
    import threading

    from console.models import SessionHold
    from guard.models import ApprovalRequest

    tools = {name: plain_function(f) for name, f in functions.items()}

    def answer(verb: str) -> threading.Thread:
        def run() -> None:
            from django.db import connection

            try:
                for _ in range(300):
                    pending = ApprovalRequest.objects.filter(status="pending").first()
                    if pending is not None:
                        client_for(approver).post(f"/v1/approvals/{pending.public_id}/{verb}")
                        return
                    threading.Event().wait(0.1)
            finally:
                connection.close()

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    with local_client(console) as client:
        guard = Guard.for_agent(shop, "desk", client=client, tools=tools, wait_timeout=20)
        guard.read("charge order 4411")
        assert guard.call_with("get_order", {"order_id": "4411"}).status == "ran"
        session = guard.session
        SessionHold.objects.create(
            organisation=console["organisation"], agent="desk", session=session.id, reason="t"
        )
        until(lambda: session.feed.current().held("desk", session.id), 5.0)
        asked = guard.call_with("charge_card", {"order_id": "4411", "amount": 35})
        assert asked.status == "confirm", asked
        denying = answer("deny")
        refused = guard.resume(asked, True)
        denying.join()
        assert refused.status != "ran" and ran[-1][0] == "get_order", refused
        asked = guard.call_with("charge_card", {"order_id": "4411", "amount": 35})
        approving = answer("approve")
        done = guard.resume(asked, True)
        approving.join()
        assert done.status == "ran", done
        assert ran[-1] == ("charge_card", {"order_id": "4411", "amount": 35})
        assert ApprovalRequest.objects.filter(status="approved").count() == 1
