"""The two listing reads of the calculation test shop: orders and credit notes, with amounts."""

from __future__ import annotations

from typing import Any

_ROW = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
}
TOOLS: list[dict[str, Any]] = [
    {
        "name": "list_orders",
        "description": "Lists the orders, with their amounts.",
        "kind": "read",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
        "result_schema": {"type": "array", "items": _ROW},
    },
    {
        "name": "list_credits",
        "description": "Lists the credit notes, with their amounts.",
        "kind": "read",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
        "result_schema": {"type": "array", "items": _ROW},
    },
]


def list_orders() -> list[dict[str, Any]]:
    return [
        {"order_id": "4411", "amount": 40.0},
        {"order_id": "4412", "amount": 25.5},
        {"order_id": "4413", "amount": 12.25},
    ]


def list_credits() -> list[dict[str, Any]]:
    return [{"order_id": "4411", "amount": 40.0}]
