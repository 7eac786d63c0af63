"""Chapter 45's tool-check table, row by row, through every door that can express the row: each
row's example must get the answer the table writes for it, the same on every door.

Row 7 (the rulebook's gate) needs a compiled rulebook, which these doors do not open sessions
with; it runs through the SDK, the console and the command line in
`tests/runtime/test_runtime_session.py` (the Colang rulebook) and the shop example.
"""

from __future__ import annotations

import pytest

from .scenarios import Scenario
from .test_same_everywhere import _can, doors, run  # noqa: F401 - `doors` is the fixture

pytestmark = pytest.mark.django_db

A1 = {"order_id": "A1"}
GOT_A1 = ({"tool": "get_order", "arguments": A1}, A1)
REFUND = {"order_id": "A1", "amount": 20}
TYPED = {"order_id": "typed", "amount": "typed"}
REFUNDED = ({"tool": "refund_card", "arguments": REFUND, "origins": TYPED}, {"refund_id": "R1"})


def row(name: str, call: dict, answer: tuple[str, list[str]], **more) -> tuple:  # noqa: ANN003
    return Scenario(name=name, check="", barred=False, call=call, **more), answer


ROWS = [
    row("1-unknown-tool", {"tool": "delete_order", "arguments": {}}, ("refuse", ["unknown_tool"])),
    row(
        "2-history-edited",
        {"tool": "get_order", "arguments": A1},
        ("refuse", ["history_invalid"]),
        ran=[GOT_A1],
        tamper=True,
    ),
    row(
        "3-undeclared-argument",
        {"tool": "refund_card", "arguments": {**REFUND, "note": "x"}, "origins": TYPED},
        ("refuse", ["argument_schema"]),
        ran=[GOT_A1],
    ),
    row(
        "4-destination-in-a-write",
        {
            "tool": "refund_card",
            "arguments": {"order_id": "https://refunds.invalid/4411", "amount": 20},
            "origins": TYPED,
        },
        ("refuse", ["undeclared_destination"]),
        ran=[GOT_A1],
    ),
    row(
        "5-order-rule",
        {"tool": "refund_card", "arguments": REFUND, "origins": TYPED},
        ("refuse", ["order_rule"]),
    ),
    row(
        "6-undo-of-another-step",
        {"tool": "cancel_refund", "arguments": {"refund_id": "R9"}, "compensation_of": 0},
        ("refuse", ["compensation_mismatch"]),
        ran=[GOT_A1],
    ),
    row(
        "8-tainted-under-refuse",
        {"tool": "refund_card", "arguments": REFUND, "origins": TYPED},
        ("refuse", ["tainted_call"]),
        ran=[GOT_A1, ({"tool": "fetch_page", "arguments": {"url": "https://a.example"}}, "hi")],
        settings={"taint_policy": "refuse"},
    ),
    row(
        "9-confirmed",
        {"tool": "refund_card", "arguments": REFUND, "origins": TYPED},
        ("allow", ["confirmed"]),
        ran=[GOT_A1],
        yes={"tool": "refund_card", "arguments": REFUND, "origins": TYPED},
    ),
    row(
        "10-amount-the-model-wrote",
        {
            "tool": "refund_card",
            "arguments": REFUND,
            "origins": {"order_id": "typed", "amount": "model"},
        },
        ("confirm", ["argument_origin: amount"]),
        ran=[GOT_A1],
    ),
    row(
        "10-amount-the-person-typed",
        {"tool": "refund_card", "arguments": REFUND, "origins": TYPED},
        ("confirm", ["write"]),
        ran=[GOT_A1],
    ),
    row("11-a-read", {"tool": "get_order", "arguments": A1}, ("allow", ["allow"])),
    row(
        "12-the-undo-a-failed-run-sends",
        {"tool": "cancel_refund", "arguments": {"refund_id": "R1"}, "compensation_of": 1},
        ("allow", ["compensation"]),
        ran=[GOT_A1, REFUNDED],
    ),
]


@pytest.mark.parametrize(("scenario", "answer"), ROWS, ids=[r[0].name for r in ROWS])
def test_every_row_of_the_tool_check_table(doors, scenario, answer):  # noqa: F811
    answers = {door.name: run(door, scenario) for door in doors if _can(door, scenario)}
    assert len(answers) >= 2 or scenario.tamper, list(answers)
    got = {name: (a["decision"], list(a["reasons"])) for name, a in answers.items()}
    assert set(map(str, got.values())) == {str(answer)}, got
    if scenario.name.startswith("3-"):  # the table: `argument_schema` at `/note`
        assert all("/note" in str(a["detail"]) for a in answers.values()), answers
