"""Writes of the console's own app: organisations, people, API keys, settings, audit rows and events.

Every service is keyword-only and atomic; every change writes its audit row in the same transaction.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from console import audit
from console.access import Actor, require
from console.models import (
    ApiKey,
    Event,
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
    "licence_valid_until",
    "licence_on_lapse",
    "compiled_records_only",
)
LICENCE_FIELDS = frozenset({"licence_valid_until", "licence_on_lapse"})
API_KEY_PREFIX = "stw_"


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
    return organisation


def settings_get(*, organisation: Organisation) -> OrganisationSettings:
    obj, _ = OrganisationSettings.objects.get_or_create(organisation=organisation)
    return obj


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
    if changed & LICENCE_FIELDS and not actor.can("licence.write"):
        raise PermissionDenied("only an admin can change the licence")
    obj.full_clean()
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


@transaction.atomic
def api_key_create(*, actor: Actor, name: str, role: str) -> tuple[ApiKey, str]:
    """Create a key and return it with its plain text, which is shown once and never stored."""
    require(actor, "api_keys.manage")
    name = name.strip()
    errors = {}
    if not name:
        errors["name"] = "a key needs a name"
    if role not in Role.values:
        errors["role"] = f"`{role}` is not a role"
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
    )
    audit_record(
        actor=actor,
        action="api_key.create",
        object_type="api_key",
        object_id=key.pk,
        changes={
            "name": {"old": None, "new": name},
            "role": {"old": None, "new": role},
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
        audit_record(
            actor=actor,
            action="api_key.revoke",
            object_type="api_key",
            object_id=key.pk,
            changes={"revoked": {"old": False, "new": True}},
        )
    return key


def api_key_authenticate(plain: str) -> ApiKey | None:
    """The active key whose hash matches `plain`, or None."""
    if not plain.startswith(API_KEY_PREFIX):
        return None
    prefix = plain[len(API_KEY_PREFIX) :].split("_", 1)[0]
    key = ApiKey.objects.select_related("organisation").filter(prefix=prefix).first()
    if key is None or key.revoked_at is not None:
        return None
    if not hmac.compare_digest(key.key_hash, _hash_key(plain)):
        return None
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now())
    return key


@transaction.atomic
def person_add(*, actor: Actor, username: str, email: str, role: str) -> tuple[Any, str | None]:
    """Add a person to the actor's organisation with a role; a new person gets a one-time password."""
    require(actor, "members.manage")
    username = username.strip()
    errors = {}
    if not username:
        errors["username"] = "a person needs a user name"
    if role not in Role.values:
        errors["role"] = f"`{role}` is not a role"
    if errors:
        raise ValidationError(errors)
    user_model = get_user_model()
    user = user_model.objects.filter(username=username).first()
    password = None
    if user is None:
        password = secrets.token_urlsafe(12)
        user = user_model.objects.create_user(
            username=username, email=email.strip(), password=password
        )
    if Membership.objects.filter(user=user, organisation=actor.organisation).exists():
        raise ValidationError({"username": f"`{username}` is already a member"})
    membership = Membership.objects.create(user=user, organisation=actor.organisation, role=role)
    audit_record(
        actor=actor,
        action="membership.create",
        object_type="membership",
        object_id=membership.pk,
        changes={"person": {"old": None, "new": username}, "role": {"old": None, "new": role}},
    )
    return user, password


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


def event_record(
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
) -> Event:
    """Record a decision in the event feed, with its detail redacted before it is written."""
    return Event.objects.create(
        organisation=organisation,
        source=source,
        decision=decision,
        session=session[:128],
        agent=agent[:128],
        tool=tool[:200],
        stage=stage[:32],
        verdict=verdict[:32],
        reasons=[str(r) for r in (reasons or [])],
        rule=(rule or "")[:200],
        detail=redact(detail or {}, secret_keys=secret_keys),
    )
