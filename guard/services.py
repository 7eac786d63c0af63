"""The tool check as a service of the console: sessions, checks recorded as events, histories.

The engine decides; this module holds what it needs between calls (the catalogue, the rulebook
record and the signed history of each session), turns the organisation's settings into the
engine's, and records every decision in the event feed in the same transaction.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import transaction

from console.access import Actor, require
from console.models import OrganisationSettings, SessionHold, ToolSwitch
from console.services import event_record
from console.tracing import decision_span
from firewall.engine.names import name_key
from guard import engine
from guard.models import GuardSession
from rulebooks import budget, compiler


def session_key(organisation_id: int) -> bytes:
    """The organisation's signing key for histories and tokens, derived from the server's secret."""
    return hmac.new(
        django_settings.SECRET_KEY.encode(),
        f"stalwart-guard:{organisation_id}".encode(),
        hashlib.sha256,
    ).digest()


def engine_settings(organisation_id: int) -> dict[str, Any]:
    obj = OrganisationSettings.objects.filter(organisation_id=organisation_id).first()
    if obj is None:
        return {}
    return {
        "taint_policy": obj.taint_policy,
        "licence_valid_until": obj.licence_valid_until.isoformat(),
        "licence_on_lapse": obj.licence_on_lapse,
    }


def _issues(exc: engine.CatalogueInvalid, prefix: str) -> ValidationError:
    errors: dict[str, list[str]] = {}
    for issue in getattr(exc, "issues", []) or []:
        path = getattr(issue, "path", "") or ""
        errors.setdefault(f"{prefix}.{path}" if path else prefix, []).append(
            getattr(issue, "message", str(issue))
        )
    return ValidationError(errors or {prefix: [str(exc)]})


def _record_for(actor: Actor, rulebook: Any) -> dict | None:
    """The rulebook record a session runs under: a record, or a Colang source compiled here."""
    if rulebook is None:
        return None
    records_only = OrganisationSettings.objects.filter(
        organisation=actor.organisation, compiled_records_only=True
    ).exists()
    try:
        if isinstance(rulebook, str):
            if records_only:
                raise compiler.PolicyInputRefused(
                    "this organisation accepts compiled rulebook records only"
                )
            return budget.compile_within_budget(rulebook.encode("utf-8"), filename="policy.co")
        problems = compiler.record_problems(rulebook)
        if problems:
            raise ValidationError({"rulebook": problems})
        return rulebook
    except compiler.RulebookUnsupported as exc:
        raise ValidationError({"rulebook": [str(e) for e in exc.errors]}) from exc
    except compiler.RulebookError as exc:
        raise ValidationError({"rulebook": [f"{getattr(exc, 'code', 'rulebook')}: {exc}"]}) from exc


def _tool_check(session: GuardSession) -> engine.ToolCheck:
    return engine.ToolCheck(
        session.catalogue,
        key=session_key(session.organisation_id),
        rulebook=session.rulebook,
        settings=engine_settings(session.organisation_id),
    )


def session_history(check: engine.ToolCheck, session: GuardSession) -> engine.History:
    """The session's history, verified against the head the server kept; `HistoryInvalid` else."""
    return check.load_history(session.history, head=session.head)


def session_keep(session: GuardSession, history: engine.History) -> list[str]:
    """Keep a history and its head on the session (the caller saves the fields named)."""
    session.history, session.head = history.to_json(), history.head
    return ["history", "head"]


@transaction.atomic
def session_create(
    *, actor: Actor, agent: str, catalogue: Any, rulebook: Any = None
) -> GuardSession:
    """A session for one agent of the catalogue; the catalogue and rulebook are checked first."""
    require(actor, "guard.check")
    if not isinstance(agent, str) or not agent:
        raise ValidationError({"agent": ["name the agent of the catalogue this session is for"]})
    try:
        loaded = engine.load_catalogue(catalogue)
    except engine.CatalogueInvalid as exc:
        raise _issues(exc, "catalogue") from exc
    if agent not in loaded.agents:
        raise ValidationError({"agent": [f"`{agent}` is not an agent of the catalogue"]})
    record = _record_for(actor, rulebook)
    session = GuardSession(
        organisation=actor.organisation,
        agent=agent,
        catalogue=catalogue,
        rulebook=record,
        created_by=actor.label,
    )
    check = engine.ToolCheck(
        catalogue,
        key=session_key(actor.organisation.pk),
        rulebook=record,
        settings=engine_settings(actor.organisation.pk),
    )
    session_keep(session, check.new_history(str(session.public_id)))
    session.save()
    return session


def _call(session: GuardSession, data: dict[str, Any]) -> dict[str, Any]:
    call = {
        "tool": data.get("tool"),
        "agent": session.agent,
        "arguments": data.get("arguments", {}),
    }
    for name in ("origins", "labels", "compensation_of", "plan"):
        if data.get(name) is not None:
            call[name] = data[name]
    return call


def _controls(
    actor: Actor,
    session: GuardSession,
    check: engine.ToolCheck,
    call: dict[str, Any],
    result: dict[str, Any],
) -> dict[str, Any]:
    """What sequence alerts switched on, applied after the check: they only make it stricter.

    Agent and tool names are compared in their normal form (a switch set for `desk` holds for
    `Desk`); whether the tool reads is the catalogue's word.
    """
    tool = str(call.get("tool") or "")
    key = {"organisation": actor.organisation, "agent": name_key(session.agent)}
    if ToolSwitch.objects.filter(**key, tool=name_key(tool), enabled_at=None).exists():
        return {
            "decision": "refuse",
            "reasons": ["tool_disabled"],
            "detail": {"tool": tool},
            "rule": None,
        }
    known = check.catalogue.tools.get(tool)
    writes = known is None or known.kind != "read"
    held = SessionHold.objects.filter(
        **key, session=str(session.public_id), released_at=None
    ).exists()
    if held and writes and result["decision"] == "allow" and "confirmed" not in result["reasons"]:
        return {**result, "decision": "confirm", "reasons": [*result["reasons"], "session_held"]}
    return result


def _secret(check: engine.ToolCheck, call: dict[str, Any]) -> frozenset[str]:
    """The arguments the catalogue marks secret for the call's tool: redacted in every event."""
    known = check.catalogue.tools.get(str(call.get("tool") or ""))
    return known.secret if known is not None else frozenset()


def _checks(checks: Any) -> list[str] | None:
    """`checks` as the engine takes it: absent, or a list of check names."""
    if checks is None:
        return None
    if not isinstance(checks, list) or not all(isinstance(name, str) for name in checks):
        raise ValidationError({"checks": ["a list of check names"]})
    return checks


@decision_span("toolcheck")
@transaction.atomic
def session_check(*, actor: Actor, session: GuardSession, data: dict[str, Any]) -> dict[str, Any]:
    """Decide one call in the session; the decision is recorded as an event."""
    require(actor, "guard.check")
    session = GuardSession.objects.select_for_update().get(pk=session.pk)
    check = _tool_check(session)
    call = _call(session, data)
    try:
        decision = check.check(
            call,
            session=session.history,
            head=session.head,
            context=data.get("context"),
            token=data.get("token"),
            checks=_checks(data.get("checks")),
            usage=data.get("usage"),
        )
    except engine.UnknownCheck as exc:
        raise ValidationError({"checks": [str(exc)]}) from exc
    result = _controls(actor, session, check, call, decision.to_dict())
    if result["decision"] == "confirm" and not data.get("token"):
        from guard.approvals import approval_request_create

        request = approval_request_create(
            actor=actor,
            session=session,
            call=call,
            decision=result,
            requested_for=str(data.get("user") or ""),
        )
        result["approval"] = str(request.public_id)
    event_record(
        organisation=actor.organisation,
        source="toolcheck",
        decision=result["decision"],
        session=str(session.public_id),
        agent=session.agent,
        tool=str(call.get("tool") or ""),
        stage="tool_call",
        reasons=list(result["reasons"]),
        rule=result.get("rule") or "",
        detail={"call": call, "detail": result.get("detail", {})},
        secret_keys=_secret(check, call),
    )
    return result


@transaction.atomic
def session_record(*, actor: Actor, session: GuardSession, data: dict[str, Any]) -> dict[str, Any]:
    """Append a call that ran, with its result, to the session's signed history."""
    require(actor, "guard.check")
    session = GuardSession.objects.select_for_update().get(pk=session.pk)
    check = _tool_check(session)
    try:
        history = session_history(check, session)
        entry = check.record(history, _call(session, data), data.get("result"))
    except (engine.GuardError, engine.MalformedCall) as exc:
        raise ValidationError({"call": [str(exc)]}) from exc
    session.save(update_fields=[*session_keep(session, history), "updated_at"])
    return {"index": len(history) - 1, "mac": getattr(entry, "mac", None)}


@transaction.atomic
def session_read(*, actor: Actor, session: GuardSession, turn: str) -> dict[str, Any]:
    """Keep the person's turn: the checks of what was said read the latest one."""
    require(actor, "guard.check")
    if not isinstance(turn, str) or not turn.strip():
        raise ValidationError({"turn": ["the person's turn, as text"]})
    session = GuardSession.objects.select_for_update().get(pk=session.pk)
    session.turns = [*session.turns, turn][-50:]
    session.save(update_fields=["turns", "updated_at"])
    return {"turns": len(session.turns)}
