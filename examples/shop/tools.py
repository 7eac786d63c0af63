"""The shop's tools: a small order book in memory, and the catalogue entry of each tool.

`TOOLS` is what the catalogue reads (`tools: - python: shop.tools` in agent.yaml); the functions are
what the executor runs once the tool check allowed a call. The data is made up.
"""

from __future__ import annotations

from typing import Any

ORDERS: dict[str, dict[str, Any]] = {
    "4411": {"order_id": "4411", "status": "paid", "card": "visa-0042", "amount": 40.0},
    "4412": {"order_id": "4412", "status": "open", "card": "", "amount": 12.5},
}
INBOX: list[dict[str, str]] = [
    {"from": "cliente@example.com", "subject": "pedido 4411", "body": "pode estornar?"},
]

ORDER_ID = {"type": "string", "minLength": 1, "maxLength": 64}
AMOUNT = {"type": "number", "exclusiveMinimum": 0, "maximum": 100000}

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_order",
        "description": "Shows an order: its status, the card on file and the amount.",
        "kind": "read",
        "parameters": {
            "type": "object",
            "properties": {"order_id": ORDER_ID},
            "required": ["order_id"],
        },
        "result_schema": {
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "status": {"enum": ["open", "paid", "refunded"]},
                "card": {"type": "string"},
                "amount": {"type": "number"},
            },
        },
        "idempotent": True,
    },
    {
        "name": "charge_card",
        "description": "Charges the card on file for an order.",
        "kind": "write",
        "parameters": {
            "type": "object",
            "properties": {"order_id": ORDER_ID, "amount": AMOUNT},
            "required": ["order_id", "amount"],
        },
        "after": [{"tool": "get_order", "bind": {"order_id": "order_id"}}],
        "checks": [{"require": {"from": "get_order.card", "same": "order_id"}}],
        "compensation": {
            "tool": "refund_card",
            "bind": {"order_id": "arguments.order_id", "amount": "arguments.amount"},
        },
    },
    {
        "name": "send_receipt",
        "description": "Sends the receipt of an order to the customer's e-mail address.",
        "kind": "sends_out",
        "parameters": {
            "type": "object",
            "properties": {"order_id": ORDER_ID, "email": {"type": "string", "format": "email"}},
            "required": ["order_id", "email"],
        },
        "after": [{"tool": "charge_card", "bind": {"order_id": "arguments.order_id"}}],
        "idempotent": True,
        "irreversible": True,
    },
    {
        "name": "read_inbox",
        "description": "Reads the shop's inbox.",
        "kind": "read",
        "parameters": {
            "type": "object",
            "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 50}},
        },
        "reads_outside": ["email"],
        "idempotent": True,
    },
    {
        "name": "refund_card",
        "description": "Refunds an amount of an order to the card it was paid with.",
        "kind": "write",
        "parameters": {
            "type": "object",
            "properties": {"order_id": ORDER_ID, "amount": AMOUNT},
            "required": ["order_id", "amount"],
        },
    },
]


def get_order(order_id: str) -> dict[str, Any]:
    order = ORDERS.get(order_id)
    if order is None:
        raise LookupError(f"there is no order `{order_id}`")
    return dict(order)


def charge_card(order_id: str, amount: float) -> dict[str, Any]:
    ORDERS[order_id]["status"] = "paid"
    return {"order_id": order_id, "charged": amount}


def send_receipt(order_id: str, email: str) -> dict[str, Any]:
    return {"order_id": order_id, "sent_to": email}


def read_inbox(limit: int = 10) -> list[dict[str, str]]:
    return INBOX[:limit]


def refund_card(order_id: str, amount: float) -> dict[str, Any]:
    ORDERS[order_id]["status"] = "refunded"
    return {"order_id": order_id, "refunded": amount}
