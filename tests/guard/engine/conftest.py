"""Fixtures of the tool-check engine's tests: the shop of chapter 45 and a lab catalogue.

The lab holds the tools that the guardrail-checks page uses in its examples.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from guard.engine import ToolCheck, load_agent_yaml

ROOT = Path(__file__).resolve().parents[3]
SHOP = ROOT / "examples" / "shop"
KEY = b"a test key that is long enough to sign"
NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
TYPED = {"order_id": "typed", "amount": "typed"}


def shop_tools_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("shop_tools_for_tests", SHOP / "tools.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shop_agent_file():
    text = (SHOP / "agent.yaml").read_text(encoding="utf-8")
    return load_agent_yaml(text, modules={"shop.tools": shop_tools_module().TOOLS})


@pytest.fixture(scope="session")
def shop_file():
    return shop_agent_file()


@pytest.fixture
def shop(shop_file) -> ToolCheck:
    return ToolCheck(shop_file.catalogue, key=KEY)


def lab_catalogue() -> dict[str, Any]:
    """One agent and the tools the guardrail-checks page names in its examples."""
    order_id = {"type": "string", "minLength": 1}
    return {
        "agents": {
            "assistant": {
                "tools": [
                    "get_order",
                    "orders",
                    "old_refund",
                    "fetch_page",
                    "refund_card",
                    "pay",
                    "cancel_refund",
                    "save_note",
                ],
            }
        },  # fmt: skip
        "tools": [
            {
                "name": "get_order",
                "kind": "read",
                "parameters": {
                    "type": "object",
                    "properties": {"order_id": order_id},
                    "required": ["order_id"],
                },
            },
            {
                "name": "orders",
                "parameters": {"type": "object", "properties": {"order_id": order_id}},
            },
            {"name": "old_refund", "kind": "write", "withdrawn": True},
            {
                "name": "fetch_page",
                "kind": "sends_out",
                "reads_outside": ["web"],
                "parameters": {
                    "type": "object",
                    "properties": {"url": {"type": "string"}},
                    "required": ["url"],
                },
            },
            {
                "name": "refund_card",
                "kind": "write",
                "parameters": {
                    "type": "object",
                    "properties": {"order_id": order_id, "amount": {"type": "number"}},
                    "required": ["order_id", "amount"],
                },
                "after": ["get_order"],
                "checks": [{"argument": "amount", "at_most": 100}],
                "compensation": {"tool": "cancel_refund", "bind": {"refund_id": "refund_id"}},
            },
            {
                "name": "pay",
                "kind": "write",
                "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}},
            },
            {
                "name": "cancel_refund",
                "kind": "write",
                "parameters": {
                    "type": "object",
                    "properties": {"refund_id": {"type": "string"}},
                    "required": ["refund_id"],
                },
            },
            {
                "name": "save_note",
                "kind": "write",
                "parameters": {
                    "type": "object",
                    "properties": {"order_id": order_id, "text": {"type": "string"}},
                },
            },
        ],
    }


@pytest.fixture
def lab() -> ToolCheck:
    return ToolCheck(lab_catalogue(), key=KEY)
