"""The tool check as a service of the console: sessions, checks recorded as events, histories.

The engine decides; this module holds what it needs between calls (the catalogue, the rulebook
record and the signed history of each session), turns the organisation's settings into the
engine's, and records every decision in the event feed in the same transaction.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import hmac
import json
import threading
import uuid
from collections import OrderedDict
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.http import Http404
from django.utils import timezone

from console import controls, statements
from console.access import Actor, require
from console.models import OrganisationSettings
from console.redaction import redact
from console.services import event_record
from console.statements import ModelRows, unchecked
from console.tracing import decision_span
from guard import engine, running
from guard.engine import tokens
from guard.engine.execution import intent_key, intent_step, undo_plan
from guard.models import CheckedWrite, GuardSession
from rulebooks import budget, compiler
from stalwart_agents import runtime


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
    settings = {
        "taint_policy": obj.taint_policy,
        "licence_valid_until": obj.licence_valid_until.isoformat(),
        "licence_on_lapse": obj.licence_on_lapse,
        "language": obj.language,
    }
    # The modes of S1, S2, the confirmation reading and the origin of values (the Settings page).
    settings["said"] = {name: getattr(obj, name) for name in (*runtime.SAID_DEFAULT, "grounded")}
    return settings


def engine_settings(organisation_id: int) -> dict[str, Any]:
    return _settings_of(
        OrganisationSettings.objects.filter(organisation_id=organisation_id).first()
    )


SESSION_SETTINGS = runtime.SESSION_SETTINGS


def session_settings(raw: Any) -> dict[str, Any]:
    """A session's own settings, checked; `ValidationError` naming `settings.<field>`."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ValidationError({"settings": ["a mapping of settings"]})
    errors: dict[str, list[str]] = {}
    for name in sorted(set(raw) - set(SESSION_SETTINGS)):
        errors[f"settings.{name}"] = [
            "not a setting a session may give: it is the organisation's (Settings page)"
        ]
    if errors:
        raise ValidationError(errors)
    try:
        check_settings, _, _ = runtime.split_settings(raw)
        engine.ToolCheck({"tools": []}, key=b"k" * 32, settings=check_settings)
    except runtime.SettingsRefused as exc:
        raise ValidationError({f"settings.{str(exc).split(':')[0]}": [str(exc)]}) from exc
    except engine.GuardError as exc:
        issues = getattr(exc, "issues", None) or []
        raise ValidationError(
            {f"settings.{getattr(i, 'path', '')}": [getattr(i, "message", str(i))] for i in issues}
            or {"settings": [str(exc)]}
        ) from exc
    return dict(raw)


#: The organisation's settings made stricter by a session's own (the runtime's, shared with the
#: sessions that decide from a bundle in the agent's process).
stricter_settings = runtime.stricter_settings


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
_built: OrderedDict[tuple, runtime.Wiring] = OrderedDict()
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
    return (session.organisation_id, *_content_digests(session), runtime.content_digest(settings))


def _is_built(public_id: str, organisation_id: int, settings: dict[str, Any] | None) -> bool:
    """Whether the session's tool check is built here (then its catalogue need not be read)."""
    with _checks_lock:
        digests = _digests.get(public_id)
        if digests is None or settings is None:
            return False
        return (organisation_id, *digests, runtime.content_digest(settings)) in _built


def _wiring(session: GuardSession, *, settings: dict[str, Any] | None = None) -> runtime.Wiring:
    """The session's engines -- the runtime's wiring -- built once per content and shared
    (`settings`: the organisation's, already read)."""
    if settings is None:
        settings = engine_settings(session.organisation_id)
    own = session.settings if "settings" not in session.get_deferred_fields() else None
    if own:
        settings = stricter_settings(settings, own)
    key = _built_key(session, settings)
    with _checks_lock:
        found = _built.get(key)
        if found is not None:
            _built.move_to_end(key)
            return found
    catalogue_digest, rulebook_digest = _content_digests(session)
    found = runtime.wiring(
        session.catalogue,
        key=session_key(session.organisation_id),
        rulebook=session.rulebook,
        settings=settings,
        catalogue_digest=catalogue_digest,
        rulebook_digest=rulebook_digest,
    )
    _remember(_built, key, found, _CHECKS_SIZE)
    return found


def _tool_check(
    session: GuardSession, *, settings: dict[str, Any] | None = None
) -> engine.ToolCheck:
    """The session's tool check (the runtime's, with the checks of what was said)."""
    return _wiring(session, settings=settings).check


def session_decide(
    session: GuardSession,
    call: dict[str, Any],
    *,
    history: Any = None,
    settings: dict[str, Any] | None = None,
    **given: Any,
) -> Any:
    """Decide a call of a session through the runtime: its turns read, its origins derived."""
    wired = _wiring(session, settings=settings)
    return wired.decide(
        call,
        history=history if history is not None else session.history,
        head=session.head,
        turns=list(session.turns or []),
        **given,
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
    *, actor: Actor, agent: str, catalogue: Any, rulebook: Any = None, settings: Any = None
) -> GuardSession:
    """A session for one agent of the catalogue; the catalogue, rulebook and the session's own
    settings (only ever stricter than the organisation's) are checked first."""
    require(actor, "guard.check")
    own = session_settings(settings)
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
        settings=own,
        created_by=actor.label,
    )
    check = engine.ToolCheck(
        loaded, key=session_key(actor.organisation.pk), rulebook=record, settings=None
    )
    session_keep(session, check.new_history(str(session.public_id)))
    session.save()
    return session


# Who each session is, per process: its organisation and public id to its primary key and agent.
# None of these ever changes for a session, so a check names its session without a statement; a
# session deleted since is found missing by the check's own read (`_read_for_check`).
_NAMED_SIZE = 20_000
_named: OrderedDict[tuple[int, str], tuple[int, str]] = OrderedDict()


def session_named(*, actor: Actor, public_id: Any) -> GuardSession:
    """The session of the actor's organisation with this public id, holding only its identity
    (primary key, organisation, public id, agent), or `Http404`."""
    from django.db import connection

    try:
        public = uuid.UUID(str(public_id))
    except ValueError as exc:
        raise Http404("not found") from exc
    key = (actor.organisation.pk, str(public))
    with _checks_lock:
        found = _named.get(key)
    if found is None:
        found = (
            GuardSession.objects.filter(organisation=actor.organisation, public_id=public)
            .values_list("pk", "agent")
            .first()
        )
        if found is None:
            raise Http404("not found")
        _remember(_named, key, tuple(found), _NAMED_SIZE)
    return GuardSession.from_db(
        connection.alias,
        ["id", "organisation_id", "public_id", "agent"],
        [found[0], key[0], public, found[1]],
    )


def _forget_named(organisation_id: int, public_id: Any) -> None:
    with _checks_lock:
        _named.pop((organisation_id, str(public_id)), None)


def session_run_ids(raw: Any) -> dict[str, str]:
    """A call's framework run and thread ids (`run: {run_id, thread_id}`), checked: bounded
    printable strings; `ValidationError` naming `run.<field>`."""
    try:
        return runtime.framework_ids(raw)
    except runtime.FrameworkIdsInvalid as exc:
        raise ValidationError({path: [why] for path, why in exc.errors.items()}) from exc


def call_agent(session: GuardSession, raw: Any) -> str:
    """The agent making a call: the session's, or another agent of its catalogue where the
    session holds one conversation across agents (a handoff continues its signed history). The
    check refuses an agent the catalogue does not have (`agent_required`)."""
    if raw is None or raw == "":
        return session.agent
    if not isinstance(raw, str) or len(raw) > 128 or not raw.isprintable():
        raise ValidationError({"agent": ["the name of an agent of the session's catalogue"]})
    return raw


def _call(session: GuardSession, data: dict[str, Any]) -> dict[str, Any]:
    call = {
        "tool": data.get("tool"),
        "agent": call_agent(session, data.get("agent")),
        "arguments": data.get("arguments", {}),
    }
    for name in ("origins", "labels", "compensation_of", "plan", "plan_token", "plan_step"):
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
    as already read with the session (`_read_for_check`), else they are read here.
    """
    tool = str(call.get("tool") or "")
    if flags is None:
        flags = (
            controls.call_flags(
                GuardSession.objects.filter(pk=session.pk),
                organisation_id=actor.organisation.pk,
                agent=str(call.get("agent") or session.agent),
                tool=tool,
                session=str(session.public_id),
                also=(session.agent,),
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


def check_options(data: dict[str, Any]) -> dict[str, Any]:
    """What a check takes beside the call (`checks`, `usage`, `cost`), from a request body."""
    return {
        "checks": _checks(data.get("checks")),
        "usage": data.get("usage"),
        "cost": data.get("cost"),
    }


#: What a check reads of its session: every field, or all but the catalogue and the rulebook once
#: a tool check is built from them here (they never change for a session).
_SESSION_FIELDS = tuple(field.name for field in GuardSession._meta.concrete_fields)
_SESSION_ROWS = {
    True: ModelRows(GuardSession, _SESSION_FIELDS),
    False: ModelRows(
        GuardSession, tuple(n for n in _SESSION_FIELDS if n not in ("catalogue", "rulebook"))
    ),
}
#: The organisation's settings, read with the session (their primary key first: None when the
#: organisation has no settings row).
_SETTINGS_ROW = ModelRows(
    OrganisationSettings, tuple(field.name for field in OrganisationSettings._meta.concrete_fields)
)


@functools.cache
def _check_sql(vendor: str, whole: bool, held: int, lock: bool) -> str:
    """The check's one read, written out: the session (locked with `lock`), its organisation's
    settings, and whether the call's tool is switched off and the session held (`console.controls`'s
    rule)."""
    from django.db import connection

    settings = OrganisationSettings._meta.db_table
    return (
        f"SELECT {_SESSION_ROWS[whole].columns(connection, 's')}, "
        f"{_SETTINGS_ROW.columns(connection, 'o')}, "
        f"{controls.switched_sql('w')}, {controls.held_sql('h', held)} "
        f"FROM {GuardSession._meta.db_table} s "
        f"LEFT JOIN {settings} o ON o.organisation_id = s.organisation_id "
        f"WHERE s.id = %s AND s.organisation_id = %s" + (" FOR UPDATE OF s" if lock else "")
    )


def _read_for_check(
    actor: Actor, session: GuardSession, call: dict[str, Any], *, whole: bool, lock: bool = True
) -> tuple[GuardSession, OrganisationSettings | None, tuple[bool, bool]]:
    """The session (locked, unless `lock` is False), its organisation's settings and the call's
    switch and hold, in one statement; `Http404` for a session deleted since it was named."""
    from django.db import connection

    held = controls.held_agents(call["agent"], session.agent)
    organisation_id = actor.organisation.pk
    sql = _check_sql(
        connection.vendor, whole, len(held), lock and connection.features.has_select_for_update_of
    )
    params = [
        *controls.switched_params(organisation_id, call["agent"], str(call.get("tool") or "")),
        *controls.held_params(organisation_id, held, str(session.public_id)),
        session.pk,
        organisation_id,
    ]
    with statements.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        _forget_named(organisation_id, session.public_id)
        raise Http404("not found")
    rows = _SESSION_ROWS[whole]
    at = len(rows)
    locked = rows.instance(row[:at], connection)
    locked.organisation = actor.organisation
    settings_row = row[at : at + len(_SETTINGS_ROW)]
    settings = None if settings_row[0] is None else _SETTINGS_ROW.instance(settings_row, connection)
    return locked, settings, (bool(row[-2]), bool(row[-1]))


@decision_span("toolcheck")
def session_check(*, actor: Actor, session: GuardSession, data: dict[str, Any]) -> dict[str, Any]:
    """Decide one call in the session; the decision is recorded as an event.

    Served on PostgreSQL outside any transaction, a call with no token is decided on one read in
    autocommit (the session not locked: a check writes nothing of it) and its event is written by
    the process's event writer with the concurrent decisions' (`console.eventwriter`, group
    commit); the answer is returned only once that has committed. A call the check would put to
    a person is decided again in a transaction with the session locked, so that the same call
    asked twice at once files one approval request. Everywhere else (a token, a caller's
    transaction, SQLite, group commit off) the check is one transaction with the session locked.
    On a kept connection, the first statement stands for Django's health check
    (`console.statements.unchecked`)."""
    from console import eventwriter

    def decide() -> dict[str, Any]:
        with _checks_lock:
            counted = (str(session.public_id), str(data.get("tool") or "")) in _counted_calls
        if not data.get("token") and not counted and eventwriter.writer() is not None:
            try:
                return _session_check(actor=actor, session=session, data=data, group=True)
            except _ToAsk:
                pass
        with transaction.atomic():
            return _session_check(actor=actor, session=session, data=data)

    return unchecked(decide)


class _ToAsk(Exception):  # noqa: N818 - a signal, not an error
    """A grouped check found a call to put to a person, or a write to allow that counts as in
    flight until it is recorded: it is decided again, locked."""


# The calls (session, tool) found to count the writes in flight, per process: such a call is
# decided with its session locked from the start (a session's catalogue never changes).
_counted_calls: OrderedDict[tuple[str, str], bool] = OrderedDict()


def _in_flight_limits(
    actor: Actor,
    session: GuardSession,
    check: engine.ToolCheck,
    known: Any,
    call: dict[str, Any],
    result: dict[str, Any],
    *,
    cost: Any,
) -> dict[str, Any]:
    """An allowed write of a tool with an `at_most`, a `spend` over the run or a `cap_cost`,
    decided with the session locked: refused as the check would if the writes in flight
    (`guard.running`) had run, else kept in flight (`CheckedWrite`) until `/record` reports it or
    the session's token lifetime passes. A re-check of the same call at the same point of the
    history (a retry whose answer was lost) does not count itself for a tool marked `idempotent`,
    and is kept once; for any other tool, each allowed check counts, as the host may run each."""
    arguments = call.get("arguments")
    if not isinstance(arguments, dict):
        return result
    contents = [entry.get("content") or {} for entry in (session.history or {}).get("entries", [])]
    key = intent_key(
        organisation=str(actor.organisation.pk),
        session=str(session.public_id),
        tool=known.name,
        arguments=arguments,
        step=intent_step(contents, known.name, arguments),
        compensation_of=call.get("compensation_of"),
    )
    now = timezone.now()
    flying = running.in_flight(session, now=now)
    retried = known.idempotent and any(entry.key == key for entry in flying)
    if retried:
        flying = [entry for entry in flying if entry.key != key]
    if flying:
        history = session_history(check, session)
        result = running.limits_with_running(check, known, call, history, result, flying, cost=cost)
    if result["decision"] == "allow" and not retried:
        CheckedWrite.objects.create(
            session=session,
            tool=known.name,
            arguments=redact(arguments, secret_keys=known.secret),
            digest=tokens.digest(arguments),
            intent=key,
            created_at=now,
            expires_at=now + dt.timedelta(seconds=check.settings.token_ttl),
        )
    return result


def _reported(session: GuardSession, known: Any, call: dict[str, Any]) -> None:
    """A call recorded: the oldest write `/check` allowed with these arguments is no longer in
    flight (and the session's expired ones are let go), in one statement."""
    arguments = call.get("arguments")
    if not running.counts_running(known, call) or not isinstance(arguments, dict):
        return
    now = timezone.now()
    oldest = CheckedWrite.objects.filter(
        session=session, tool=known.name, digest=tokens.digest(arguments), expires_at__gt=now
    ).order_by("created_at", "pk")
    CheckedWrite.objects.filter(
        Q(pk__in=oldest.values("pk")[:1]) | Q(expires_at__lte=now), session=session
    ).delete()


def _session_check(
    *, actor: Actor, session: GuardSession, data: dict[str, Any], group: bool = False
) -> dict[str, Any]:
    """The check; `group`: decided unlocked, its event written through the event writer, and
    `_ToAsk` raised (nothing written) for a call to put to a person."""
    require(actor, "guard.check")
    call = _call(session, data)
    run = session_run_ids(data.get("run"))
    # One statement reads the session (locked, unless grouped), its organisation's settings, and
    # the switch and hold that apply to this call; the catalogue and rulebook only when no tool
    # check is built from them yet (with the settings last seen for the organisation; if those
    # changed, the deferred fields are read once more).
    built = _is_built(
        str(session.public_id), actor.organisation.pk, _last_settings.get(actor.organisation.pk)
    )
    session, organisation_settings, flags = _read_for_check(
        actor, session, call, whole=not built, lock=not group
    )
    settings = _settings_of(organisation_settings)
    _last_settings[actor.organisation.pk] = settings
    check = _tool_check(session, settings=settings)
    try:
        decision = session_decide(
            session,
            call,
            settings=settings,
            context=data.get("context"),
            token=data.get("token"),
            **check_options(data),
        )
    except engine.UnknownCheck as exc:
        raise ValidationError({"checks": [str(exc)]}) from exc
    result = _controls(
        actor,
        session,
        check,
        call,
        decision.to_dict(),
        flags=flags,
    )
    known = check.catalogue.tools.get(str(call.get("tool") or ""))
    if known is not None and running.counts_running(known, call):
        _remember(_counted_calls, (str(session.public_id), known.name), True, _NAMED_SIZE)
        if result["decision"] == "allow":
            if group:
                raise _ToAsk
            result = _in_flight_limits(
                actor, session, check, known, call, result, cost=data.get("cost")
            )
    if run:
        result = {**result, "detail": {**dict(result.get("detail") or {}), "run": run}}
    if result["decision"] == "confirm" and not data.get("token"):
        if group:
            raise _ToAsk
        from guard.approvals import approval_request_create

        request = approval_request_create(
            actor=actor,
            session=session,
            call=call,
            decision=result,
            requested_for=str(data.get("user") or ""),
        )
        result["approval"] = str(request.public_id)
    event = {
        "source": "toolcheck",
        "decision": result["decision"],
        "session": str(session.public_id),
        "agent": call["agent"],
        "tool": str(call.get("tool") or ""),
        "stage": "tool_call",
        "reasons": list(result["reasons"]),
        "rule": result.get("rule") or "",
        "detail": {"call": call, "detail": result.get("detail", {})},
        "secret_keys": _secret(check, call),
        "run_id": run.get("run_id", ""),
        "thread_id": run.get("thread_id", ""),
    }
    if group:
        from console import eventwriter

        eventwriter.record(actor.organisation, event)
    else:
        event_record(organisation=actor.organisation, **event)
    return result


@transaction.atomic
def session_record(*, actor: Actor, session: GuardSession, data: dict[str, Any]) -> dict[str, Any]:
    """Append a call that ran, with its result, to the session's signed history."""
    require(actor, "guard.check")
    session = GuardSession.objects.select_for_update().get(pk=session.pk)
    check = _tool_check(session)
    call = _call(session, data)
    if check.catalogue.agents and call["agent"] not in check.catalogue.agents:
        raise ValidationError({"agent": [f"`{call['agent']}` is not an agent of the catalogue"]})
    try:
        history = session_history(check, session)
        entry = check.record(history, call, data.get("result"), cost=data.get("cost"))
    except (engine.GuardError, engine.MalformedCall) as exc:
        raise ValidationError({"call": [str(exc)]}) from exc
    session.save(update_fields=[*session_keep(session, history), "updated_at"])
    known = check.catalogue.tools.get(str(call.get("tool") or ""))
    if known is not None:
        _reported(session, known, call)
    return {"index": len(history) - 1, "mac": getattr(entry, "mac", None)}


@transaction.atomic
def session_read(*, actor: Actor, session: GuardSession, turn: str) -> dict[str, Any]:
    """Keep the person's turn: the checks of what was said read the latest one."""
    require(actor, "guard.check")
    if not isinstance(turn, str) or not turn.strip():
        raise ValidationError({"turn": ["the person's turn, as text"]})
    session = GuardSession.objects.select_for_update().get(pk=session.pk)
    session.turns = [*session.turns, turn][-50:]
    # A turn of the person begins a run: a refusal from now on undoes only what runs from now on.
    session.run_from = len((session.history or {}).get("entries", []))
    session.save(update_fields=["turns", "run_from", "updated_at"])
    return {"turns": len(session.turns)}


def session_undo_plan(*, actor: Actor, session: GuardSession) -> dict[str, Any]:
    """The undo of the current run's writes, last first, for the agent's process to carry out:
    each `compensate` step is then sent through `execute` with its `compensation_of`, so the tool
    check verifies it as the undo of that step, and it runs once."""
    require(actor, "guard.check")
    session = GuardSession.objects.get(pk=session.pk)
    check = _tool_check(session)
    try:
        history = session_history(check, session)
    except engine.GuardError as exc:
        raise ValidationError({"history": [str(exc)]}) from exc
    entries = [entry.content for entry in history]
    writes = [
        index
        for index in range(session.run_from, len(entries))
        if entries[index].get("compensation_of") is None
        and getattr(check.catalogue.tools.get(str(entries[index].get("tool"))), "kind", "write")
        != "read"
    ]
    undone = [index for index in range(len(history)) if history.undone_by(index) is not None]
    steps = undo_plan(check.catalogue, entries, writes, undone=undone)
    return {
        "steps": [
            {
                "index": step.index,
                "tool": step.tool,
                "status": step.status,
                # The agent whose write it undoes (one session may hold several agents' calls).
                "agent": str(entries[step.index].get("agent") or session.agent),
                **(
                    {"compensation": step.compensation, "arguments": dict(step.arguments)}
                    if step.status == "compensate"
                    else {}
                ),
                **({"missing": list(step.missing)} if step.missing else {}),
            }
            for step in steps
        ]
    }
