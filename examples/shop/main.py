"""The tool check of chapter 45, as written there: a refund decided under the shop's rulebook.

    python examples/shop/main.py

In this process when no console is configured; against the console when `STALWART_URL` and
`STALWART_API_KEY` are set. Prints `order_paid False: refuse refuse refunds` and
`order_paid True: confirm write`.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from stalwart_agents import Agent, Client  # noqa: E402


def main() -> None:
    desk = Agent.from_file(Path(__file__).with_name("agent.yaml"))
    catalogue = desk.catalogue()  # the two desks' tools, made on this machine
    rulebook = desk.rules().record  # policy.co, compiled once for this agent

    with Client() as client:
        billing = client.session("billing", catalogue=catalogue, rulebook=rulebook)
        billing.read("estorne 40,00 do pedido 4411")
        for paid in (False, True):
            check = billing.check_tool_call(
                "refund_card",
                {"order_id": "4411", "amount": 40.00},
                origins={"order_id": "typed", "amount": "typed"},
                context={"order_paid": paid},
            )
            print(
                f"order_paid {paid}:",
                check.decision,
                ", ".join(check.reasons),
                check.detail.get("flow", ""),
            )


if __name__ == "__main__":
    main()
