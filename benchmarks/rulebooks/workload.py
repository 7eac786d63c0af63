"""Rulebooks to measure: Colang 1.0 and 2.x files and a rule sheet of a given size.

Each unit is what a shop's rulebook really holds: an intent with examples, a bot message, a
flow that looks an order up, refuses unpaid or cancelled orders (a fact and the order's own
status, read from the session's results), sends large refunds to a manager and asks for
confirmation before the tool runs, and a subflow guard the flow calls.
"""

from __future__ import annotations

V1_UNIT = """\
define user ask refund {i}
  "refund order {i}"
  "give the money of order {i} back"
  "estorne o pedido {i}"

define bot refuse {i}
  "Order {i} is not paid, so it cannot be refunded."

define subflow check blocked {i}
  if $blocked_{i}
    bot refuse {i}
    stop

define flow refunds {i}
  user ask refund {i}
  do check blocked {i}
  $order = execute get_order_{i}(order_id=$order_id)
  if not $order_paid or $order.status == "cancelled"
    bot refuse {i}
    stop
  if $amount > 100
    bot ask manager approval
    stop
  bot ask confirmation
  when user confirm
    execute refund_card_{i}(order_id=$order_id, amount=$amount)
  else when user deny
    bot refund cancelled

"""

V2_UNIT = """\
flow user ask refund n{i}
  user said "refund order {i}" or user said "estorne o pedido {i}"

flow bot refuse n{i}
  bot say "Order {i} is not paid, so it cannot be refunded."

flow check blocked n{i}
  if $blocked_{i}
    bot refuse n{i}
    abort

flow refunds n{i}
  user ask refund n{i}
  check blocked n{i}
  $order = await GetOrder{i}Action(order_id=$order_id)
  if not $order_paid or $order.status == "cancelled"
    bot refuse n{i}
    abort
  if $amount > 100
    bot say "A refund above 100 needs a manager."
    abort
  when user said "yes"
    await RefundCard{i}Action(order_id=$order_id, amount=$amount)
  or when user said "no"
    bot say "Cancelled."

"""

SHEET_HEADER = "tool,condition,decision,reason,at_most,per,spend\n"
SHEET_UNIT = (
    "refund_card_{i},not $order_paid,refuse,order_not_paid,,,\n"
    "refund_card_{i},amount > 100,confirm,manager_approval,,,\n"
    "refund_card_{i},amount <= 20,allow,small_refund,,,\n"
    "refund_card_{i},,refuse,,3,day,\n"
    "refund_card_{i},,confirm,refund_budget,,day,500\n"
)


def _repeat(unit: str, lines: int, header: str = "") -> tuple[str, int]:
    per_unit = unit.count("\n")
    count = max(1, (lines - header.count("\n")) // per_unit)
    return header + "".join(unit.format(i=i) for i in range(count)), count


def colang_v1(lines: int) -> tuple[str, int]:
    """A Colang 1.0 rulebook of about `lines` lines, and its number of flows with tools."""
    return _repeat(V1_UNIT, lines)


def colang_v1_flows(flows: int) -> str:
    """A Colang 1.0 rulebook with exactly `flows` flows that call tools."""
    return "".join(V1_UNIT.format(i=i) for i in range(flows))


def colang_v2(lines: int) -> tuple[str, int]:
    """A Colang 2.x rulebook of about `lines` lines, and its number of flows with tools."""
    return _repeat(V2_UNIT, lines)


def rule_sheet(rows: int) -> tuple[bytes, int]:
    """A CSV rule sheet of about `rows` rows, and its number of tools."""
    text, count = _repeat(SHEET_UNIT, rows + 1, SHEET_HEADER)
    return text.encode("utf-8"), count
