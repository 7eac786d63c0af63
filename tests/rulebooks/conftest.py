"""Shared sources for the rulebook tests: the spec's shop rulebook, exactly."""

from __future__ import annotations

import pytest

SHOP = """\
define user ask refund
  "estorne o pedido 4411"
  "devolva o dinheiro do cliente"

define flow refunds
  user ask refund
  if $order_paid
    execute refund_card
  else
    bot refuse
"""


@pytest.fixture
def shop_source() -> str:
    return SHOP
