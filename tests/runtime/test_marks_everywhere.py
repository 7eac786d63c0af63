"""The catalogue's marks through every door: free text the model writes, reads that fetch, costs.

Each scenario runs through the SDK, the console's API and the command line, which must give the
one answer written here.
"""

from __future__ import annotations

import copy

import pytest

from .doors import CliDoor, ConsoleDoor, LocalDoor

pytestmark = pytest.mark.django_db

OBJECT = {"type": "object"}


def catalogue() -> dict:
    return {
        "agents": {"assistant": {"tools": ["post_note", "fetch_page", "pay", "get_order"]}},
        "tools": [
            {
                "name": "post_note",
                "kind": "write",
                "parameters": {
                    **OBJECT,
                    "properties": {
                        "order_id": {"type": "string"},
                        "body": {"type": "string", "free_text": True},
                    },
                    "required": ["order_id", "body"],
                },
            },
            {
                "name": "fetch_page",
                "kind": "read",
                "fetches": ["url"],
                "reads_outside": ["web"],
                "parameters": {**OBJECT, "properties": {"url": {"type": "string"}}},
            },
            {
                "name": "pay",
                "kind": "write",
                "cost": {"argument": "amount"},
                "checks": [{"cap_cost": 500}],
                "parameters": {**OBJECT, "properties": {"amount": {"type": "number"}}},
            },
            {
                "name": "get_order",
                "kind": "read",
                "parameters": {**OBJECT, "properties": {"order_id": {"type": "string"}}},
            },
        ],
    }


SCENARIOS = {
    # The body is the model's to write: only `write` asks, not `argument_origin: body`.
    "free-text-body": (
        ["note on order A1 that the parcel left"],
        [],
        {"tool": "post_note", "arguments": {"order_id": "A1", "body": "Your parcel is on its way"}},
        ("confirm", ["write"]),
    ),
    # An argument not marked free text is still asked about.
    "free-text-only-the-marked-one": (
        ["note on order A1 that the parcel left"],
        [],
        {"tool": "post_note", "arguments": {"order_id": "B7", "body": "x"}},
        (
            "confirm",
            ["argument_origin: order_id", "confirm_read: order_id (said `A1`, the call has `B7`)"],
        ),
    ),
    "fetch-public": (
        ["fetch https://example.org/a"],
        [],
        {"tool": "fetch_page", "arguments": {"url": "https://example.org/a"}},
        ("allow", ["allow"]),
    ),
    "fetch-metadata": (
        [],
        [],
        {"tool": "fetch_page", "arguments": {"url": "http://169.254.169.254/latest"}},
        ("refuse", ["disallowed_address"]),
    ),
    "fetch-loopback-hex": (
        [],
        [],
        {"tool": "fetch_page", "arguments": {"url": "http://0x7f000001/admin"}},
        ("refuse", ["disallowed_address"]),
    ),
    "cost-within-cap": (
        ["pay 200"],
        [({"tool": "pay", "arguments": {"amount": 300}}, {"ok": True})],
        {"tool": "pay", "arguments": {"amount": 200}},
        ("confirm", ["write"]),
    ),
    "cost-past-cap": (
        ["pay 201"],
        [({"tool": "pay", "arguments": {"amount": 300}}, {"ok": True})],
        {"tool": "pay", "arguments": {"amount": 201}},
        ("refuse", ["cost_exceeded"]),
    ),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_door_holds_the_marks_the_same_way(
    name, editor, approver, client_for, tmp_path, capsys
):
    turns, ran, call, want = SCENARIOS[name]
    answers = {}
    for door in (
        LocalDoor(),
        ConsoleDoor(client_for(editor), client_for(approver)),
        CliDoor(tmp_path, capsys),
    ):
        door.open(copy.deepcopy(catalogue()), {})
        for done, result in ran:
            door.ran(done, result)
        for turn in turns:
            door.read(turn)
        answer = door.check(dict(call))
        answers[door.name] = (answer["decision"], list(answer["reasons"]))
    assert all(answer == (want[0], want[1]) for answer in answers.values()), answers
