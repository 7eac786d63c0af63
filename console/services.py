"""Writes of the console's own app: organisations, people, API keys, settings, audit rows and events.

Every service is keyword-only and atomic; every change writes its audit row in the same transaction.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import hmac
import ipaddress
import json
import logging
import secrets
import uuid
import zlib
from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured, PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from console import audit, statements
from console.access import CAPABILITIES, Actor, require
from console.models import (
    SAID_FIELDS,
    SHARDS,
    ApiKey,
    Event,
    Invitation,
    Membership,
    Organisation,
    OrganisationSettings,
    Role,
)
from console.redaction import redact

SETTINGS_FIELDS = (
    "language",
    "on_unread",
    "taint_policy",
    *SAID_FIELDS,
    "licence_valid_until",
    "licence_on_lapse",
    "compiled_records_only",
    "notify_url",
    "approval_timeout_minutes",
)
# Settings only an admin may change: the licence, where alerts are sent, and the modes of the checks
# of what was said (turning one off or down lets more calls through).
ADMIN_FIELDS = frozenset({"licence_valid_until", "licence_on_lapse", "notify_url", *SAID_FIELDS})
ADMIN_ONLY_MESSAGE = (
    "only an admin can change the licence, the alert webhook and the checks of what was said"
)
API_KEY_PREFIX = "stw_"
log = logging.getLogger(__name__)
# One line per recorded decision, with its rule and reasons (JSON with STALWART_LOG_FORMAT=json).
decisions_log = logging.getLogger("stalwart.decisions")


def audit_record(
    *, actor: Actor, action: str, object_type: str, object_id: Any, changes: dict[str, Any]
) -> None:
    audit.append(
        organisation=actor.organisation,
        actor_label=actor.label,
        actor_id=actor.user_id,
        action=action,
        object_type=object_type,
        object_id=str(object_id),
        changes=changes,
    )


@transaction.atomic
def organisation_create(*, name: str, slug: str) -> Organisation:
    organisation = Organisation.objects.create(name=name, slug=slug)
    OrganisationSettings.objects.create(organisation=organisation)
    audit.anchor_new_organisation(organisation)
    return organisation


def settings_get(*, organisation: Organisation) -> OrganisationSettings:
    obj, _ = OrganisationSettings.objects.get_or_create(organisation=organisation)
    return obj


LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def _loopback(host: str) -> bool:
    """Whether a URL's host is this machine: `localhost`, or a loopback address as written
    (`127.0.0.2`, `::1`); a name that only begins like one (`127.attacker.example`) is not."""
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def webhook_url_problem(url: str) -> str | None:
    """Why an alert webhook URL is refused, or None: alerts go out over HTTPS only.

    Plain `http://` is accepted for a loopback receiver alone (a relay on the same machine), since
    the body and its signature would otherwise cross the network in clear.
    """
    if not url:
        return None
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme == "https" and host:
        return None
    if parts.scheme == "http" and _loopback(host):
        return None
    if parts.scheme == "http":
        return "the webhook must use https:// (plain http is accepted only for a loopback address)"
    return f"the webhook must be an https:// URL, not `{url}`"


def _settings_values(obj: OrganisationSettings) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in SETTINGS_FIELDS}


@transaction.atomic
def settings_update(*, actor: Actor, data: dict[str, Any]) -> OrganisationSettings:
    """Apply already-parsed values to the actor's organisation settings and audit what changed.

    Raises PermissionDenied when the role may not write settings, or may not change the licence,
    and ValidationError (naming fields) when a value is not acceptable; nothing is saved then.
    """
    require(actor, "settings.write")
    unknown = sorted(set(data) - set(SETTINGS_FIELDS))
    if unknown:
        raise ValidationError({name: "not a setting" for name in unknown})
    obj = OrganisationSettings.objects.select_for_update().get(organisation=actor.organisation)
    before = _settings_values(obj)
    for name, value in data.items():
        setattr(obj, name, value)
    after = _settings_values(obj)
    changed = {name for name in SETTINGS_FIELDS if before[name] != after[name]}
    if changed & ADMIN_FIELDS and not actor.can("licence.write"):
        names = ", ".join(sorted(changed & ADMIN_FIELDS))
        raise PermissionDenied(f"{ADMIN_ONLY_MESSAGE}: {names}")
    if "notify_url" in changed:
        problem = webhook_url_problem(obj.notify_url)
        if problem:
            raise ValidationError({"notify_url": problem})
    obj.full_clean(exclude=["notify_secret"])
    if not changed:
        return obj
    obj.save()
    audit_record(
        actor=actor,
        action="settings.update",
        object_type="settings",
        object_id=actor.organisation.pk,
        changes=audit.field_changes(before, after),
    )
    return obj


def _hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


#: The longest name a key may have (the column's width).
API_KEY_NAME_MAX = ApiKey._meta.get_field("name").max_length


@transaction.atomic
def api_key_create(
    *,
    actor: Actor,
    name: str,
    role: str,
    owner_id: int | None = None,
    may_approve: bool = False,
) -> tuple[ApiKey, str]:
    """Create a key and return it with its plain text, which is shown once and never stored.

    The key is owned by `owner_id` (a person of the organisation; the admin creating it by
    default): what the key asks for counts as asked by its owner too. An approving key
    (`may_approve`) must have a role that answers confirm prompts, and an owner who holds one.
    """
    require(actor, "api_keys.manage")
    name = name.strip() if isinstance(name, str) else ""
    errors = {}
    if not name:
        errors["name"] = "a key needs a name"
    elif len(name) > API_KEY_NAME_MAX:
        errors["name"] = f"a key's name must be at most {API_KEY_NAME_MAX} characters"
    elif not name.isprintable():
        # a line break or a NUL is no name: it would break the lines and headers it is shown in
        errors["name"] = "a key's name must not contain control characters"
    if role not in Role.values:
        errors["role"] = f"`{role}` is not a role"
    owner_id = owner_id if owner_id is not None else actor.person_id
    owner = (
        Membership.objects.filter(organisation=actor.organisation, user_id=owner_id)
        .select_related("user")
        .first()
    )
    if owner is None:
        errors["owner"] = "the owner must be a person of this organisation"
    answering = CAPABILITIES["approvals.answer"]
    if may_approve:
        if role in Role.values and role not in answering:
            errors["role"] = "an approving key acts as an approver or an admin"
        if owner is not None and owner.role not in answering:
            errors["owner"] = (
                f"`{owner.user.get_username()}` is not an approver or admin, "
                "so cannot own an approving key"
            )
    if errors:
        raise ValidationError(errors)
    prefix = secrets.token_hex(4)
    secret = secrets.token_urlsafe(32)
    plain = f"{API_KEY_PREFIX}{prefix}_{secret}"
    key = ApiKey.objects.create(
        organisation=actor.organisation,
        name=name,
        role=role,
        prefix=prefix,
        key_hash=_hash_key(plain),
        created_by_id=actor.user_id,
        owner_id=owner.user_id,
        may_approve=may_approve,
    )
    audit_record(
        actor=actor,
        action="api_key.create",
        object_type="api_key",
        object_id=key.pk,
        changes={
            "name": {"old": None, "new": name},
            "role": {"old": None, "new": role},
            "owner": {"old": None, "new": owner.user.get_username()},
            "may_approve": {"old": None, "new": may_approve},
            "key": dict(audit.REDACTED_CHANGE),
        },
    )
    return key, plain


@transaction.atomic
def api_key_revoke(*, actor: Actor, key: ApiKey) -> ApiKey:
    require(actor, "api_keys.manage")
    if key.organisation_id != actor.organisation.pk:
        raise PermissionDenied("not this organisation's key")
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        api_key_forget(key.prefix)
        audit_record(
            actor=actor,
            action="api_key.revoke",
            object_type="api_key",
            object_id=key.pk,
            changes={"revoked": {"old": False, "new": True}},
        )
    return key


def _key_entry(prefix: str) -> str:
    return f"stalwart:api-key:{prefix}"


def _key_revoked(prefix: str) -> str:
    return f"stalwart:api-key-revoked:{prefix}"


def _key_used(prefix: str) -> str:
    return f"stalwart:api-key-used:{prefix}"


def api_key_forget(prefix: str) -> None:
    """Drop a key from the authentication cache, so that its next request reads the database.

    A revocation marker is set as well, for as long as an entry could live: a request that read
    the key before the revocation committed cannot put it back into use by caching it after.
    The entry is dropped again once the transaction commits, for the same reason.
    """
    from django.conf import settings
    from django.core.cache import cache

    ttl = int(settings.STALWART_API_KEY_CACHE_SECONDS)
    if ttl <= 0:
        return
    cache.set(_key_revoked(prefix), 1, timeout=ttl)
    cache.delete(_key_entry(prefix))
    transaction.on_commit(lambda: cache.delete(_key_entry(prefix)))


def _key_prefix(plain: str) -> str:
    return plain[len(API_KEY_PREFIX) :].split("_", 1)[0]


def api_key_cache_keys(plain: str) -> list[str]:
    """The cache entries `api_key_authenticate` reads for `plain` (none while caching is off).

    The caller may read them in the same round trip as its own and pass them as `cached`.
    """
    from django.conf import settings

    if int(settings.STALWART_API_KEY_CACHE_SECONDS) <= 0 or not plain.startswith(API_KEY_PREFIX):
        return []
    prefix = _key_prefix(plain)
    return [_key_entry(prefix), _key_revoked(prefix)]


def _key_lookup(prefix: str, cached: dict[str, Any] | None) -> ApiKey | None:
    """The key of `prefix` with its organisation: from the cache, else from the database."""
    from django.conf import settings
    from django.core.cache import cache

    ttl = int(settings.STALWART_API_KEY_CACHE_SECONDS)
    if ttl <= 0:
        return ApiKey.objects.select_related("organisation").filter(prefix=prefix).first()
    entry, revoked = _key_entry(prefix), _key_revoked(prefix)
    found = cached if cached is not None else cache.get_many([entry, revoked])
    if revoked in found:
        return None
    key = found.get(entry)
    if isinstance(key, ApiKey):
        return key
    key = ApiKey.objects.select_related("organisation").filter(prefix=prefix).first()
    if key is not None and key.revoked_at is None:
        cache.set(entry, key, timeout=ttl)
    return key


# When this process last asked whether a key's use is due to be written, per key prefix: the
# shared cache decides among processes, and this spares it a round trip on every request.
_used_asked: dict[str, float] = {}


def _key_used_now(key: ApiKey) -> None:
    """Write when the key was last used, at most once per `STALWART_API_KEY_LAST_USED_SECONDS`."""
    import time

    from django.conf import settings
    from django.core.cache import cache

    every = int(settings.STALWART_API_KEY_LAST_USED_SECONDS)
    if every > 0:
        now = time.monotonic()
        if now - _used_asked.get(key.prefix, -every) < every:
            return
        if len(_used_asked) > 10_000:
            _used_asked.clear()
        _used_asked[key.prefix] = now
        if not cache.add(_key_used(key.prefix), 1, timeout=every):
            return
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now())


def api_key_authenticate(plain: str, *, cached: dict[str, Any] | None = None) -> ApiKey | None:
    """The active key whose hash matches `plain`, or None.

    The key row is read from the shared cache (Redis) for `STALWART_API_KEY_CACHE_SECONDS`; a
    revocation drops it there at once (`api_key_forget`), so a revoked key fails its next request.
    `cached` holds the entries of `api_key_cache_keys`, when the caller has read them already.
    """
    if not plain.startswith(API_KEY_PREFIX):
        return None
    prefix = _key_prefix(plain)
    key = _key_lookup(prefix, cached)
    if key is None or key.revoked_at is not None:
        return None
    if not hmac.compare_digest(key.key_hash, _hash_key(plain)):
        return None
    _key_used_now(key)
    return key


@transaction.atomic
def person_create(*, username: str, email: str = "") -> tuple[Any, str]:
    """Create an account with a one-time password (the operator's act: `manage.py person_create`).

    An account belongs to no organisation; an organisation's admin invites it, and it joins by
    accepting. Creating accounts is kept off the organisations' pages because a user name that is
    taken would tell another organisation's admin that the person exists.
    """
    username = username.strip()
    user_model = get_user_model()
    if not username:
        raise ValidationError({"username": "a person needs a user name"})
    if user_model.objects.filter(username=username).exists():
        raise ValidationError({"username": f"`{username}` is taken"})
    password = secrets.token_urlsafe(12)
    user = user_model.objects.create_user(username=username, email=email.strip(), password=password)
    return user, password


INVITATION_DAYS = 14


def _invitee(identifier: str):  # noqa: ANN202
    """The one account a user name, or else an e-mail address, names; None when none or several."""
    user_model = get_user_model()
    user = user_model.objects.filter(username=identifier).first()
    if user is None and "@" in identifier:
        matches = list(user_model.objects.filter(email__iexact=identifier)[:2])
        user = matches[0] if len(matches) == 1 else None
    return user


@transaction.atomic
def invitation_create(*, actor: Actor, identifier: str, role: str) -> Invitation:
    """Invite a person, named by user name or e-mail, to the actor's organisation with a role.

    The answer and the audit row are the same whether or not the name matches a person: the
    invitation keeps what was typed, and the account it reached (if any) is never shown to the
    organisation. Only the person themself sees it and makes the membership by accepting.
    """
    require(actor, "members.manage")
    identifier = identifier.strip()
    errors = {}
    if not identifier:
        errors["identifier"] = "name a person by user name or e-mail"
    if role not in Role.values:
        errors["role"] = f"`{role}` is not a role"
    if errors:
        raise ValidationError(errors)
    Invitation.objects.filter(
        organisation=actor.organisation,
        identifier=identifier,
        status=Invitation.Status.PENDING,
        expires_at__lte=timezone.now(),
    ).update(status=Invitation.Status.EXPIRED)
    user = _invitee(identifier)
    members = Membership.objects.filter(organisation=actor.organisation)
    # Saying so reveals nothing: the organisation's own people are on its members page.
    if user is not None and members.filter(user=user).exists():
        raise ValidationError({"identifier": f"`{identifier}` is already a member"})
    if Invitation.objects.filter(
        organisation=actor.organisation, identifier=identifier, status=Invitation.Status.PENDING
    ).exists():
        raise ValidationError({"identifier": f"`{identifier}` has an open invitation already"})
    invitation = Invitation.objects.create(
        organisation=actor.organisation,
        identifier=identifier,
        user=user,
        role=role,
        invited_by_id=actor.person_id,
        expires_at=timezone.now() + dt.timedelta(days=INVITATION_DAYS),
    )
    audit_record(
        actor=actor,
        action="invitation.create",
        object_type="invitation",
        object_id=invitation.pk,
        changes={
            "invitee": {"old": None, "new": identifier},
            "role": {"old": None, "new": role},
        },
    )
    return invitation


def invitations_for(*, user) -> list[Invitation]:  # noqa: ANN001
    """The open invitations a signed-in person has, newest first."""
    if not getattr(user, "pk", None):
        return []
    return list(
        Invitation.objects.filter(
            user=user, status=Invitation.Status.PENDING, expires_at__gt=timezone.now()
        ).select_related("organisation")
    )


def _invitation_locked(*, user, invitation_id: int) -> Invitation:  # noqa: ANN001
    """The person's own open invitation under a row lock; anyone else's does not exist."""
    from django.http import Http404

    invitation = (
        Invitation.objects.select_for_update()
        .filter(pk=invitation_id, user_id=getattr(user, "pk", None))
        .first()
    )
    if invitation is None or not invitation.is_open:
        raise Http404("no such invitation")
    return invitation


def _invitee_actor(invitation: Invitation, *, named: bool) -> Actor:
    """The invited person in the inviting organisation's audit rows: by name once they accepted,
    else only by what the admin typed (a decline tells the organisation no more than that)."""
    if named:
        return Actor(
            organisation=invitation.organisation,
            role=invitation.role,
            label=f"user:{invitation.user.get_username()}",
            user_id=invitation.user_id,
        )
    return Actor(
        organisation=invitation.organisation,
        role="",
        label=f"invitee:{invitation.identifier}",
    )


@transaction.atomic
def invitation_accept(*, user, invitation_id: int) -> Membership:  # noqa: ANN001
    """The invited person accepts: only now are they a member, with the invitation's role."""
    invitation = _invitation_locked(user=user, invitation_id=invitation_id)
    membership, _ = Membership.objects.get_or_create(
        user=user, organisation=invitation.organisation, defaults={"role": invitation.role}
    )
    invitation.status, invitation.answered_at = Invitation.Status.ACCEPTED, timezone.now()
    invitation.save(update_fields=["status", "answered_at"])
    actor = _invitee_actor(invitation, named=True)
    audit_record(
        actor=actor,
        action="invitation.accept",
        object_type="invitation",
        object_id=invitation.pk,
        changes={"status": {"old": "pending", "new": "accepted"}},
    )
    audit_record(
        actor=actor,
        action="membership.create",
        object_type="membership",
        object_id=membership.pk,
        changes={
            "person": {"old": None, "new": user.get_username()},
            "role": {"old": None, "new": membership.role},
        },
    )
    return membership


@transaction.atomic
def invitation_decline(*, user, invitation_id: int) -> None:  # noqa: ANN001
    """The invited person declines: no membership, and the organisation learns no more than that."""
    invitation = _invitation_locked(user=user, invitation_id=invitation_id)
    invitation.status, invitation.answered_at = Invitation.Status.DECLINED, timezone.now()
    invitation.save(update_fields=["status", "answered_at"])
    audit_record(
        actor=_invitee_actor(invitation, named=False),
        action="invitation.decline",
        object_type="invitation",
        object_id=invitation.pk,
        changes={"status": {"old": "pending", "new": "declined"}},
    )


@transaction.atomic
def invitation_cancel(*, actor: Actor, invitation: Invitation) -> None:
    """An admin withdraws an open invitation of their organisation."""
    require(actor, "members.manage")
    if invitation.organisation_id != actor.organisation.pk:
        raise PermissionDenied("not this organisation's invitation")
    updated = Invitation.objects.filter(pk=invitation.pk, status=Invitation.Status.PENDING).update(
        status=Invitation.Status.CANCELLED, answered_at=timezone.now()
    )
    if updated:
        audit_record(
            actor=actor,
            action="invitation.cancel",
            object_type="invitation",
            object_id=invitation.pk,
            changes={"status": {"old": "pending", "new": "cancelled"}},
        )


def _last_admin(membership: Membership) -> bool:
    return (
        membership.role == Role.ADMIN
        and Membership.objects.filter(organisation=membership.organisation, role=Role.ADMIN).count()
        == 1
    )


@transaction.atomic
def membership_set_role(*, actor: Actor, membership: Membership, role: str) -> Membership:
    require(actor, "members.manage")
    if role not in Role.values:
        raise ValidationError({"role": f"`{role}` is not a role"})
    if membership.role == role:
        return membership
    if _last_admin(membership):
        raise ValidationError({"role": "the organisation's last admin cannot be demoted"})
    old = membership.role
    membership.role = role
    membership.save(update_fields=["role"])
    audit_record(
        actor=actor,
        action="membership.update",
        object_type="membership",
        object_id=membership.pk,
        changes={"role": {"old": old, "new": role}},
    )
    return membership


@transaction.atomic
def membership_remove(*, actor: Actor, membership: Membership) -> None:
    require(actor, "members.manage")
    if _last_admin(membership):
        raise ValidationError({"role": "the organisation's last admin cannot be removed"})
    pk, username, role = membership.pk, membership.user.get_username(), membership.role
    membership.delete()
    audit_record(
        actor=actor,
        action="membership.delete",
        object_type="membership",
        object_id=pk,
        changes={"person": {"old": username, "new": None}, "role": {"old": role, "new": None}},
    )


def _event_row(
    *,
    organisation: Organisation,
    source: str,
    decision: str,
    session: str = "",
    agent: str = "",
    tool: str = "",
    stage: str = "",
    verdict: str = "",
    reasons: list[str] | None = None,
    rule: str | None = "",
    detail: dict[str, Any] | None = None,
    secret_keys: frozenset[str] = frozenset(),
    run_id: str = "",
    thread_id: str = "",
    at: dt.datetime | None = None,
    record_id: Any = None,
    match_state: str | None = None,
    match_note: str = "",
) -> Event:
    """The event as it is written: bounded, its detail redacted, in its session's shard;
    `run_id` and `thread_id` are the framework's (checked by the door that took them). Its
    `record_id` is the runtime's record's, else one of its own: the event writer finds by it a
    write whose commit was not answered (`console.eventwriter`)."""
    session, agent = session[:128], agent[:128]
    shard = zlib.crc32(f"{organisation.pk}:{agent}:{session}".encode()) % SHARDS
    extra: dict[str, Any] = {}
    if at is not None:
        extra["at"] = at
    if match_state is not None:
        extra["match_state"] = match_state
    return Event(
        organisation=organisation,
        source=source,
        decision=decision,
        session=session,
        agent=agent,
        tool=tool[:200],
        stage=stage[:32],
        verdict=verdict[:32],
        # a reason may name what the caller wrote (a malformed call's field path is its key)
        reasons=redact([str(r) for r in (reasons or [])]),
        rule=(rule or "")[:200],
        detail=redact(detail or {}, secret_keys=secret_keys),
        run_id=str(redact(run_id or ""))[:128],
        thread_id=str(redact(thread_id or ""))[:128],
        shard=shard,
        record_id=record_id if record_id is not None else uuid.uuid4(),
        match_note=match_note[:300],
        **extra,
    )


def _event_recorded(organisation: Organisation, events: list[Event]) -> None:
    """After the events are written: a drain of each shard asked for on commit, and their log lines."""
    for shard in sorted({event.shard for event in events}):
        transaction.on_commit(lambda shard=shard: kick_matcher(shard))
    for event in events:
        decisions_log.info(
            "decision",
            extra={
                "organisation": organisation.slug,
                "source": event.source,
                "decision": event.decision,
                "verdict": event.verdict,
                "rule": event.rule,
                "reasons": event.reasons,
                "agent": event.agent,
                "tool": event.tool,
                "stage": event.stage,
                "event": event.pk,
            },
        )


def event_record(*, organisation: Organisation, **fields: Any) -> Event:
    """Record a decision in the event feed, with its detail redacted before it is written.

    The event is also the sequence matchers' input: it is written `pending` in its session's
    shard, and once the transaction commits a drain of that shard is asked for (coalesced, and
    never required: the sweeper finds what could not be sent). The fields are `_event_row`'s:
    source, decision, session, agent, tool, stage, verdict, reasons, rule, detail, secret_keys,
    and for a record sent by a runtime its time (`at`), `record_id` and `match_state`.
    """
    (event,) = events_insert([_event_row(organisation=organisation, **fields)])
    _event_recorded(organisation, [event])
    return event


def events_record(*, organisation: Organisation, items: list[dict[str, Any]]) -> list[Event]:
    """`event_record` for many events at once (one statement; a runtime's batch of decision logs)."""
    events = [_event_row(organisation=organisation, **item) for item in items]
    if events:
        events = events_insert(events)
        _event_recorded(organisation, events)
    return events


#: Events written at once past which PostgreSQL takes them by COPY (`events_insert`).
COPY_FROM = 16


def events_insert(events: list[Event]) -> list[Event]:
    """Write new events in one go, in the caller's transaction; each gets its id, in list order.

    On PostgreSQL one statement writes them, never the ORM's INSERT: Django's sends each column
    as an array literal that psycopg escapes in Python, quote by quote, and with more than 50
    parameters psycopg parses the statement again each time; together most of a small batch's
    cost. A batch under `COPY_FROM` events goes as one JSON parameter the server reads into rows
    (`_events_by_json`); a larger one by COPY (`_events_by_copy`). Elsewhere, `bulk_create`. What
    is stored is what `bulk_create` stores, to the character (tests/console/test_events_insert.py).
    A row the table refuses (a record id already stored) raises `IntegrityError` either way, and
    nothing of the batch is written.
    """
    from django.db import connection

    if connection.vendor != "postgresql" or not events:
        return Event.objects.bulk_create(events)
    if len(events) < COPY_FROM:
        _events_by_json(connection, events)
    else:
        _events_by_copy(connection, events)
    for event in events:
        event._state.adding = False
        event._state.db = connection.alias
    return events


#: Event's columns as `_events_by_json` writes them: (field, how its value is sent in JSON).
_JSON_SENT = {"DateTimeField": "time", "UUIDField": "text", "JSONField": "json"}


@functools.cache
def _events_json_statement() -> tuple[str, tuple[tuple[Any, str], ...]]:
    """The INSERT that reads a JSON array of rows (`jsonb_to_recordset`), and each column's field.

    Each value travels as JSON: text as text (the INSERT casts it to the column's type as it would
    a parameter, so a value too long for its column is refused the same way), a time in full
    ISO 8601 (microseconds kept), a UUID as its text, a JSON field's value as itself.
    """
    from django.db import connection

    quote = connection.ops.quote_name
    fields = [field for field in Event._meta.concrete_fields if not field.primary_key]
    sent = []
    declared = []
    for field in fields:
        kind = field.get_internal_type()
        how = _JSON_SENT.get(kind, "plain")
        if how == "json" and field.encoder is not None:
            raise ImproperlyConfigured(f"{field.name}: a JSON field with its own encoder")
        if kind == "ForeignKey":
            sql_type = field.target_field.rel_db_type(connection)
        elif kind in ("CharField", "TextField"):
            sql_type = "text"
        else:
            sql_type = field.db_type(connection)
        declared.append(f"{quote(field.column)} {sql_type}")
        sent.append((field, how))
    columns = ", ".join(quote(field.column) for field in fields)
    # Inserted in the array's order (ORDER BY its ordinality), so the ids come back in it too.
    statement = (
        f"INSERT INTO {quote(Event._meta.db_table)} ({columns}) SELECT {columns} "
        f"FROM ROWS FROM (jsonb_to_recordset(%s::jsonb) AS ({', '.join(declared)})) "
        f"WITH ORDINALITY AS sent({columns}, position) ORDER BY position "
        f"RETURNING {quote(Event._meta.pk.column)}"
    )
    return statement, tuple(sent)


def _events_by_json(connection: Any, events: list[Event]) -> None:
    statement, sent = _events_json_statement()
    rows = []
    for event in events:
        row = {}
        for field, how in sent:
            value = field.pre_save(event, True)
            if value is not None and how == "time":
                value = value.isoformat()
            elif value is not None and how == "text":
                value = str(value)
            row[field.column] = value
        rows.append(row)
    with statements.cursor() as cursor:
        cursor.execute(statement, [json.dumps(rows, separators=(",", ":"))])
        ids = [row[0] for row in cursor.fetchall()]
    for event, number in zip(events, ids, strict=True):
        event.pk = number


@functools.cache
def _copied_fields() -> tuple[tuple[str, bool], ...]:
    """Event's columns as COPY takes them: each field's attribute, and whether it is JSON."""
    for field in Event._meta.concrete_fields:
        kind = field.get_internal_type()
        if kind not in ("JSONField", *_AS_THEY_ARE):
            raise ImproperlyConfigured(f"{field.name}: COPY would need the field's own conversion")
        if kind == "JSONField" and field.encoder is not None:
            raise ImproperlyConfigured(f"{field.name}: a JSON field with its own encoder")
    return tuple(
        (field.attname, field.get_internal_type() == "JSONField")
        for field in Event._meta.concrete_fields
    )


#: Field kinds whose values psycopg writes as the ORM would have them written (text, numbers,
#: booleans, UUIDs, aware times): COPY takes their attributes as they are, without Django's
#: per-value preparation (a fifth of an ingested record's CPU).
_AS_THEY_ARE = frozenset(
    {
        "AutoField",
        "BigAutoField",
        "BooleanField",
        "CharField",
        "DateTimeField",
        "ForeignKey",
        "PositiveSmallIntegerField",
        "UUIDField",
    }
)


def _copied_row(event: Event) -> list[Any]:
    row = []
    for attname, is_json in _copied_fields():
        value = getattr(event, attname)
        row.append(json.dumps(value) if is_json and value is not None else value)
    return row


def _events_by_copy(connection: Any, events: list[Event]) -> None:
    fields = Event._meta.concrete_fields
    table = connection.ops.quote_name(Event._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(sequence) FROM (SELECT pg_get_serial_sequence(%s, %s) AS sequence) "
            "AS named, generate_series(1, %s)",
            [Event._meta.db_table, Event._meta.pk.column, len(events)],
        )
        ids = sorted(row[0] for row in cursor.fetchall())
        for event, number in zip(events, ids, strict=True):
            event.pk = number
        try:
            with connection.wrap_database_errors:
                with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                    for event in events:
                        copy.write_row(_copied_row(event))
        except BaseException:
            for event in events:  # not written: as they were, to be written again
                event.pk = None
            raise


def malformed_call_record(
    *,
    organisation: Organisation,
    source: str,
    field: str,
    problem: str,
    body: Any,
    session: str = "",
    agent: str = "",
    verdict: str = "",
) -> Event:
    """Record a call the API refused as malformed: the attempt is an event like any refusal.

    `body` is the storable copy the edge made (escaped text, deep subtrees cut), or None when
    nothing could be read; it is redacted like every event's detail.
    """
    call = body if isinstance(body, dict) else {}
    return event_record(
        organisation=organisation,
        source=source,
        decision="refuse",
        verdict=verdict,
        session=session or str(call.get("session") or ""),
        agent=agent or str(call.get("agent") or ""),
        tool=str(call.get("tool") or ""),
        stage="tool_call",
        reasons=[f"malformed_call: {field}"],
        rule="",
        detail={"call": call, "field": field, "problem": problem},
    )


# Events of one shard within this window share one drain, sent for the window's end.
KICK_MS = 200


def _first_in_window(key: str) -> tuple[bool, int]:
    """Whether this caller is the first in the window (Redis `SET NX PX` when Redis is
    configured), and otherwise the milliseconds the window has left (0 when unknown)."""
    from django.conf import settings
    from django.core.cache import cache

    if settings.REDIS_URL:
        import redis

        global _redis
        if _redis is None:
            _redis = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1)
        pipe = _redis.pipeline(transaction=False)
        pipe.set(key, 1, nx=True, px=KICK_MS)
        pipe.pttl(key)
        first, left = pipe.execute()
        return bool(first), max(0, int(left or 0))
    return bool(cache.add(key, 1, timeout=1)), 0


_redis = None
# Until when (monotonic seconds) a drain already asked for covers this process's events, per
# shard: a drain is sent for its window's end and reads every event committed before it starts,
# so an event committed inside a window it has seen asks nothing of Redis.
_covered_until: dict[int, float] = {}


def kick_matcher(shard: int) -> None:
    """Ask a worker to drain the shard, once per shard and window.

    The window is shared by every process through Redis; once this process knows a window's
    end (its own window, or the one another process opened), the shard's events committed here
    before that end cost nothing more (no round trip per event).
    """
    import time

    from console.celery import app

    now = time.monotonic()
    if now < _covered_until.get(shard, 0.0):
        return
    try:
        first, left_ms = _first_in_window(f"stalwart:kick:{shard}")
        if first:
            app.send_task("firewall.match_shard", args=[shard], countdown=KICK_MS / 1000)
            left_ms = KICK_MS
        # The drain starts at the window's end or later: up to then, it covers what commits here.
        _covered_until[shard] = now + left_ms / 1000
    except Exception:  # noqa: BLE001 - the broker or Redis is down: the sweeper takes over
        log.warning("could not ask for a drain of shard %s; the sweeper will", shard)


@transaction.atomic
def notify_secret_rotate(*, actor: Actor) -> OrganisationSettings:
    """A new signing secret for alert webhooks; the audit row names it and never holds it."""
    require(actor, "licence.write")
    obj = OrganisationSettings.objects.select_for_update().get(organisation=actor.organisation)
    obj.notify_secret = secrets.token_hex(32)
    obj.save(update_fields=["notify_secret", "updated_at"])
    audit_record(
        actor=actor,
        action="settings.rotate_notify_secret",
        object_type="settings",
        object_id=actor.organisation.pk,
        changes={"notify_secret": dict(audit.REDACTED_CHANGE)},
    )
    return obj


@transaction.atomic
def hold_release(*, actor: Actor, hold) -> None:  # noqa: ANN001
    """Let the writes of a held session run without a person again."""
    require(actor, "controls.write")
    # Read again under the row's lock: of two releases at once, the second finds it released
    # (one release, one audit row).
    hold = type(hold).objects.select_for_update().get(pk=hold.pk)
    if hold.released_at is not None:
        return
    hold.released_at, hold.released_by = timezone.now(), actor.label
    hold.save(update_fields=["released_at", "released_by"])
    audit_record(
        actor=actor,
        action="control.hold.release",
        object_type="session_hold",
        object_id=hold.pk,
        changes={
            "held": {"old": True, "new": False},
            "session": {"old": hold.session, "new": hold.session},
        },
    )


@transaction.atomic
def tool_enable(*, actor: Actor, switch) -> None:  # noqa: ANN001
    """Turn back on a tool that a sequence alert switched off for an agent."""
    require(actor, "controls.write")
    switch = type(switch).objects.select_for_update().get(pk=switch.pk)  # as `hold_release`
    if switch.enabled_at is not None:
        return
    switch.enabled_at, switch.enabled_by = timezone.now(), actor.label
    switch.save(update_fields=["enabled_at", "enabled_by"])
    audit_record(
        actor=actor,
        action="control.tool.enable",
        object_type="tool_switch",
        object_id=switch.pk,
        changes={
            "disabled": {"old": True, "new": False},
            "tool": {"old": switch.tool, "new": switch.tool},
        },
    )


def decisions_ingest(*, actor: Actor, records: list[Any]) -> dict[str, Any]:
    """Store a runtime's batch of decision-log records in the event feed, each once.

    Every record becomes an event through `events_record` (so the sequence matchers' outbox is
    fed in the same transaction); a record whose id is already stored is counted as a duplicate
    and not written again; one that cannot be read is stored as an `unreadable` event and named
    in `unreadable` with the field path of its problem. Record ids are each organisation's: one
    another organisation's key sent first hides nothing here.

    A batch is first written as it is (a batch is almost always new); the unique record id
    refuses one holding a record already stored, and the batch is then written again without the
    records found stored. That also covers a batch racing a copy of itself (a runtime retrying a
    request that timed out while the first still ran): the loser is read again after the winner
    commits, and finds its records stored.
    """
    from django.db import IntegrityError

    from console.decisions import read_batch

    require(actor, "guard.check")
    readings = read_batch(records)
    try:
        return _decisions_store(
            organisation=actor.organisation, readings=readings, look_for_stored=False
        )
    except IntegrityError:
        pass
    try:
        return _decisions_store(
            organisation=actor.organisation, readings=readings, look_for_stored=True
        )
    except IntegrityError:  # a third copy raced in between: its records are stored by now
        return _decisions_store(
            organisation=actor.organisation, readings=readings, look_for_stored=True
        )


@transaction.atomic
def _decisions_store(
    *, organisation: Organisation, readings: list[Any], look_for_stored: bool
) -> dict[str, Any]:
    stored: set[Any] = set()
    if look_for_stored:
        stored = set(
            Event.objects.filter(
                organisation=organisation, record_id__in=[r.record_id for r in readings]
            ).values_list("record_id", flat=True)
        )
    items, unreadable, duplicates = [], [], 0
    for reading in readings:
        if reading.record_id in stored:
            duplicates += 1
            continue
        stored.add(reading.record_id)
        items.append({**reading.event, "record_id": reading.record_id})
        if reading.problem is not None:
            unreadable.append(
                {
                    "index": reading.index,
                    "id": str(reading.record_id),
                    "field": reading.problem.field,
                    "problem": reading.problem.problem,
                }
            )
    events_record(organisation=organisation, items=items)
    return {
        "stored": len(items) - len(unreadable),
        "duplicates": duplicates,
        "unreadable": unreadable,
    }
