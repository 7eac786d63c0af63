"""The work-order tools: their catalogue entries, and how the executor runs them against the ERP.

`TOOLS` is what the catalogue reads (`tools: - python: erp.tools` in agent.yaml). `bindings()` is
what `guard.executor.Executor` runs once the tool check, the write switch, tenancy and a person
(for a write) let a call through:

- every function takes the tenant from `context.tenant` (the authenticated identity's
  organisation), never from the arguments, which cannot even name one (the schemas are closed);
- `request_close` passes the executor's idempotency key to the ERP, which applies a key once and
  answers `Replayed(original result)` for a key it had applied: a retry after a lost answer is one
  effect;
- `authorize` is the domain's own check, run before any person is asked: the order belongs to the
  caller's tenant;
- the audit trail is a secondary step (`write_audit_trail`): when it fails the outcome is PARTIAL
  and a worker writes it later; the close request itself is never sent again.

The ERP these functions use is the file named by `STALWART_ERP_PATH` (`use_erp` sets it), so a
worker reconciling an audit trail, or a process started after a crash, finds the same ERP.
"""

from __future__ import annotations

import os
from typing import Any

from guard.engine.execution import ExecutionContext, Replayed

from .synthetic_erp import ERP, PATH_VARIABLE

AUDIT_STEP = "examples.erp.tools.write_audit_trail"

ORDER_ID = {
    "type": "string",
    "pattern": "^[0-9]{3}$",
    "description": "the work order's number: three digits",
}
ORDER = {
    "type": "object",
    "additionalProperties": False,
    "required": ["order_id", "status", "note"],
    "properties": {
        "order_id": {"type": "string"},
        "status": {"enum": ["open", "close_requested"]},
        "note": {"type": "string"},
    },
}

TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_order",
        "description": "Shows a work order of the supervisor's own tenant: its status and note.",
        "kind": "read",
        "parameters": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": False,
            "required": ["order_id"],
            "properties": {"order_id": ORDER_ID},
        },
        "result_schema": ORDER,
        "idempotent": True,
        # A note is written by whoever touched the order: outside content, never instructions.
        "reads_outside": ["erp_note"],
    },
    {
        "name": "request_close",
        "description": "Requests the closing of a work order of the supervisor's own tenant.",
        "kind": "write",
        "parameters": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": False,
            "required": ["order_id", "reason"],
            "properties": {
                "order_id": ORDER_ID,
                "reason": {
                    "type": "string",
                    "minLength": 8,
                    "maxLength": 120,
                    "description": "why the order may be closed, as the ERP will record it",
                },
                "signoff_code": {
                    "type": "string",
                    "minLength": 8,
                    "maxLength": 80,
                    "description": "the supervisor's sign-off code; the ERP never stores it",
                },
            },
        },
        "result_schema": {
            "type": "object",
            "additionalProperties": False,
            "required": ["order_id", "status", "reason", "signed_off"],
            "properties": {
                "order_id": {"type": "string"},
                "status": {"const": "close_requested"},
                "reason": {"type": "string"},
                "signed_off": {"type": "boolean"},
            },
        },
        "idempotent": True,
        # The ERP has no way to withdraw a close request: nothing can undo it.
        "irreversible": True,
        "secret": ["signoff_code"],
    },
]


def use_erp(erp: ERP) -> None:
    """Point every tool of this process, and the processes it starts, at `erp`."""
    os.environ[PATH_VARIABLE] = str(erp.path)


def current_erp() -> ERP:
    """The ERP of this run (`STALWART_ERP_PATH`); an error when none was chosen."""
    return ERP.from_environment()


# -- the tools ------------------------------------------------------------------------------------


def read_order(arguments: dict[str, Any], context: ExecutionContext) -> dict[str, Any]:
    """The order as the ERP holds it, for the caller's tenant only."""
    order = current_erp().read_order(str(arguments["order_id"]), context.tenant)
    return {"order_id": order["order_id"], "status": order["status"], "note": order["note"]}


def request_close(arguments: dict[str, Any], context: ExecutionContext) -> Any:
    """Ask the ERP to close the order under the executor's key; a key it knew answers `Replayed`."""
    result, replayed = current_erp().request_close(
        order_id=str(arguments["order_id"]),
        tenant=context.tenant,
        reason=str(arguments["reason"]),
        key=context.key,
        signed_off=bool(arguments.get("signoff_code")),
    )
    return Replayed(result) if replayed else result


def order_of_tenant(arguments: dict[str, Any], context: ExecutionContext) -> bool:
    """The domain's check: the order exists and belongs to the caller's tenant."""
    return current_erp().order_tenant(str(arguments.get("order_id"))) == context.tenant


def write_audit_trail(result: Any, context: dict[str, Any]) -> None:
    """The secondary step of a close request: its line in the ERP's audit trail, once per key."""
    if not isinstance(result, dict) or not isinstance(result.get("order_id"), str):
        raise ValueError("the close request's result has no order id")
    current_erp().write_audit(
        tenant=str(context["tenant"]),
        key=str(context["key"]),
        order_id=result["order_id"],
        entry={
            "status": result.get("status"),
            "by": context.get("person"),
            "tool": "request_close",
        },
    )


def bindings() -> dict[str, Any]:
    """The executor's bindings: tool name -> `ToolBinding` (imported here: it needs Django)."""
    from guard.executor import ToolBinding

    return {
        "read_order": ToolBinding(read_order, authorize=order_of_tenant),
        "request_close": ToolBinding(
            request_close, authorize=order_of_tenant, secondary=(AUDIT_STEP,)
        ),
    }
