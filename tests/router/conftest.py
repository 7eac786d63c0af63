"""Fixtures of the router's tests: the shop of chapter 45, the ERP work orders, and a lab.

A *profile* is a router set up one way (a catalogue, a rulebook, an agent, a sandbox), built once
per language; the test set in `cases/` names the profile each turn is read with. Today is fixed
(Wednesday 4 March 2026) so relative days are stable.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

from guard.engine import load_agent_yaml
from router.engine import Router
from rulebooks.compiler import compile_colang

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CASES = Path(__file__).resolve().parent / "cases"
TODAY = dt.date(2026, 3, 4)
KEY = b"a router test key that is long enough to sign"

DOCUMENTS = [
    {
        "id": "refunds.md",
        "text": "Refunds go back to the card the order was paid with. A refund takes up to five "
        "business days to show on the statement. Orders that are not paid cannot be refunded.",
    },
    {
        "id": "shipping.md",
        "text": "We ship orders from Monday to Friday. Shipping is free for orders above 100 "
        "dollars.",
    },
    {
        "id": "estornos.md",
        "text": "O estorno volta para o cartão usado no pagamento do pedido. O estorno leva até "
        "cinco dias úteis para aparecer na fatura do cartão. Pedidos que não foram pagos não "
        "podem ser estornados.",
    },
]


def shop_tools_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("shop_tools_for_router", SHOP / "tools.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def shop_file():
    text = (SHOP / "agent.yaml").read_text(encoding="utf-8")
    return load_agent_yaml(text, modules={"shop.tools": shop_tools_module().TOOLS})


@functools.cache
def shop_rulebook() -> dict[str, Any]:
    return compile_colang((SHOP / "policy.co").read_text(encoding="utf-8"), filename="policy.co")


def erp_catalogue() -> dict[str, Any]:
    return json.loads((FIXTURES / "erp_catalogue.json").read_text(encoding="utf-8"))


@functools.cache
def erp_rulebook() -> dict[str, Any]:
    text = (FIXTURES / "erp_policy.co").read_text(encoding="utf-8")
    return compile_colang(text, filename="erp_policy.co")


def _sandbox(source: str, inputs: Any) -> Any:  # pragma: no cover - presence is what is planned
    raise AssertionError("the router never runs the sandbox")


def _erp_with_model() -> dict[str, Any]:
    data = erp_catalogue()
    data = copy.deepcopy(data)
    data["agents"]["ops"]["model"] = "scripted:ops"
    return data


PROFILES = {
    "shop": lambda language: Router(
        shop_file(), rulebook=shop_rulebook(), language=language, today=TODAY
    ),
    "shop_desk": lambda language: Router(
        shop_file(), rulebook=shop_rulebook(), language=language, today=TODAY, agent="desk"
    ),
    "shop_billing": lambda language: Router(
        shop_file(), rulebook=shop_rulebook(), language=language, today=TODAY, agent="billing"
    ),
    "shop_docs": lambda language: Router(
        shop_file(),
        rulebook=shop_rulebook(),
        language=language,
        today=TODAY,
        on_unread="answer",
        documents=DOCUMENTS,
    ),
    "shop_compute": lambda language: Router(
        shop_file(),
        rulebook=shop_rulebook(),
        language=language,
        today=TODAY,
        agent="desk",
        sandbox=_sandbox,
    ),
    "erp": lambda language: Router(erp_catalogue(), language=language, today=TODAY),
    "erp_rules": lambda language: Router(
        erp_catalogue(), rulebook=erp_rulebook(), language=language, today=TODAY
    ),
    "erp_compute": lambda language: Router(
        _erp_with_model(), language=language, today=TODAY, sandbox=_sandbox
    ),
}


@functools.cache
def router_for(profile: str, language: str) -> Router:
    return PROFILES[profile](language)
