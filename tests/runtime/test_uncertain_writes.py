"""A write whose every attempt timed out may have had its effect. Deciding in this process (a
`LocalSession`, and so a session deciding from the bundle, which runs the same executor), as on
the console: the same write again is `UNCERTAIN` (`effect_uncertain`) and never called again,
unless the catalogue marks the tool `idempotent`; and the run is not undone on a guess."""

from __future__ import annotations

from stalwart_agents import Client

from .test_runtime_session import inbox_catalogue

PAY = ("pay", {"amount": 5})


def _session(tools: dict, *, idempotent: bool = False):  # noqa: ANN202
    catalogue = inbox_catalogue()
    if idempotent:
        for tool in catalogue["tools"]:
            if tool["name"] == "pay":
                tool["idempotent"] = True
    return Client(url="").session("assistant", catalogue=catalogue, tools=tools)


def _timing_out(calls: list[int]):  # noqa: ANN202
    def pay(arguments, context):  # noqa: ANN001, ANN202
        calls.append(1)
        raise TimeoutError("the payment provider did not answer")

    return pay


def test_a_write_whose_every_attempt_timed_out_is_never_called_again() -> None:
    calls: list[int] = []
    session = _session({"pay": _timing_out(calls)})
    token = session.approve_call(*PAY)
    first = session.execute(*PAY, token=token)
    assert first["outcome"] == "UNCERTAIN"
    attempts = len(calls)
    assert attempts >= 1
    again = session.execute(*PAY, token=token)
    assert (again["outcome"], again["reasons"]) == ("UNCERTAIN", ["effect_uncertain"])
    assert len(calls) == attempts  # not called again


def test_an_idempotent_write_is_tried_again() -> None:
    calls: list[int] = []
    session = _session({"pay": _timing_out(calls)}, idempotent=True)
    token = session.approve_call(*PAY)
    session.execute(*PAY, token=token)
    attempts = len(calls)
    assert session.execute(*PAY, token=token)["outcome"] == "UNCERTAIN"
    assert len(calls) == 2 * attempts


def test_an_uncertain_write_does_not_undo_the_run() -> None:
    undone: list[str] = []
    session = _session(
        {
            "pay": _timing_out([]),
            "refund_card": lambda **_: {"refund_id": "R1"},
            "cancel_refund": lambda refund_id: undone.append(refund_id) or {},
        }
    )
    session.read("refund 20 on order A1")
    session.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
    refund = {"order_id": "A1", "amount": 20}
    ran = session.execute("refund_card", refund, token=session.approve_call("refund_card", refund))
    assert ran["outcome"] == "SUCCEEDED", ran
    paid = session.execute(*PAY, token=session.approve_call(*PAY))
    assert paid["outcome"] == "UNCERTAIN"
    assert "undone" not in paid and undone == []
