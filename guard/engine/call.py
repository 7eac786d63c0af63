"""A tool call, read from its DESIGN.md shape, or refused as malformed (never raised).

    {"tool": "refund_card", "agent": "billing", "skill": "builtin.pay", "arguments": {...},
     "origins": {"amount": "typed"}, "labels": ["web"], "stage": "tool_call",
     "compensation_of": 1,                                  # an undo: the history entry it undoes
     "plan": {"id": ..., "steps": [...]}, "plan_token": ..., "plan_step": 0}   # an approved plan

`skill` and `stage` are read by the firewall, not here. `tool` and `agent` must be well-formed names
(`firewall.engine.names`, the one normal form both engines share): a control, zero-width,
bidirectional or other invisible character, or a spelling not in NFKC form, makes the call malformed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from firewall.engine.names import name_problem

from .canonical import is_json
from .errors import GuardError


class MalformedCall(GuardError):
    """A call that cannot be read (raised only where a program, not the check, reads it)."""


@dataclass(frozen=True)
class Call:
    """A tool call, read from its DESIGN.md shape."""

    tool: str
    agent: str | None
    arguments: Mapping[str, Any]
    origins: Mapping[str, str]
    labels: tuple[str, ...]
    compensation_of: int | None
    plan: Mapping[str, Any] | None
    plan_token: str | None
    plan_step: int | None


def read_call(call: Any) -> Call:
    """Read a call, or raise `MalformedCall` saying which field is wrong."""
    if not isinstance(call, Mapping):
        raise MalformedCall("call: must be a mapping")
    tool = call.get("tool")
    if not isinstance(tool, str) or not tool:
        raise MalformedCall("tool: must be a tool name")
    problem = name_problem(tool)
    if problem is not None:
        raise MalformedCall(f"tool: the name {problem}")
    agent = call.get("agent")
    if agent is not None and not isinstance(agent, str):
        raise MalformedCall("agent: must be an agent name")
    if agent is not None and (problem := name_problem(agent)) is not None:
        raise MalformedCall(f"agent: the name {problem}")
    arguments = call.get("arguments", {})
    if not isinstance(arguments, Mapping) or not is_json(arguments):
        raise MalformedCall("arguments: must be a JSON object")
    origins = call.get("origins") or {}
    if not isinstance(origins, Mapping) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in origins.items()
    ):
        raise MalformedCall("origins: must map argument names to typed, tool or model")
    labels = call.get("labels") or []
    if not isinstance(labels, (list, tuple)) or not all(isinstance(label, str) for label in labels):
        raise MalformedCall("labels: must be a list of labels")
    undoes = call.get("compensation_of")
    if undoes is not None and (
        not isinstance(undoes, int) or isinstance(undoes, bool) or undoes < 0
    ):
        raise MalformedCall("compensation_of: must be the index of a history entry")
    plan = call.get("plan")
    if plan is not None and (
        not isinstance(plan, Mapping)
        or not isinstance(plan.get("id"), str)
        or not isinstance(plan.get("steps"), list)
        or not is_json(plan)
    ):
        raise MalformedCall("plan: must be `{id, steps}`")
    plan_token = call.get("plan_token")
    if plan_token is not None and not isinstance(plan_token, str):
        raise MalformedCall("plan_token: must be text")
    plan_step = call.get("plan_step")
    if plan_step is not None and (not isinstance(plan_step, int) or isinstance(plan_step, bool)):
        raise MalformedCall("plan_step: must be a step number")
    if not isinstance(arguments, dict):
        arguments = dict(arguments)
    return Call(tool, agent, arguments, origins, tuple(labels), undoes, plan, plan_token, plan_step)
