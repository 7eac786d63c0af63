"""The organisation's bundle: what a runtime needs to decide in the agent's process, signed.

`bundle_content` reads it (the selectors of the settings, the published firewall version, the
rulebooks, the write switches, the holds and the tools switched off), `bundle_signed` signs it
(`stalwart_agents.bundle`, Ed25519), and `bundle_wait` answers as soon as its version differs
from the one a runtime holds, or when the wait is up.

The bundle key of an organisation is derived from the server's secret
(`STALWART_BUNDLE_SECRET`, else `SECRET_KEY`) and the organisation's id, so the database holds
no private key: the same secret always gives the same key, and a new secret is a new key (every
runtime must then be given the new public key). The public key is no secret: `GET /v1/bundle/key`.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any

from django.conf import settings as django_settings

from console.models import Organisation, OrganisationSettings, SessionHold, ToolSwitch
from firewall.engine.names import name_key
from stalwart_agents import bundle as bundles

#: The longest a long-poll waits (`?wait=` is bounded to it), and how often it looks again.
MAX_WAIT = 30.0
POLL_EVERY = 0.2
#: At most this many holds and switches travel in one bundle (the newest first).
MAX_CONTROLS = 10_000


def signing_key(organisation_id: int) -> bundles.SigningKey:
    """The organisation's bundle key (see the module docstring)."""
    secret = getattr(django_settings, "STALWART_BUNDLE_SECRET", "") or django_settings.SECRET_KEY
    seed = hmac.new(
        secret.encode("utf-8"), f"stalwart-bundle:{organisation_id}".encode(), hashlib.sha256
    ).digest()
    return bundles.SigningKey(seed)


def public_key(organisation_id: int) -> str:
    return signing_key(organisation_id).public


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
    if policy is None or policy.published is None:
        return None
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

    holds = SessionHold.objects.filter(organisation=organisation, released_at=None)
    switches = ToolSwitch.objects.filter(organisation=organisation, enabled_at=None)
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
        "holds": [
            {"agent": a, "session": s}
            for a, s in holds.order_by("agent", "session").values_list("agent", "session")[
                :MAX_CONTROLS
            ]
        ],
        "switches": [
            {"agent": a, "tool": t}
            for a, t in switches.order_by("agent", "tool").values_list("agent", "tool")[
                :MAX_CONTROLS
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


def bundle_wait(
    *, organisation: Organisation, agent: str, held: str | None, wait: float
) -> dict[str, Any] | None:
    """The content once its version is not `held`, or None when `wait` seconds passed first.

    Each look reads the rows again outside any transaction, so a hold committed meanwhile is seen
    by the next look (every `POLL_EVERY` seconds). The wait is bounded by `MAX_WAIT` and by the
    console's own `STALWART_BUNDLE_MAX_WAIT` (a long-poll holds a web thread while it waits).
    """
    longest = float(getattr(django_settings, "STALWART_BUNDLE_MAX_WAIT", MAX_WAIT))
    deadline = time.monotonic() + max(0.0, min(wait, longest, MAX_WAIT))
    while True:
        content = bundle_content(organisation=organisation, agent=agent)
        if held is None or bundles.version_of(content) != held:
            return content
        if time.monotonic() >= deadline:
            return None
        time.sleep(POLL_EVERY)
