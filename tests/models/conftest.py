"""A shop agent in a folder of its own, written for each test, and its order book put back."""

from __future__ import annotations

import copy
import shutil
import socket
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop"
TOOLS = "[get_order, charge_card, send_receipt, read_inbox, refund_card]"
# Planted where a key goes: it must never come back in a reply, an error or a repr.
PLANTED = "sk-PLANTED-stalwart-4f1c9e2a7b"


@pytest.fixture(autouse=True)
def _orders_put_back():
    from stalwart_agents import Agent  # noqa: F401 - makes `shop.tools` importable below

    yield
    import sys

    tools = sys.modules.get("shop.tools")
    if tools is not None:
        tools.ORDERS.clear()
        tools.ORDERS.update(copy.deepcopy(ORIGINAL))


ORIGINAL = {
    "4411": {"order_id": "4411", "status": "paid", "card": "visa-0042", "amount": 40.0},
    "4412": {"order_id": "4412", "status": "open", "card": "", "amount": 12.5},
}


@pytest.fixture
def shop_folder(tmp_path):
    """`write(agent_lines, extra="")` writes agent.yaml for one agent `desk` beside the shop's
    tools and rulebook, and returns its path."""
    folder = tmp_path / "shop"
    folder.mkdir()
    shutil.copy(SHOP / "tools.py", folder / "tools.py")
    shutil.copy(SHOP / "policy.co", folder / "policy.co")

    def write(agent: str, extra: str = "") -> Path:
        lines = "\n".join(f"    {line}" for line in agent.strip().splitlines())
        text = (
            f"agents:\n  desk:\n    tools: {TOOLS}\n{lines}\n"
            "tools:\n  - python: shop.tools\n"
            "facts:\n"
            "  card_on_file: {from: get_order.card, same: order_id}\n"
            "  order_paid: {from: get_order.status == paid, same: order_id}\n"
            "rulebook: ./policy.co\n" + extra
        )
        path = folder / "agent.yaml"
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def closed_port():
    """A port nothing listens on: the OS gave it, and it was closed again."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port
