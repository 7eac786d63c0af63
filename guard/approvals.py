"""Approvals: a `confirm` becomes a request people answer; approving signs a token for that call.

A request is answered once: the first approve or deny wins under a row lock, so a second click
(by anyone) changes nothing. A request past its time expires, and every answer writes an audit row
and an event in its transaction.

Nobody answers a call they asked for. A request remembers who asked: the signed-in person, or the
key and the person who owns it; none of them may answer it, nor may the person the call was made
for. Answering is a person's act: a signed-in approver or admin answers, and a key answers only
when an admin made it an approving key (`may_approve`) and its owner is, at the moment of the
answer, an approver or admin of the organisation.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from console.access import CAPABILITIES, Actor, require
from console.models import Membership, OrganisationSettings
from console.services import audit_record, event_record
from guard.engine.check import SECRET as SECRET_SHOWN
from guard.models import ApprovalRequest, GuardSession


class AlreadyAnswered(ValidationError):
    """The request was answered (or expired) before this answer."""


def _timeout(organisation_id: int) -> dt.timedelta:
    minutes = (
        OrganisationSettings.objects.filter(organisation_id=organisation_id)
        .values_list("approval_timeout_minutes", flat=True)
        .first()
    )
    return dt.timedelta(minutes=minutes or 15)


def _asked_by(actor: Actor) -> dict[str, Any]:
    """Who asked, as the request remembers it: the person, or the key and the person owning it."""
    return {
        "requested_by": actor.label,
        "requested_by_id": actor.user_id,
        "requested_by_key_id": actor.api_key_id,
        "requested_by_owner_id": actor.owner_id,
    }


def approval_request_create(
    *,
    actor: Actor,
    session: GuardSession,
    call: dict[str, Any],
    decision: dict[str, Any],
    requested_for: str = "",
) -> ApprovalRequest:
    """Put a confirmed call in the approvers' queue (inside the check's transaction).

    The same call asked again at the same point of the session's history, while its request is
    open or approved and unspent, is answered with that request: a framework that re-runs its step
    on resume (LangGraph, in this process or in another one) files no second request, and a yes
    already given is the one that counts."""
    history = session.history if isinstance(session.history, dict) else {}
    asked = _asked_already(session, call, len(history.get("entries", [])))
    if asked is not None:
        return asked
    return ApprovalRequest.objects.create(
        organisation=actor.organisation,
        session=session,
        agent=str(call.get("agent") or session.agent),
        tool=str(call.get("tool", "")),
        call=call,
        origins=_origins(call, decision),
        reasons=list(decision.get("reasons", [])),
        rule=decision.get("rule") or "",
        detail=dict(decision.get("detail") or {}),
        history_at=len(history.get("entries", [])),
        **_asked_by(actor),
        requested_for=requested_for[:150],
        expires_at=timezone.now() + _timeout(actor.organisation.pk),
    )


def _asked_already(
    session: GuardSession, call: dict[str, Any], history_at: int
) -> ApprovalRequest | None:
    """The open (or approved, token unspent) request for exactly this call at this point."""
    found = ApprovalRequest.objects.filter(
        session=session,
        tool=str(call.get("tool", "")),
        history_at=history_at,
        status__in=(ApprovalRequest.Status.PENDING, ApprovalRequest.Status.APPROVED),
    ).order_by("created_at")
    for request in found[:20]:
        if request.call != call:
            continue
        if request.is_open or (
            request.status == ApprovalRequest.Status.APPROVED
            and request.token
            and request.token_spent_at is None
        ):
            return request
    return None


def _origins(call: dict[str, Any], decision: dict[str, Any]) -> dict[str, str]:
    """Each argument's origin as the runtime derived it (else as the call claimed it)."""
    derived = (decision.get("detail") or {}).get("origins")
    if isinstance(derived, dict) and derived:
        return {
            str(name): str(item.get("origin", "model"))
            for name, item in derived.items()
            if isinstance(item, dict)
        }
    return dict(call.get("origins") or {})


def firewall_request_create(
    *, actor: Actor, call: dict[str, Any], decision: dict[str, Any]
) -> ApprovalRequest:
    """Put a call the firewall holds for a person (`require_approval`) in the approvers' queue."""
    return ApprovalRequest.objects.create(
        organisation=actor.organisation,
        source="firewall",
        agent=str(call.get("agent", "")),
        tool=str(call.get("tool", "")),
        call=call,
        origins=dict(call.get("origins") or {}),
        reasons=list(decision.get("reasons", [])),
        rule=decision.get("rule") or "",
        detail={"policy": decision.get("policy")},
        **_asked_by(actor),
        requested_for=str(call.get("user", ""))[:150],
        expires_at=timezone.now() + _timeout(actor.organisation.pk),
    )


#: What a runtime deciding in the agent's process sends when it files a request.
RUNTIME_FIELDS = {
    "agent",
    "session",
    "call",
    "reasons",
    "origins",
    "history_at",
    "user",
    "secret",
}


def _runtime_request(data: Any) -> dict[str, Any]:
    """A runtime's request, checked; `ValidationError` naming each field that is wrong."""
    from firewall.engine.names import name_problem

    if not isinstance(data, dict):
        raise ValidationError({"non_field_errors": ["the body must be a JSON object"]})
    errors: dict[str, list[str]] = {
        name: ["not a field here"] for name in sorted(set(data) - RUNTIME_FIELDS)
    }
    agent, session, call = data.get("agent"), data.get("session"), data.get("call")
    if name_problem(agent) is not None:
        errors["agent"] = [f"the agent's name: {name_problem(agent)}"]
    if not isinstance(session, str) or not 0 < len(session) <= 128:
        errors["session"] = ["the session's id, 1 to 128 characters"]
    if not isinstance(call, dict):
        errors["call"] = ["the call as checked: {tool, agent, arguments}"]
    else:
        if not isinstance(call.get("tool"), str) or not 0 < len(call["tool"]) <= 200:
            errors["call.tool"] = ["the tool's name"]
        if not isinstance(call.get("arguments", {}), dict):
            errors["call.arguments"] = ["an object"]
        if call.get("agent") not in (None, agent):
            errors["call.agent"] = ["the request's agent"]
    reasons = data.get("reasons", [])
    if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
        errors["reasons"] = ["a list of reasons"]
    origins = data.get("origins", {})
    if not isinstance(origins, dict) or not all(isinstance(o, str) for o in origins.values()):
        errors["origins"] = ["each argument's origin, as text"]
    at = data.get("history_at")
    if isinstance(at, bool) or not isinstance(at, int) or at < 0:
        errors["history_at"] = ["the length of the session's history when the call was checked"]
    if not isinstance(data.get("user", ""), str):
        errors["user"] = ["the person the call is for"]
    secret = data.get("secret", [])
    if not isinstance(secret, list) or not all(
        isinstance(name, str) and len(name) <= 200 for name in secret
    ):
        errors["secret"] = ["the names of the arguments the catalogue marks secret"]
    if errors:
        raise ValidationError(errors)
    return data


@transaction.atomic
def runtime_request_create(*, actor: Actor, data: Any) -> ApprovalRequest:
    """Put a call that a runtime deciding in the agent's process holds for a person in the queue.

    The console keeps no history of such a session: the request names the session and the point
    of its history the call was checked at, and approving it signs a grant for exactly that
    (`approval_grant`), which the runtime turns into its own token.
    """
    require(actor, "guard.check")
    data = _runtime_request(data)
    call = {**data["call"], "agent": data["agent"]}
    # The arguments the runtime's catalogue marks secret are shown masked (`shown_arguments`),
    # as the check's own view shows them for a request the console's check filed.
    masked = {
        name: {"value": SECRET_SHOWN}
        for name in data.get("secret") or ()
        if name in (call.get("arguments") or {})
    }
    return ApprovalRequest.objects.create(
        organisation=actor.organisation,
        source="runtime",
        agent=data["agent"],
        tool=call["tool"],
        call=call,
        origins=dict(data.get("origins") or {}),
        reasons=list(data.get("reasons") or []),
        detail={"session": data["session"], **({"arguments": masked} if masked else {})},
        history_at=data["history_at"],
        **_asked_by(actor),
        requested_for=str(data.get("user") or "")[:150],
        expires_at=timezone.now() + _timeout(actor.organisation.pk),
    )


def runtime_grant(request: ApprovalRequest) -> str:
    """The grant of an approved runtime request, signed with the organisation's bundle key: the
    call's digest, the session and the point of its history, the request and its expiry."""
    from console.bundles import signing_key
    from stalwart_agents import bundle

    return bundle.sign_grant(
        signing_key(request.organisation_id),
        {
            "approval": str(request.public_id),
            "organisation": request.organisation.slug,
            "agent": request.agent,
            "session": str((request.detail or {}).get("session", "")),
            "call": bundle.call_digest(request.call),
            "history_at": request.history_at,
            "expires_at": request.expires_at.timestamp(),
        },
    )


def shown_arguments(request: ApprovalRequest) -> dict[str, Any]:
    """The call's arguments as people see them: the check's view hides those marked secret, and
    every value (from the check's view or the call) has its credentials redacted, so an approver
    sees the amount and the order and sees a key only as `[redacted:<shape>]`."""
    from console.redaction import redact

    shown = (request.detail or {}).get("arguments") or {}
    return {
        name: redact({name: shown[name]["value"]})[name]
        if isinstance(shown.get(name), dict) and "value" in shown[name]
        else redact({name: value})[name]
        for name, value in (request.call.get("arguments") or {}).items()
    }


def catalogue_entry(session: GuardSession | None, tool: str) -> dict[str, Any] | None:
    """The session's catalogue entry of `tool` (its description and parameters), if it has one."""
    catalogue = getattr(session, "catalogue", None)
    tools = catalogue.get("tools") if isinstance(catalogue, dict) else None
    if isinstance(tools, dict):  # a catalogue keyed by tool name
        entry = tools.get(tool)
        return entry if isinstance(entry, dict) else None
    for entry in tools if isinstance(tools, list) else ():
        if isinstance(entry, dict) and entry.get("name") == tool:
            return entry
    return None


def question_language(request: ApprovalRequest) -> str:
    """The language the person is asked in: the session's, else the organisation's."""
    chosen = ((request.session.settings or {}) if request.session_id else {}).get("language")
    if chosen in ("en", "pt-BR"):
        return chosen
    found = (
        OrganisationSettings.objects.filter(organisation_id=request.organisation_id)
        .values_list("language", flat=True)
        .first()
    )
    return found or "en"


def shown_question(request: ApprovalRequest, language: str | None = None) -> str:
    """The confirm question a person answers, from the tool's description and its parameters'
    titles in the catalogue, over the arguments as shown (secrets hidden)."""
    from router.engine.phrases import confirm_question

    return confirm_question(
        language or question_language(request),
        request.tool,
        shown_arguments(request),
        entry=catalogue_entry(request.session if request.session_id else None, request.tool),
    )


def _username(user_id: int | None) -> str | None:
    if user_id is None:
        return None
    return get_user_model().objects.filter(pk=user_id).values_list("username", flat=True).first()


def shown_history(request: ApprovalRequest, *, last: int = 5) -> list[dict[str, Any]]:
    """The session's last calls as people see them beside a request, redacted like its arguments."""
    from console.redaction import redact

    history = request.session.history if request.session else {}
    entries = (history.get("entries", []) if isinstance(history, dict) else [])[-last:]
    return [
        {
            "index": entry.get("index"),
            "tool": entry.get("content", {}).get("tool"),
            "arguments": redact(entry.get("content", {}).get("arguments")),
        }
        for entry in entries
    ]


def asked_by(actor: Actor, request: ApprovalRequest) -> bool:
    """Whether the actor, or the person behind it, asked for the call or is the one it is for."""
    asked_people = {request.requested_by_id, request.requested_by_owner_id} - {None}
    if actor.person_id is not None and actor.person_id in asked_people:
        return True
    if actor.api_key_id is not None and actor.api_key_id == request.requested_by_key_id:
        return True
    username = _username(actor.person_id)
    return bool(request.requested_for) and username == request.requested_for


def _may_answer(actor: Actor) -> None:
    """A signed-in approver or admin answers; a key only when it was made to, for its owner."""
    require(actor, "approvals.answer")
    if actor.api_key_id is None:
        return
    if not actor.may_approve:
        raise PermissionDenied(
            "an API key answers a confirm prompt only when an admin made it an approving key"
        )
    owner_is_approver = Membership.objects.filter(
        organisation=actor.organisation,
        user_id=actor.owner_id,
        role__in=CAPABILITIES["approvals.answer"],
    ).exists()
    if actor.owner_id is None or not owner_is_approver:
        raise PermissionDenied(
            "this approving key's owner is no longer an approver or admin of the organisation"
        )


def _locked(actor: Actor, request: ApprovalRequest) -> ApprovalRequest:
    _may_answer(actor)
    request = ApprovalRequest.objects.select_for_update().get(pk=request.pk)
    if asked_by(actor, request):
        raise PermissionDenied("nobody approves or denies a call they asked for")
    if request.status == ApprovalRequest.Status.EXPIRED:
        raise AlreadyAnswered("this request expired before it was answered")
    if request.status != ApprovalRequest.Status.PENDING:
        raise AlreadyAnswered(f"this request was already {request.status}")
    return request


def _expire_if_due(request: ApprovalRequest) -> None:
    """Mark the request expired when its time is up (committed even though the answer fails)."""
    ApprovalRequest.objects.filter(
        pk=request.pk, status=ApprovalRequest.Status.PENDING, expires_at__lte=timezone.now()
    ).update(status=ApprovalRequest.Status.EXPIRED)


def _answered(actor: Actor, request: ApprovalRequest, status: str, decision: str) -> None:
    request.status = status
    request.answered_by = actor.label
    request.answered_at = timezone.now()
    request.save(update_fields=["status", "answered_by", "answered_at", "token"])
    changes = {
        "status": {"old": "pending", "new": status},
        "tool": {"old": None, "new": request.tool},
    }
    if request.token:
        changes["token"] = {"redacted": True}
    audit_record(
        actor=actor,
        action=f"approval.{status}",
        object_type="approval_request",
        object_id=request.pk,
        changes=changes,
    )
    event_record(
        organisation=actor.organisation,
        source="approval",
        decision=decision,
        session=str(request.session.public_id)
        if request.session
        else str((request.detail or {}).get("session", "")),
        agent=request.agent,
        tool=request.tool,
        stage="tool_call",
        reasons=["confirmed" if status == "approved" else "confirmation_denied"],
        rule=request.rule,
        detail={"approval": str(request.public_id), "by": actor.label},
    )


def approval_grant(*, actor: Actor, request: ApprovalRequest) -> ApprovalRequest:
    """Approve: sign the token that covers exactly the call, at the session's current point."""
    from guard.services import _tool_check

    _expire_if_due(request)
    with transaction.atomic():
        request = _locked(actor, request)
        if request.source == "runtime":
            request.token = runtime_grant(request)
        elif request.source == "firewall":
            from firewall.approvals import issue_token

            request.token = issue_token(
                request.organisation_id,
                request.call,
                expires=request.expires_at,
                approval=str(request.public_id),
            )
        else:
            session = GuardSession.objects.select_for_update().get(pk=request.session_id)
            request.token = _tool_check(session).issue_token(request.call, session=session.history)
        _answered(actor, request, ApprovalRequest.Status.APPROVED, "allow")
    return request


def approval_deny(*, actor: Actor, request: ApprovalRequest) -> ApprovalRequest:
    """Deny: nothing runs, and the denial counts as `confirmation_denied`."""
    _expire_if_due(request)
    with transaction.atomic():
        request = _locked(actor, request)
        _answered(actor, request, ApprovalRequest.Status.DENIED, "refuse")
        from guard.counters import count

        count(actor.organisation, request.tool, "confirmation_denied")
    return request


def open_requests(*, organisation) -> QuerySet[ApprovalRequest]:  # noqa: ANN001
    """The open requests, oldest first, as a query (to page through); requests past their time
    are marked expired on the way."""
    now = timezone.now()
    ApprovalRequest.objects.filter(
        organisation=organisation, status="pending", expires_at__lte=now
    ).update(status="expired")
    return (
        ApprovalRequest.objects.filter(organisation=organisation, status="pending")
        .select_related("session")
        .order_by("created_at", "id")
    )
