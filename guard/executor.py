"""The executor: the guarded tool step that runs a write once.

Every call goes through the same path, each control in a function of its own:

1. **The ledger first.** A write's idempotency key is derived from the intent
   (`engine.execution.intent_key`); a key the ledger already holds as done answers with the
   recorded result (`duplicates_suppressed`) and the tool is not called.
2. **The tool check** (its 13 steps, then the switches sequence alerts set): a refusal is
   `REJECTED` when the arguments broke the schema (`schema_rejected`), `REFUSED` otherwise.
3. **The write switch** (per tool and per organisation) and **tenancy** (the tenant comes from the
   identity; an argument naming another one, or the domain's own `authorize`, blocks the call):
   `BLOCKED`, counted in `blocked_actions`. Reads pass the write switch.
4. **Confirmation right before the effect**: a `confirm` puts the call in the approvers' queue
   (`CONFIRM`); `resume` runs it with the signed token once a person approved, or `CANCELLED`.
5. **The effect**: the ledger row is committed as `claimed`, then the tool is called with the key;
   a timeout is retried with the same key, never a new one. The result marks the row `done`, is
   appended to the session's signed history, and counts in `effects` (or `duplicates_suppressed`
   when the tool replayed the key).
6. **Secondary steps** (the tool's audit trail, a notification) are written to the outbox in the
   transaction that marks the effect done; one that fails makes the outcome `PARTIAL`
   (`partial_results`) and a Celery task reconciles it. The main write is never repeated.
7. **Undo**: when a call of a run is refused, the run's earlier writes are compensated, last
   first, each compensation checked and keyed like any write.

Logs and events never hold credentials, tokens or arguments marked secret (`_log_fields`).
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from console.access import Actor, require
from console.redaction import redact
from console.services import audit_record, event_record
from guard import engine, running
from guard.approvals import approval_request_create
from guard.counters import count, counters
from guard.engine.canonical import is_json
from guard.engine.check import _refuse
from guard.engine.execution import (
    ExecutionContext,
    Replayed,
    call_tool,
    foreign_tenant,
    intent_key,
    intent_step,
    schema_counter,
    undo_plan,
)
from guard.models import ApprovalRequest, Effect, GuardSession, PendingStep, WriteSwitch
from guard.services import (
    _controls,
    _tool_check,
    session_decide,
    session_history,
    session_keep,
)

__all__ = [
    "ExecutionContext",
    "Executor",
    "Replayed",
    "ToolBinding",
    "counters",
    "reconcile_pending",
    "write_switch_set",
    "writes_enabled",
]

log = logging.getLogger("stalwart.executor")

STEP_ATTEMPTS = 10  # a secondary step the reconciler still cannot run after this many gives up
STOPPING = frozenset({"REJECTED", "REFUSED", "BLOCKED", "CANCELLED"})


@dataclass(frozen=True)
class ToolBinding:
    """How the executor runs one tool: its function, the domain's check, its secondary steps."""

    function: Callable[[dict[str, Any], ExecutionContext], Any]
    authorize: Callable[[dict[str, Any], ExecutionContext], bool] | None = None
    secondary: tuple[str, ...] = ()


# -- the controls, each on its own -------------------------------------------------------------


def _confirmation_needed(decision: Mapping[str, Any]) -> bool:
    """A call the check answered `confirm` waits for a person."""
    return decision.get("decision") == "confirm"


def _authorised(
    binding: ToolBinding | None, arguments: dict[str, Any], context: ExecutionContext
) -> str | None:
    """Why the identity may not act on the call's object, or None: tenant, then the domain."""
    named = foreign_tenant(arguments, context.tenant)
    if named is not None:
        return f"tenant: {named}"
    if binding is not None and binding.authorize is not None:
        try:
            allowed = binding.authorize(dict(arguments), context)
        except Exception:  # noqa: BLE001 - a check that cannot answer does not let the call through
            return "authorization_unavailable"
        if allowed is not True:
            return "authorization_denied"
    return None


def _retry_key(key: str, attempt: int) -> str:
    """The key a retry is sent with: the same one, whatever the attempt."""
    return key


def _log_fields(
    context: ExecutionContext,
    arguments: Mapping[str, Any],
    outcome: Mapping[str, Any],
    secret: frozenset[str],
) -> dict[str, Any]:
    """What a log line keeps: actor, tenant, operation, target, key and decision; never secrets."""
    return {
        "event": "tool_call",
        "actor": context.person,
        "tenant": context.tenant,
        "session": context.session,
        "tool": context.tool,
        "key": outcome.get("key") or "",
        "outcome": outcome.get("outcome"),
        "reasons": list(outcome.get("reasons") or []),
        "target": redact(dict(arguments), secret_keys=secret),
    }


def _running_limits(
    check: engine.ToolCheck,
    known: Any,
    session: GuardSession,
    call: Mapping[str, Any],
    key: str,
    history: engine.History,
    decision: dict[str, Any],
    *,
    cost: Any = None,
) -> dict[str, Any]:
    """The tool's `at_most`, its spend over the run and the run's cost cap, and an undo's step
    undone once, counting the writes in flight (`guard.running`: begun and not yet reported, or
    allowed by `/check` and not yet recorded) as the check counts those that ran: a call begun
    while another runs is decided as if that one had run (a running write costs what the
    catalogue declares). A write left claimed (its answer lost) may have had its effect, and
    counts; the call's own key (a retry of it) does not. `cost`: what the host says this call
    costs (`/execute`'s `cost`)."""
    undoes = call.get("compensation_of")
    if undoes is not None and known.kind != "read":
        # The undo's key counts the history: one begun again after the history moved on has a
        # key of its own, and the step is undone in the history only once an undo is reported.
        undoing = (
            Effect.objects.filter(
                session=session, compensation_of=undoes, status=Effect.Status.CLAIMED
            )
            .exclude(key=key)
            .values_list("key", flat=True)
            .first()
        )
        if undoing is not None:
            return _refuse(
                "compensation_spent",
                6,
                "undo",
                undoes=undoes,
                problem="the step's undo is running",
                running=undoing,
            ).to_dict()
    if not running.counts_running(known, call):
        return decision
    flying = [
        entry
        for entry in running.in_flight(session, now=timezone.now())
        if entry.checked or entry.key != key
    ]
    return running.limits_with_running(check, known, call, history, decision, flying, cost=cost)


# -- the write switch ---------------------------------------------------------------------------


def writes_enabled(organisation_id: int, tool: str) -> bool:
    """Whether writes of `tool` may run: neither the organisation's nor the tool's switch is off."""
    switches = dict(
        WriteSwitch.objects.filter(
            organisation_id=organisation_id, tool__in=["", tool]
        ).values_list("tool", "writes_enabled")
    )
    return switches.get("", True) and switches.get(tool, True)


@transaction.atomic
def write_switch_set(*, actor: Actor, tool: str, enabled: bool) -> WriteSwitch:
    """Switch writes of one tool (or, with `tool=""`, of every tool) off or back on."""
    require(actor, "controls.write")
    from guard.engine.catalogue import NAME

    if not isinstance(tool, str) or len(tool) > 200 or (tool and not NAME.match(tool)):
        from django.core.exceptions import ValidationError

        shown = f"`{tool[:60]}` is not " if isinstance(tool, str) and tool else "not "
        raise ValidationError(
            {
                "tool": [
                    f"{shown}a tool's name (a letter or `_`, then letters, digits, `_ . -`), "
                    "or empty for every tool"
                ]
            }
        )
    switch, _ = WriteSwitch.objects.select_for_update().get_or_create(
        organisation=actor.organisation, tool=tool, defaults={"changed_by": actor.label}
    )
    old = switch.writes_enabled
    switch.writes_enabled = bool(enabled)
    switch.changed_by = actor.label
    switch.changed_at = timezone.now()
    switch.save()
    audit_record(
        actor=actor,
        action="writes.enabled" if enabled else "writes.disabled",
        object_type="write_switch",
        object_id=tool or "*",
        changes={"writes_enabled": {"old": old, "new": bool(enabled)}},
    )
    return switch


# -- the executor ---------------------------------------------------------------------------------


class Executor:
    """Runs one session's calls through the controls; `bindings` maps tool names to their code.

    `call` returns the outcome as a dict: `outcome` (see `engine.execution.OUTCOMES`), `reasons`,
    `detail`, and as they apply `key`, `result`, `duplicate`, `approval`, `pending` and `undo`.
    The run's writes are remembered, so that a refusal later in the run undoes them.
    """

    def __init__(
        self,
        *,
        actor: Actor,
        session: GuardSession,
        bindings: Mapping[str, ToolBinding],
        credentials: Mapping[str, str] | None = None,
        undo_on_refusal: bool = True,
        timeout_backoff: float = 0.05,
        run: Mapping[str, str] | None = None,
    ) -> None:
        require(actor, "guard.check")
        if session.organisation_id != actor.organisation.pk:
            raise PermissionError("the session belongs to another organisation")
        self.actor = actor
        self.session = session
        self.bindings = dict(bindings)
        self.credentials = dict(credentials or {})
        self.undo_on_refusal = undo_on_refusal
        self.timeout_backoff = timeout_backoff
        self.writes: list[int] = []  # history indexes of this run's writes
        # The framework's run and thread ids of the calls (checked by the caller): on each event.
        self.run = dict(run or {})

    # The tenant is the organisation of the authenticated identity, never an argument.
    @property
    def tenant(self) -> str:
        return self.actor.organisation.slug

    def _context(self, tool: str, key: str = "") -> ExecutionContext:
        return ExecutionContext(
            tenant=self.tenant,
            person=self.actor.label,
            session=str(self.session.public_id),
            agent=self.session.agent,
            tool=tool,
            key=key,
            credentials=self.credentials,
        )

    def call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        origins: Mapping[str, str] | None = None,
        labels: list[str] | None = None,
        token: str | None = None,
        context: Mapping[str, Any] | None = None,
        user: str = "",
    ) -> dict[str, Any]:
        """Run one call of the run through every control; undo the run's writes on a refusal."""
        call: dict[str, Any] = {"tool": tool, "agent": self.session.agent, "arguments": arguments}
        if origins:
            call["origins"] = dict(origins)
        if labels:
            call["labels"] = list(labels)
        outcome = self._run(call, token=token, context=context, user=user)
        if outcome["outcome"] in STOPPING and self.writes and self.undo_on_refusal:
            outcome["undo"] = self.undo()
        return outcome

    def resume(self, outcome: Mapping[str, Any]) -> dict[str, Any]:
        """After a `CONFIRM`: the call runs with the person's token, or is `CANCELLED`."""
        if outcome.get("outcome") != "CONFIRM" or not outcome.get("approval"):
            raise ValueError("only a CONFIRM outcome waits for a person")
        request = ApprovalRequest.objects.get(
            organisation=self.actor.organisation, public_id=outcome["approval"]
        )
        if request.status == ApprovalRequest.Status.PENDING and not request.is_open:
            ApprovalRequest.objects.filter(pk=request.pk, status="pending").update(
                status=ApprovalRequest.Status.EXPIRED
            )
            request.refresh_from_db()
        if request.status == ApprovalRequest.Status.PENDING:
            return dict(outcome)
        if request.status != ApprovalRequest.Status.APPROVED or not request.token:
            cancelled = self._finish_without_effect(
                request.call,
                "CANCELLED",
                [f"confirmation_{request.status}"],
                {"approval": str(request.public_id), "answered_by": request.answered_by},
            )
            if self.writes and self.undo_on_refusal:
                cancelled["undo"] = self.undo()
            return cancelled
        call = dict(request.call)
        return self.call(
            call["tool"],
            call.get("arguments") or {},
            origins=call.get("origins"),
            labels=call.get("labels"),
            token=request.token,
        )

    def _key(
        self, tool: str, arguments: Mapping[str, Any], step: int, compensation_of: int | None
    ) -> str:
        """The intent's idempotency key in this organisation and session."""
        return intent_key(
            organisation=str(self.actor.organisation.pk),
            session=str(self.session.public_id),
            tool=tool,
            arguments=arguments,
            step=step,
            compensation_of=compensation_of,
        )

    # -- a tool that runs in another process (the SDK): begin, run there, complete -------------

    def begin(
        self,
        call: dict[str, Any],
        *,
        token: str | None = None,
        context: Mapping[str, Any] | None = None,
        user: str = "",
        **options: Any,
    ) -> dict[str, Any]:
        """Every control up to the effect; `RUN` carries the key and the tenant to run it with.

        `options` are the check's own (`checks`, `usage`, `cost`), as `/check` takes them. The
        call's `agent` may name another agent of the catalogue (one conversation across agents);
        the check refuses one the catalogue does not have."""
        from guard.services import call_agent

        call = {**call, "agent": call_agent(self.session, call.get("agent"))}
        started = self._begin(
            call, token=token, context=context, user=user, binding=None, options=options
        )
        if started["outcome"] != "RUN":
            return started
        return {
            "outcome": "RUN",
            "key": started["key"],
            "tenant": self.tenant,
            "reasons": list(started["decision"].get("reasons", [])),
        }

    def complete(
        self,
        call: dict[str, Any],
        *,
        key: str = "",
        result: Any = None,
        replayed: bool = False,
        failed: str | None = None,
        blocked: str | None = None,
        cost: Any = None,
    ) -> dict[str, Any]:
        """Record what a tool that ran elsewhere did, under the key `begin` claimed for that call
        (with the `cost` the host reports for it, where it reports one)."""
        from django.core.exceptions import ValidationError

        from guard.services import call_agent

        call = {**call, "agent": call_agent(self.session, call.get("agent"))}
        tool = str(call.get("tool") or "")
        check = _tool_check(self.session)
        if check.catalogue.agents and call["agent"] not in check.catalogue.agents:
            raise ValidationError(
                {"agent": [f"`{call['agent']}` is not an agent of the catalogue"]}
            )
        known = check.catalogue.tools.get(tool)
        if known is None:
            raise ValidationError({"tool": [f"`{tool}` is not a tool of this session"]})
        secret = known.secret
        arguments = call.get("arguments")
        if not isinstance(arguments, dict) or not is_json(arguments):
            raise ValidationError({"arguments": ["the arguments of the call, as a JSON object"]})
        if known.kind == "read":
            if key:
                raise ValidationError({"key": ["a read has no key"]})
        else:
            effect = Effect.objects.filter(organisation=self.actor.organisation, key=key).first()
            if effect is None or effect.session_id != self.session.pk:
                raise ValidationError({"key": ["no write of this session was begun with this key"]})
            if self._key(tool, arguments, effect.step, call.get("compensation_of")) != key:
                raise ValidationError(
                    {"key": ["the call differs from the one begun with this key"]}
                )
            if effect.status == Effect.Status.DONE:
                return self._replay(effect, arguments, secret)
            if effect.status != Effect.Status.CLAIMED:
                raise ValidationError({"key": [f"this write is {effect.status}, not running"]})
        started = {
            "key": key,
            "decision": {"reasons": []},
            "secret": secret,
            "check": check,
            "cost": cost,
            "agent": call["agent"],
        }
        if blocked is not None:
            return self._fail(started, tool, arguments, "authorization_denied", str(blocked))
        if failed is not None:
            return self._fail(started, tool, arguments, "tool_failed", str(failed))
        return self._finish(started, call, ToolBinding(_nothing), result, replayed=replayed)

    # -- one call ------------------------------------------------------------------------------

    def _run(
        self,
        call: dict[str, Any],
        *,
        token: str | None,
        context: Mapping[str, Any] | None,
        user: str,
    ) -> dict[str, Any]:
        tool = str(call.get("tool") or "")
        arguments = call.get("arguments")
        binding = self.bindings.get(tool)
        started = self._begin(call, token=token, context=context, user=user, binding=binding)
        if started["outcome"] != "RUN":
            return started
        if binding is None:  # allowed by the check, but this process has no code for it
            return self._fail(started, tool, arguments, "no_binding", "no function runs this tool")
        return self._effect(started, binding, call)

    def _begin(
        self,
        call: dict[str, Any],
        *,
        token: str | None,
        context: Mapping[str, Any] | None,
        user: str,
        binding: ToolBinding | None,
        options: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Everything before the effect, in one transaction: ledger, check, switches, claim."""
        actor, organisation = self.actor, self.actor.organisation
        tool = str(call.get("tool") or "")
        arguments = call.get("arguments")
        with transaction.atomic():
            session = GuardSession.objects.select_for_update().get(pk=self.session.pk)
            check = _tool_check(session)
            known = check.catalogue.tools.get(tool)
            write = known is None or known.kind != "read"
            secret = known.secret if known is not None else frozenset()
            key, effect = "", None
            readable = isinstance(arguments, dict) and is_json(arguments)
            # Verified once: the key's step and the check both read it.
            history = _verified(check, session) if write and readable else None
            if history is not None:
                entries = [entry.content for entry in history]
                undoes = call.get("compensation_of")
                step = len(entries) if undoes is not None else intent_step(entries, tool, arguments)
                key = self._key(tool, arguments, step, undoes)
                effect = (
                    Effect.objects.select_for_update()
                    .filter(organisation=organisation, key=key)
                    .first()
                )
                if effect is not None and effect.status == Effect.Status.DONE:
                    return self._replay(effect, arguments, secret)

            decision = session_decide(
                session, call, history=history, context=context, token=token, **(options or {})
            ).to_dict()
            decision = _controls(actor, session, check, call, decision)
            if decision["decision"] != "refuse" and known is not None and history is not None:
                cost = (options or {}).get("cost")
                decision = _running_limits(
                    check, known, session, call, key, history, decision, cost=cost
                )
            if self.run:  # shown with the decision, and with the request a person answers
                decision = {
                    **decision,
                    "detail": {**dict(decision.get("detail") or {}), "run": self.run},
                }
            counter = schema_counter(decision)
            if counter is not None and not token:
                # A call run with a person's token was counted when it was first proposed.
                count(organisation, tool, counter)
            if decision["decision"] == "refuse":
                kind = "REJECTED" if counter == "schema_rejected" else "REFUSED"
                return self._decided(kind, call, decision, secret=secret)

            blocked = None
            if write and not writes_enabled(organisation.pk, tool):
                blocked = "writes_disabled"
            if blocked is None and isinstance(arguments, dict):
                blocked = _authorised(binding, arguments, self._context(tool, key))
            if blocked is not None:
                count(organisation, tool, "blocked_actions")
                return self._decided(
                    "BLOCKED", call, {**decision, "reasons": [blocked]}, secret=secret
                )

            if _confirmation_needed(decision):
                request = approval_request_create(
                    actor=actor, session=session, call=call, decision=decision, requested_for=user
                )
                return self._decided(
                    "CONFIRM",
                    call,
                    decision,
                    secret=secret,
                    extra={"approval": str(request.public_id)},
                )

            if not write:
                return {
                    "outcome": "RUN",
                    "key": "",
                    "decision": decision,
                    "secret": secret,
                    "check": check,
                    "agent": call.get("agent"),
                }
            if effect is None:
                effect = Effect(
                    organisation=organisation,
                    key=key,
                    session=session,
                    agent=str(call.get("agent") or session.agent),
                    tool=tool,
                    arguments=redact(arguments, secret_keys=secret),
                    compensation_of=call.get("compensation_of"),
                    step=step,
                    created_by=actor.label,
                )
            elif effect.status == Effect.Status.CLAIMED and not (known and known.idempotent):
                # An attempt before this one may have had its effect, and the tool cannot tell.
                return self._decided(
                    "UNCERTAIN",
                    call,
                    {**decision, "reasons": ["effect_uncertain"]},
                    secret=secret,
                    extra={"key": key},
                )
            effect.status = Effect.Status.CLAIMED
            effect.attempts += 1
            effect.save()
        # Committed: the claim is on record before the tool is called.
        return {
            "outcome": "RUN",
            "key": key,
            "decision": decision,
            "secret": secret,
            "check": check,
            "agent": call.get("agent"),
        }

    def _effect(
        self, started: dict[str, Any], binding: ToolBinding, call: dict[str, Any]
    ) -> dict[str, Any]:
        """Call the tool (a timeout is retried with the same key) and record what it did."""
        tool = str(call["tool"])
        arguments = dict(call.get("arguments") or {})
        status, value = call_tool(
            binding.function,
            arguments,
            self._context(tool, started["key"]),
            backoff=self.timeout_backoff,
            retry_key=_retry_key,
        )
        if status == "uncertain":
            # The tool may have had its effect: the key stays claimed, so that a retry replays
            # it rather than running it anew.
            return self._unfinished(started, call, "timeout")
        if status == "blocked":
            return self._fail(started, tool, arguments, "authorization_denied", value)
        if status == "failed":
            return self._fail(started, tool, arguments, "tool_failed", value)
        replayed, result = status == "replayed", value
        return self._finish(started, call, binding, result, replayed=replayed)

    def _finish(
        self,
        started: dict[str, Any],
        call: dict[str, Any],
        binding: ToolBinding,
        result: Any,
        *,
        replayed: bool,
    ) -> dict[str, Any]:
        organisation = self.actor.organisation
        tool = str(call["tool"])
        key = started["key"]
        with transaction.atomic():
            session = GuardSession.objects.select_for_update().get(pk=self.session.pk)
            effect = None
            if key:
                effect = Effect.objects.select_for_update().get(organisation=organisation, key=key)
                if effect.status == Effect.Status.DONE:
                    # Finished twice at once (two reports, or a retry racing the first attempt):
                    # the other one recorded the write while this one waited for the lock. It is
                    # recorded once; this answer is its replay, a suppressed duplicate only when
                    # the tool replayed the key.
                    arguments = call.get("arguments") or {}
                    return self._replay(effect, arguments, started["secret"], counted=replayed)
            check = started["check"]  # built for this call by `_begin` or `complete`
            history = session_history(check, session)
            check.record(history, call, result, cost=started.get("cost"))
            index = len(history) - 1
            session.save(update_fields=[*session_keep(session, history), "updated_at"])
            self.session.history, self.session.head = session.history, session.head
            steps: list[PendingStep] = []
            if effect is not None:
                first = effect.status != Effect.Status.DONE
                effect.status = Effect.Status.DONE
                effect.result = result
                effect.history_index = index
                effect.error = ""
                if replayed:
                    effect.replays += 1
                effect.save()
                steps = [
                    PendingStep.objects.create(organisation=organisation, effect=effect, name=name)
                    for name in binding.secondary
                ]
                # The tool recorded the effect once, whichever attempt it answered; a replay of the
                # key is also a retry it suppressed.
                if first:
                    count(organisation, tool, "effects")
                if replayed:
                    count(organisation, tool, "duplicates_suppressed")
                if call.get("compensation_of") is None:
                    self.writes.append(index)
            outcome = {
                "outcome": "SUCCEEDED",
                "key": key,
                "result": result,
                "duplicate": replayed,
                "reasons": list(started["decision"].get("reasons", [])),
                "detail": {"history_index": index},
            }
        pending = [
            step.name for step in steps if not _run_held(step, result, self._context(tool, key))
        ]
        if pending:
            with transaction.atomic():
                count(organisation, tool, "partial_results")
            outcome["outcome"] = "PARTIAL"
            outcome["pending"] = pending
            from guard.tasks import reconcile_soon

            reconcile_soon()
        self._report(outcome, call, started["secret"])
        return outcome

    def _replay(
        self,
        effect: Effect,
        arguments: Mapping[str, Any],
        secret: frozenset[str],
        *,
        counted: bool = True,
    ) -> dict[str, Any]:
        """A retry of a write the ledger holds as done: its result, and no effect (`counted`:
        as a duplicate the ledger suppressed)."""
        if counted:
            # Added in the database: two replays of one row read unlocked both count.
            Effect.objects.filter(pk=effect.pk).update(
                replays=F("replays") + 1, updated_at=timezone.now()
            )
            count(self.actor.organisation, effect.tool, "duplicates_suppressed")
        pending = list(
            effect.steps.filter(status=PendingStep.Status.PENDING).values_list("name", flat=True)
        )
        outcome = {
            "outcome": "PARTIAL" if pending else "SUCCEEDED",
            "key": effect.key,
            "result": effect.result,
            "duplicate": True,
            "reasons": ["duplicate_suppressed"],
            "detail": {"history_index": effect.history_index},
        }
        if pending:
            outcome["pending"] = pending
        call = {"tool": effect.tool, "agent": effect.agent, "arguments": dict(arguments)}
        self._report(outcome, call, secret)
        return outcome

    def _decided(
        self,
        kind: str,
        call: dict[str, Any],
        decision: Mapping[str, Any],
        *,
        secret: frozenset[str],
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        outcome = {
            "outcome": kind,
            "key": "",
            "reasons": list(decision.get("reasons", [])),
            "detail": dict(decision.get("detail") or {}),
            "rule": decision.get("rule"),
            **(extra or {}),
        }
        self._report(outcome, call, secret)
        return outcome

    def _finish_without_effect(
        self, call: Mapping[str, Any], kind: str, reasons: list[str], detail: dict[str, Any]
    ) -> dict[str, Any]:
        tool = str(call.get("tool") or "")
        known = _tool_check(self.session).catalogue.tools.get(tool)
        secret = known.secret if known is not None else frozenset()
        with transaction.atomic():
            return self._decided(
                kind, dict(call), {"reasons": reasons, "detail": detail}, secret=secret
            )

    def _fail(
        self, started: Mapping[str, Any], tool: str, arguments: Any, reason: str, error: str
    ) -> dict[str, Any]:
        """The tool refused or failed: nothing is recorded as run, and the key is released."""
        secret = started.get("secret", frozenset())
        error = str(redact(error))[:300]
        kind = "BLOCKED" if reason == "authorization_denied" else "FAILED"
        with transaction.atomic():
            if started.get("key"):
                effect = (
                    Effect.objects.select_for_update()
                    .filter(organisation=self.actor.organisation, key=started["key"])
                    .first()
                )
                if effect is not None and effect.status == Effect.Status.DONE:
                    # The write's result was reported (and recorded) while this report waited:
                    # a done write stays done, and its history entry stands. Not a retry of the
                    # write, so not counted as a suppressed duplicate.
                    return self._replay(effect, arguments or {}, secret, counted=False)
                Effect.objects.filter(
                    organisation=self.actor.organisation, key=started["key"]
                ).update(
                    status=Effect.Status.BLOCKED if kind == "BLOCKED" else Effect.Status.FAILED,
                    error=error,
                )
            if kind == "BLOCKED":
                count(self.actor.organisation, tool, "blocked_actions")
            call = {
                "tool": tool,
                "agent": started.get("agent") or self.session.agent,
                "arguments": arguments or {},
            }
            return self._decided(
                kind,
                call,
                {"reasons": [reason], "detail": {"error": error}},
                secret=secret,
                extra={"key": started.get("key", "")},
            )

    def _unfinished(
        self, started: Mapping[str, Any], call: dict[str, Any], reason: str
    ) -> dict[str, Any]:
        with transaction.atomic():
            return self._decided(
                "UNCERTAIN",
                call,
                {"reasons": [reason], "detail": {"retry": "with the same call: the key replays"}},
                secret=started.get("secret", frozenset()),
                extra={"key": started.get("key", "")},
            )

    def _report(
        self, outcome: dict[str, Any], call: Mapping[str, Any], secret: frozenset[str]
    ) -> None:
        """The outcome's event (in the caller's transaction) and log line, both redacted."""
        tool = str(call.get("tool") or "")
        arguments = call.get("arguments") if isinstance(call.get("arguments"), dict) else {}
        decision = {
            "SUCCEEDED": "allow",
            "PARTIAL": "allow",
            "CONFIRM": "confirm",
        }.get(outcome["outcome"], "refuse")
        shown = {
            name: outcome[name] for name in ("key", "approval", "pending") if outcome.get(name)
        }
        event_record(
            organisation=self.actor.organisation,
            source="toolcheck",
            decision=decision,
            session=str(self.session.public_id),
            agent=str(call.get("agent") or self.session.agent),
            tool=tool,
            stage="tool_call",
            verdict=outcome["outcome"].lower(),
            reasons=list(outcome.get("reasons") or []),
            rule=outcome.get("rule") or "",
            detail={"call": {**dict(call), "arguments": arguments}, "outcome": shown},
            secret_keys=secret,
            run_id=self.run.get("run_id", ""),
            thread_id=self.run.get("thread_id", ""),
        )
        fields = _log_fields(self._context(tool), arguments, outcome, secret)
        log.info("tool call %s", json.dumps(fields, sort_keys=True, default=str))

    # -- undo ----------------------------------------------------------------------------------

    def undo(self) -> list[dict[str, Any]]:
        """Compensate this run's writes, last first; report the ones that cannot be undone."""
        check = _tool_check(self.session)
        history = session_history(check, self.session)
        entries = [entry.content for entry in history]
        undone = [index for index in range(len(history)) if history.undone_by(index) is not None]
        report: list[dict[str, Any]] = []
        for step in undo_plan(check.catalogue, entries, self.writes, undone=undone):
            item: dict[str, Any] = {"index": step.index, "tool": step.tool, "status": step.status}
            if step.status == "compensate":
                call = {
                    "tool": step.compensation,
                    "agent": entries[step.index].get("agent") or self.session.agent,
                    "arguments": step.arguments,
                    "compensation_of": step.index,
                }
                outcome = self._run(call, token=None, context=None, user="")
                item["compensation"] = step.compensation
                item["outcome"] = outcome["outcome"]
                item["status"] = (
                    "compensated" if outcome["outcome"] in ("SUCCEEDED", "PARTIAL") else "failed"
                )
                if item["status"] == "failed":
                    item["reasons"] = outcome.get("reasons", [])
            elif step.status == "unbound":
                item["missing"] = list(step.missing)
            report.append(item)
        self.writes = []
        return report


def _nothing(arguments: dict[str, Any], context: ExecutionContext) -> None:
    """The function of a tool that runs in another process: the executor never calls it."""
    raise RuntimeError("this tool runs in the agent's process")


def _verified(check: engine.ToolCheck, session: GuardSession) -> engine.History | None:
    """The session's history, verified; None when it does not verify (the check then refuses)."""
    try:
        return session_history(check, session)
    except engine.GuardError:
        return None


# -- secondary steps and their reconciliation ----------------------------------------------------


def _step_function(name: str) -> Callable[[Any, dict[str, Any]], Any]:
    module, _, attribute = name.rpartition(".")
    function = getattr(importlib.import_module(module), attribute, None)
    if not callable(function):
        raise LookupError(f"`{name}` is not a function")
    return function


def _run_step(step: PendingStep, result: Any, context: ExecutionContext) -> bool:
    """Run one secondary step now; on failure it stays pending for the reconciler."""
    shown = {
        "tenant": context.tenant,
        "person": context.person,
        "session": context.session,
        "tool": context.tool,
        "key": context.key,
    }
    try:
        _step_function(step.name)(result, shown)
    except Exception as exc:  # noqa: BLE001 - recorded, redacted; the reconciler tries again
        step.attempts += 1
        step.last_error = str(redact(f"{type(exc).__name__}: {exc}"))[:300]
        step.next_attempt_at = timezone.now() + dt.timedelta(seconds=min(2**step.attempts, 300))
        if step.attempts >= STEP_ATTEMPTS:
            step.status = PendingStep.Status.GAVE_UP
        step.save(update_fields=["attempts", "last_error", "next_attempt_at", "status"])
        return False
    step.attempts += 1
    step.status = PendingStep.Status.DONE
    step.done_at = timezone.now()
    step.save(update_fields=["attempts", "status", "done_at"])
    return True


def _run_held(step: PendingStep, result: Any, context: ExecutionContext) -> bool:
    """Run a step the executor just wrote to the outbox, under its row lock as the reconciler
    runs one: the step is due at once, so a reconciler may have taken it meanwhile, and then it
    is the reconciler's (run once, by whoever holds it). True when it is done."""
    with transaction.atomic():
        held = (
            PendingStep.objects.select_for_update(skip_locked=True)
            .filter(pk=step.pk, status=PendingStep.Status.PENDING)
            .first()
        )
        if held is None:
            return PendingStep.objects.filter(pk=step.pk, status=PendingStep.Status.DONE).exists()
        return _run_step(held, result, context)


def reconcile_pending(limit: int = 100) -> int:
    """Run the secondary steps that are due; each row is locked, so two workers never share one."""
    done = 0
    due = PendingStep.objects.filter(
        status=PendingStep.Status.PENDING, next_attempt_at__lte=timezone.now()
    ).order_by("next_attempt_at")
    for step_id in list(due.values_list("pk", flat=True)[:limit]):
        with transaction.atomic():
            step = (
                PendingStep.objects.select_for_update(skip_locked=True, of=("self",))
                .select_related("effect", "effect__session", "organisation")
                .filter(pk=step_id, status=PendingStep.Status.PENDING)
                .first()
            )
            if step is None:
                continue
            effect = step.effect
            context = ExecutionContext(
                tenant=step.organisation.slug,
                person=effect.created_by,
                session=str(effect.session.public_id) if effect.session else "",
                agent=effect.agent,
                tool=effect.tool,
                key=effect.key,
            )
            if _run_step(step, effect.result, context):
                done += 1
                event_record(
                    organisation=step.organisation,
                    source="toolcheck",
                    decision="allow",
                    session=context.session,
                    agent=effect.agent,
                    tool=effect.tool,
                    stage="reconcile",
                    verdict="reconciled",
                    reasons=["partial_reconciled"],
                    detail={"key": effect.key, "step": step.name},
                )
    return done
