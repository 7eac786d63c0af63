"""The tool check as a service of the console: sessions, checks recorded as events, histories.

The engine decides; this module holds what it needs between calls (the catalogue, the rulebook
record and the signed history of each session), turns the organisation's settings into the
engine's, and records every decision in the event feed in the same transaction.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections import OrderedDict
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, Value

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


def _settings_of(obj: OrganisationSettings | None) -> dict[str, Any]:
    if obj is None:
        return {}
    return {
        "taint_policy": obj.taint_policy,
        "licence_valid_until": obj.licence_valid_until.isoformat(),
        "licence_on_lapse": obj.licence_on_lapse,
    }


def engine_settings(organisation_id: int) -> dict[str, Any]:
    return _settings_of(
        OrganisationSettings.objects.filter(organisation_id=organisation_id).first()
    )


def _digest(data: Any) -> str:
    return hashlib.sha256(
        json.dumps(data, sort_keys=True, separators=(",", ":"), default=str).encode()
    ).hexdigest()


# Built tool checks, per process, keyed by the content they were built from: the organisation
# (its signing key), the digests of the catalogue and the rulebook record, and the settings. A
# catalogue is loaded, and every tool's schema checked, once per content, whichever sessions
# carry it. A session's catalogue and rulebook never change, so their digests are remembered by
# its public id, and a check whose tool check is built does not read them from the row at all.
_CHECKS_SIZE = 256
_DIGESTS_SIZE = 20_000
_built: OrderedDict[tuple, engine.ToolCheck] = OrderedDict()
_digests: OrderedDict[str, tuple[str, str]] = OrderedDict()
_checks_lock = threading.Lock()
# The engine settings each organisation's last check read, to tell whether a check is built.
_last_settings: dict[int, dict[str, Any]] = {}


def _remember(table: OrderedDict, key: Any, value: Any, size: int) -> None:
    with _checks_lock:
        table[key] = value
        table.move_to_end(key)
        while len(table) > size:
            table.popitem(last=False)


def _content_digests(session: GuardSession) -> tuple[str, str]:
    public_id = str(session.public_id)
    with _checks_lock:
        digests = _digests.get(public_id)
    if digests is None:
        rulebook = session.rulebook
        digests = (_digest(session.catalogue), _digest(rulebook) if rulebook else "")
        _remember(_digests, public_id, digests, _DIGESTS_SIZE)
    return digests


def _built_key(session: GuardSession, settings: dict[str, Any]) -> tuple:
    return (session.organisation_id, *_content_digests(session), tuple(sorted(settings.items())))


def _is_built(public_id: str, organisation_id: int, settings: dict[str, Any] | None) -> bool:
    """Whether the session's tool check is built here (then its catalogue need not be read)."""
    with _checks_lock:
        digests = _digests.get(public_id)
        if digests is None or settings is None:
            return False
        return (organisation_id, *digests, tuple(sorted(settings.items()))) in _built


def _tool_check(
    session: GuardSession, *, settings: dict[str, Any] | None = None
) -> engine.ToolCheck:
    """The session's tool check, built once per content and shared (`settings`: already read)."""
    if settings is None:
        settings = engine_settings(session.organisation_id)
    key = _built_key(session, settings)
    with _checks_lock:
        check = _built.get(key)
        if check is not None:
            _built.move_to_end(key)
            return check
    check = engine.ToolCheck(
        session.catalogue,
        key=session_key(session.organisation_id),
        rulebook=session.rulebook,
        settings=settings,
    )
    _remember(_built, key, check, _CHECKS_SIZE)
    return check


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
    *,
    flags: tuple[bool, bool] | None = None,
) -> dict[str, Any]:
    """What sequence alerts switched on, applied after the check: they only make it stricter.

    Agent and tool names are compared in their normal form (a switch set for `desk` holds for
    `Desk`); whether the tool reads is the catalogue's word. `flags` are the switch and the hold
    as already read with the session (`_locked`), else they are read here.
    """
    tool = str(call.get("tool") or "")
    if flags is None:
        flags = (
            _control_flags(
                GuardSession.objects.filter(pk=session.pk),
                organisation_id=actor.organisation.pk,
                agent=session.agent,
                session=str(session.public_id),
                tool=tool,
            )
            .values_list("tool_switched", "session_held")
            .get()
        )
    switched, held = flags
    if switched:
        return {
            "decision": "refuse",
            "reasons": ["tool_disabled"],
            "detail": {"tool": tool},
            "rule": None,
        }
    known = check.catalogue.tools.get(tool)
    writes = known is None or known.kind != "read"
    if held and writes and result["decision"] == "allow" and "confirmed" not in result["reasons"]:
        return {**result, "decision": "confirm", "reasons": [*result["reasons"], "session_held"]}
    return result


def _control_flags(rows: Any, *, organisation_id: int, agent: str, session: str, tool: str) -> Any:
    """`rows` (a queryset), each with whether the tool is switched off for the agent
    (`tool_switched`) and whether the session is held (`session_held`): read in the same query.

    Agent and tool names are compared in their normal form.
    """
    agent = name_key(agent)
    return rows.annotate(
        tool_switched=Exists(
            ToolSwitch.objects.filter(
                organisation_id=organisation_id, agent=agent, tool=name_key(tool), enabled_at=None
            )
        ),
        session_held=Exists(
            SessionHold.objects.filter(
                organisation_id=organisation_id,
                agent=agent,
                session=session,
                released_at=None,
            )
        )
        if session
        else Value(False),
    )


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
    call = _call(session, data)
    # One statement reads the session (locked), its organisation's settings, and the switch and
    # hold that apply to this call; the catalogue and rulebook only when no tool check is built
    # from them yet (with the settings last seen for the organisation; if those changed, the
    # deferred fields are read once more).
    rows = GuardSession.objects.select_for_update(of=("self",)).select_related(
        "organisation__settings"
    )
    public_id = str(session.public_id)
    if _is_built(public_id, actor.organisation.pk, _last_settings.get(actor.organisation.pk)):
        rows = rows.defer("catalogue", "rulebook")
    session = _control_flags(
        rows,
        organisation_id=actor.organisation.pk,
        agent=session.agent,
        session=public_id,
        tool=str(call.get("tool") or ""),
    ).get(pk=session.pk)
    settings = _settings_of(getattr(session.organisation, "settings", None))
    _last_settings[actor.organisation.pk] = settings
    check = _tool_check(session, settings=settings)
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
    result = _controls(
        actor,
        session,
        check,
        call,
        decision.to_dict(),
        flags=(session.tool_switched, session.session_held),
    )
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
