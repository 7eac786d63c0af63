"""The organisation's bundle: what a runtime needs to decide in the agent's process, signed.

`bundle_content` reads it (the selectors of the settings, the published firewall version, the
rulebooks, the write switches, the holds and the tools switched off), `bundle_signed` signs it
(`stalwart_agents.bundle`, Ed25519), and `bundle_wait` answers as soon as its version differs
from the one a runtime holds, or when the wait is up.

The bundle key of an organisation is derived from the server's secret
(`STALWART_BUNDLE_SECRET`, else `SECRET_KEY`), the organisation's id and its key generation, so
the database holds no private key: the same secret always gives the same keys, and a new secret
is a new key for everyone (every runtime must then be given the new public key). A leaked private
key of one generation tells nothing of another (HMAC-SHA256 is one-way).

Rotation: generation 0 is the key of before any rotation. `bundle_key_rotate` (an admin, audited)
makes generation N + 1 current, and from then on it signs every bundle, stamp and approval grant.
`GET /v1/bundle/key` lists three keys: the current one (generation N); the *next* one (N + 1),
which nothing is signed with yet, so runtimes can be given it beside the current one before the rotation and
keep deciding through it; and the *previous* one for `STALWART_BUNDLE_KEY_GRACE` seconds after a
rotation, which signs nothing any more. The public keys are no secret.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings as django_settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from console import bundle_changes
from console.access import Actor, require
from console.bundle_changes import bundle_changed
from console.controls import holds_in_force, switches_in_force
from console.models import (
    BundleKeyGeneration,
    Organisation,
    OrganisationSettings,
)
from firewall.engine.names import name_key
from stalwart_agents import bundle as bundles

#: The longest a long-poll waits (`?wait=` is bounded to it).
MAX_WAIT = 30.0

#: How long the previous key is still listed after a rotation (seconds; `STALWART_BUNDLE_KEY_GRACE`).
KEY_GRACE = 7 * 86_400.0


def _seed(organisation_id: int, generation: int) -> bytes:
    secret = getattr(django_settings, "STALWART_BUNDLE_SECRET", "") or django_settings.SECRET_KEY
    label = (
        f"stalwart-bundle:{organisation_id}"
        if generation == 0  # the key of before rotations: the same public key as it always was
        else f"stalwart-bundle:{organisation_id}:{generation}"
    )
    return hmac.new(secret.encode("utf-8"), label.encode(), hashlib.sha256).digest()


@dataclass(frozen=True)
class KeyGeneration:
    """One generation of an organisation's bundle key, with its private half derived."""

    generation: int
    key: bundles.SigningKey
    created_at: dt.datetime | None = None

    @property
    def kid(self) -> str:
        return self.key.kid

    @property
    def public(self) -> str:
        return self.key.public


def _generation(organisation_id: int, generation: int, row: Any = None) -> KeyGeneration:
    return KeyGeneration(
        generation,
        bundles.SigningKey(_seed(organisation_id, generation)),
        row.created_at if row is not None else None,
    )


def _grace() -> dt.timedelta:
    return dt.timedelta(
        seconds=float(getattr(django_settings, "STALWART_BUNDLE_KEY_GRACE", KEY_GRACE))
    )


@dataclass(frozen=True)
class KeyRing:
    """The organisation's keys as `GET /v1/bundle/key` lists them (see the module docstring)."""

    current: KeyGeneration
    next: KeyGeneration
    previous: KeyGeneration | None
    listed_until: dt.datetime | None  # when the previous key stops being listed


def key_ring(organisation_id: int) -> KeyRing:
    row = BundleKeyGeneration.objects.filter(organisation_id=organisation_id).first()
    number = row.generation if row is not None else 0
    previous, until = None, None
    if row is not None and timezone.now() < row.created_at + _grace():
        previous, until = _generation(organisation_id, number - 1), row.created_at + _grace()
    return KeyRing(
        current=_generation(organisation_id, number, row),
        next=_generation(organisation_id, number + 1),
        previous=previous,
        listed_until=until,
    )


def keys_listed(organisation_id: int) -> list[dict[str, Any]]:
    """The keys a runtime may be given, as `GET /v1/bundle/key` and the Settings page list them:
    the current one (it signs), the next one (it signs after the next rotation), and the previous
    one while its grace period lasts (it signs nothing any more)."""
    ring = key_ring(organisation_id)
    listed = [
        (ring.current, "current", None),
        (ring.next, "next", None),
    ]
    if ring.previous is not None:
        listed.append((ring.previous, "previous", ring.listed_until))
    return [
        {
            "kid": generation.kid,
            "public_key": generation.public,
            "generation": generation.generation,
            "status": status,
            "since": generation.created_at.isoformat() if generation.created_at else None,
            "listed_until": until.isoformat() if until else None,
        }
        for generation, status, until in listed
    ]


def signing_key(organisation_id: int) -> bundles.SigningKey:
    """The organisation's current bundle key (see the module docstring): it signs everything."""
    row = BundleKeyGeneration.objects.filter(organisation_id=organisation_id).first()
    return _generation(organisation_id, row.generation if row is not None else 0).key


def public_key(organisation_id: int) -> str:
    return signing_key(organisation_id).public


def bundle_key_rotate(*, actor: Actor) -> KeyGeneration:
    """A new bundle key for the actor's organisation (admins only), audited; it signs from now on.

    Runtimes that trust only the old public key fail closed at their next bundle: give them the
    next key beside the current one first (`GET /v1/bundle/key` lists it as `next`).
    """
    require(actor, "bundle_keys.rotate")
    organisation = actor.organisation
    for _attempt in range(3):  # two admins rotating at once: one of them takes the next number
        try:
            with transaction.atomic():
                before = key_ring(organisation.pk).current
                row = BundleKeyGeneration.objects.create(
                    organisation=organisation,
                    generation=before.generation + 1,
                    created_by=actor.label[:200],
                )
                now = _generation(organisation.pk, row.generation, row)
                from console.services import audit_record

                audit_record(
                    actor=actor,
                    action="bundle_key.rotate",
                    object_type="bundle_key",
                    object_id=now.generation,
                    changes={
                        "generation": [before.generation, now.generation],
                        "kid": [before.kid, now.kid],
                        "public_key": [before.public, now.public],
                    },
                )
                bundle_changed(organisation.pk)
                return now
        except IntegrityError:
            continue
    raise IntegrityError("the bundle key is being rotated by someone else: try again")


def _settings(organisation: Organisation) -> dict[str, Any]:
    from guard.services import engine_settings

    row = OrganisationSettings.objects.filter(organisation=organisation).first()
    settings = engine_settings(organisation.pk)
    if row is not None:
        settings["on_unread"] = row.on_unread
        settings["compiled_records_only"] = row.compiled_records_only
    return settings


def _firewall(organisation: Organisation) -> dict[str, Any] | None:
    from firewall.models import Policy

    policy = (
        Policy.objects.filter(organisation=organisation, active=True)
        .select_related("published")
        .first()
    )
    if policy is None:
        return None
    if policy.published is None:  # active, nothing published yet: refused as the console does
        return {"policy": policy.name, "version": None}
    version = policy.published
    return {
        "policy": policy.name,
        "version": version.number,
        "key": str(version.key),
        "default_verdict": version.default_verdict,
        "rules": version.rules,
    }


def _rulebooks(organisation: Organisation) -> dict[str, Any]:
    """Each rulebook's latest compiled record, by name."""
    from rulebooks.models import RulebookVersion

    latest: dict[str, Any] = {}
    rows = (
        RulebookVersion.objects.filter(organisation=organisation)
        .select_related("rulebook")
        .order_by("rulebook__name", "-number")
        .only("number", "record", "rulebook__name")
    )
    for row in rows:
        latest.setdefault(row.rulebook.name, {"version": row.number, "record": row.record})
    return latest


def bundle_content(*, organisation: Organisation, agent: str = "") -> dict[str, Any]:
    """What decides, for the organisation (and, with `agent`, only that agent's controls)."""
    from guard.models import WriteSwitch

    holds = holds_in_force(organisation=organisation)
    switches = switches_in_force(organisation=organisation)
    if agent:
        holds = holds.filter(agent=name_key(agent))
        switches = switches.filter(agent=name_key(agent))
    return {
        "settings": _settings(organisation),
        "firewall": _firewall(organisation),
        "rulebooks": _rulebooks(organisation),
        "writes": dict(
            WriteSwitch.objects.filter(organisation=organisation)
            .order_by("tool")
            .values_list("tool", "writes_enabled")
        ),
        # At most `bundles.MAX_CONTROLS` holds and switches are what a runtime decides from: one
        # more is sent where there are more, and the runtime refuses such a bundle (fails closed)
        # rather than decide without the holds it was not sent.
        "holds": [
            {"agent": a, "session": s}
            for a, s in holds.order_by("agent", "session").values_list("agent", "session")[
                : bundles.MAX_CONTROLS + 1
            ]
        ],
        "switches": [
            {"agent": a, "tool": t}
            for a, t in switches.order_by("agent", "tool").values_list("agent", "tool")[
                : bundles.MAX_CONTROLS + 1
            ]
        ],
    }


def bundle_signed(*, organisation: Organisation, agent: str, content: dict[str, Any]) -> dict:
    return bundles.sign_bundle(
        signing_key(organisation.pk),
        organisation=organisation.slug,
        agent=agent,
        content=content,
    )


def bundle_stamp(*, organisation: Organisation, agent: str, version: str) -> str:
    return bundles.sign_stamp(
        signing_key(organisation.pk), organisation=organisation.slug, agent=agent, version=version
    )


def bundle_fresh(*, organisation: Organisation, agent: str, version: str, nonce: str) -> str:
    """The proof that this answer is to the request that sent `nonce` (`Stalwart-Bundle-Fresh`)."""
    return bundles.sign_fresh(
        signing_key(organisation.pk),
        organisation=organisation.slug,
        agent=agent,
        version=version,
        nonce=nonce,
    )


def bundle_wait(
    *, organisation: Organisation, agent: str, held: str | None, wait: float
) -> dict[str, Any] | None:
    """The content once its version is not `held` (or once the key that signs changed: a
    rotation), or None when `wait` seconds passed first.

    The wait sleeps until a change of the organisation is announced (`console.bundle_changes`:
    Redis pub/sub, and this process's own changes), or until the next re-check
    (`STALWART_BUNDLE_RECHECK`), and then reads the rows again, outside any transaction. It is
    bounded by `MAX_WAIT` and by the console's own `STALWART_BUNDLE_MAX_WAIT` (a long-poll holds a
    web thread while it waits).
    """
    longest = float(getattr(django_settings, "STALWART_BUNDLE_MAX_WAIT", MAX_WAIT))
    deadline = time.monotonic() + max(0.0, min(wait, longest, MAX_WAIT))
    kid = ""
    while True:
        count = bundle_changes.seen(organisation.pk)  # noted first: no change slips between
        content = bundle_content(organisation=organisation, agent=agent)
        if held is None or bundles.version_of(content) != held:
            return content
        signer = signing_key(organisation.pk).kid
        if kid and signer != kid:
            return content  # a rotated key: the bundle again, signed with the new one
        kid = signer
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        bundle_changes.wait_for_change(
            organisation.pk, count, min(left, bundle_changes.recheck_every())
        )
