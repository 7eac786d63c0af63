"""The one tool of the documents test shop: a read of an order."""

from __future__ import annotations

from typing import Any

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_order",
        "description": "Reads one order: its status and amount.",
        "kind": "read",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "pattern": "^[0-9]{3,8}$"}},
            "required": ["order_id"],
            "additionalProperties": False,
        },
    }
]


def get_order(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "status": "paid", "amount": 40.0}
