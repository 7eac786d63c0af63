"""What the executor decides without I/O: the intent's key, which counter a check counts in, the
tenant an argument names, and the undo of a run.

The executor (guard/executor.py) holds the ledger, the counters and the tools; this module holds
the rules it applies, so that they are tested (and mutation-tested) on their own:

- **The idempotency key** is derived from the intent — organisation, session, tool, canonical
  arguments and the session's step (not the agent: a hand-off keeps the key) — never supplied by the caller, so a retry cannot
  come with a new key. The step is the history's length without the calls at its end that are this
  same call: repeating a call with nothing in between is a retry of it (one effect), while the same
  call after another one is a new intent.
- **Counters**: a call refused before its arguments were read (unknown tool, agent, licence,
  history) counts in neither `schema_valid` nor `schema_rejected`.
- **Tenancy**: the tenant comes from the identity; an argument that names a tenant (`tenant`,
  `organisation`, ...) must name that one.
- **Calling the tool** (`call_tool`, the one loop the console's executor and the SDK share): a
  timeout is retried with the same key, a `PermissionError` is the domain saying no, and a tool
  that answers `Replayed` had applied the key before.
- **Undo**: the writes of a run are compensated last first; a write with no compensation is
  reported `irreversible` or `left_done` (`undo: none`) when the catalogue says so,
  `not_compensated` otherwise.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .canonical import canonical_bytes
from .catalogue import Catalogue
from .refs import MISSING, resolve

OUTCOMES = (
    "SUCCEEDED",  # the effect ran (or had run: `duplicate`), every secondary step done
    "PARTIAL",  # the effect ran; a secondary step is pending in the outbox
    "REJECTED",  # the arguments broke the tool's schema; nothing ran
    "REFUSED",  # the tool check refused; nothing ran
    "BLOCKED",  # writes switched off, another tenant's object, or the domain said no
    "CONFIRM",  # a person must answer first: `approval` names the request
    "CANCELLED",  # the person denied (or the request expired); nothing ran
    "UNCERTAIN",  # an earlier attempt may have had its effect and the tool cannot replay: no call
    "FAILED",  # the tool failed without an effect
)
COUNTERS = (
    "schema_valid",
    "schema_rejected",
    "blocked_actions",
    "duplicates_suppressed",
    "confirmation_denied",
    "partial_results",
    "effects",
)


@dataclass(frozen=True)
class ExecutionContext:
    """What a tool learns besides its arguments: who asks, for which tenant, under which key.

    The tenant is the organisation of the authenticated identity; the key is the one the executor
    derived from the intent, which the tool passes on to the system it writes to.
    """

    tenant: str
    person: str
    session: str
    agent: str
    tool: str
    key: str = ""
    attempt: int = 1
    credentials: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Replayed:
    """A tool's answer for a key it had already applied: the original result, no new effect."""

    result: Any


TIMEOUT_ATTEMPTS = 3  # a tool that times out is called at most this often, with the same key


def _same_key(key: str, attempt: int) -> str:
    return key


def call_tool(
    function: Callable[[dict[str, Any], ExecutionContext], Any],
    arguments: Mapping[str, Any],
    context: ExecutionContext,
    *,
    backoff: float = 0.05,
    retry_key: Callable[[str, int], str] = _same_key,
) -> tuple[str, Any]:
    """Call a tool with its context; a timeout is retried with the key `retry_key` gives (the same).

    Returns ("result", value), ("replayed", value), ("blocked", why) for a `PermissionError`,
    ("failed", why) for any other error, or ("uncertain", why) when every attempt timed out: the
    tool may have had its effect, so the key stays claimed and a retry replays it.
    """
    attempt = 0
    while True:
        attempt += 1
        key = retry_key(context.key, attempt) if context.key else ""
        try:
            value = function(dict(arguments), replace(context, key=key, attempt=attempt))
        except Exception as exc:  # noqa: BLE001 - the caller reports it, redacted
            status, why = _failure(exc, attempt)
            if status is None:
                time.sleep(backoff * attempt)
                continue
            return status, why
        return _success(value)


async def call_tool_async(
    function: Callable[[dict[str, Any], ExecutionContext], Awaitable[Any]],
    arguments: Mapping[str, Any],
    context: ExecutionContext,
    *,
    backoff: float = 0.05,
    retry_key: Callable[[str, int], str] = _same_key,
) -> tuple[str, Any]:
    """`call_tool` for a coroutine function, awaited on the caller's event loop (no thread)."""
    import asyncio

    attempt = 0
    while True:
        attempt += 1
        key = retry_key(context.key, attempt) if context.key else ""
        try:
            value = await function(dict(arguments), replace(context, key=key, attempt=attempt))
        except Exception as exc:  # noqa: BLE001 - the caller reports it, redacted
            status, why = _failure(exc, attempt)
            if status is None:
                await asyncio.sleep(backoff * attempt)
                continue
            return status, why
        return _success(value)


def _failure(exc: Exception, attempt: int) -> tuple[str | None, str]:
    """What a tool's exception means: (None, "") to retry a timeout, else its status and why."""
    if isinstance(exc, TimeoutError):
        if attempt == TIMEOUT_ATTEMPTS:
            return "uncertain", f"TimeoutError: {exc}"
        return None, ""
    if isinstance(exc, PermissionError):
        return "blocked", str(exc)
    return "failed", f"{type(exc).__name__}: {exc}"


def _success(value: Any) -> tuple[str, Any]:
    if isinstance(value, Replayed):
        return "replayed", value.result
    return "result", value


# Arguments that name a tenant: the identity's tenant is the only one they may name.
TENANT_ARGUMENTS = frozenset(
    {"tenant", "tenant_id", "organisation", "organization", "organisation_id", "org", "org_id"}
)
# The steps of the tool check that come before the arguments are read.
_BEFORE_SCHEMA = 3


def intent_key(
    *,
    organisation: str,
    session: str,
    tool: str,
    arguments: Mapping[str, Any],
    step: int,
    compensation_of: int | None = None,
) -> str:
    """The idempotency key of one intent: the same inputs always give the same key.

    The agent is not part of it: an intent handed off to another agent of the session (or to
    another process) keeps its key, so the write it retries is not run again.
    """
    material = {
        "v": 1,
        "organisation": organisation,
        "session": session,
        "tool": tool,
        "arguments": dict(arguments),
        "step": step,
        "compensation_of": compensation_of,
    }
    return "ik1-" + hashlib.sha256(canonical_bytes(material)).hexdigest()


def intent_step(
    entries: Sequence[Mapping[str, Any]], tool: str, arguments: Mapping[str, Any]
) -> int:
    """The session's step for a call: the history's length without its trailing copies of the call.

    `entries` are the history's contents (`{"tool", "arguments", ...}`), oldest first.
    """
    wanted = canonical_bytes(dict(arguments))
    step = len(entries)
    while step > 0:
        content = entries[step - 1]
        if content.get("tool") != tool or content.get("compensation_of") is not None:
            break
        if canonical_bytes(dict(content.get("arguments") or {})) != wanted:
            break
        step -= 1
    return step


def schema_counter(decision: Mapping[str, Any]) -> str | None:
    """`schema_rejected`, `schema_valid`, or None for a call refused before its arguments were read."""
    reasons = [str(reason).split(":", 1)[0] for reason in decision.get("reasons", ())]
    if "argument_schema" in reasons:
        return "schema_rejected"
    step = (decision.get("detail") or {}).get("step")
    if decision.get("decision") == "refuse" and isinstance(step, int) and step < _BEFORE_SCHEMA:
        return None
    return "schema_valid"


def foreign_tenant(arguments: Mapping[str, Any], tenant: str) -> str | None:
    """The first argument that names a tenant other than the identity's, or None."""
    for name in sorted(arguments):
        if name.lower() in TENANT_ARGUMENTS and str(arguments[name]) != tenant:
            return name
    return None


@dataclass(frozen=True)
class UndoStep:
    """One earlier write of a run and what undoing it means."""

    index: int  # the history entry of the write
    tool: str
    status: str  # "compensate", "irreversible", "left_done", "not_compensated", "unbound"
    compensation: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    missing: tuple[str, ...] = ()


def undo_plan(
    catalogue: Catalogue,
    entries: Sequence[Mapping[str, Any]],
    writes: Iterable[int],
    *,
    undone: Iterable[int] = (),
) -> list[UndoStep]:
    """The undo of a run's writes (history indexes), last first.

    A write whose tool names a compensation gets that tool's call with its arguments bound from
    the write's arguments and result; one whose bindings cannot be read is `unbound` (reported,
    not guessed). Writes already undone are left out.
    """
    done = set(undone)
    plan: list[UndoStep] = []
    for index in sorted(set(writes), reverse=True):
        if index in done or not 0 <= index < len(entries):
            continue
        content = entries[index]
        name = str(content.get("tool"))
        tool = catalogue.tools.get(name)
        if tool is None or tool.compensation is None:
            if tool is not None and tool.irreversible:
                status = "irreversible"
            elif tool is not None and tool.undo_none:
                status = "left_done"  # the team said a failed run may leave it done
            else:
                status = "not_compensated"
            plan.append(UndoStep(index, name, status))
            continue
        arguments: dict[str, Any] = {}
        missing: list[str] = []
        for binding in tool.compensation.bind:
            value = resolve(content, binding.source)
            if value is MISSING:
                missing.append(binding.argument)
            else:
                arguments[binding.argument] = value
        plan.append(
            UndoStep(
                index,
                name,
                "unbound" if missing else "compensate",
                tool.compensation.tool,
                arguments,
                tuple(missing),
            )
        )
    return plan
