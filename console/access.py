"""Who is asking and what their role lets them do: the one permission helper every view calls first."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from console.logs import bind_organisation
from console.models import ApiKey, Membership, Organisation, Role

ORG_SESSION_KEY = "stalwart_organisation_id"
ORG_HEADER = "HTTP_X_STALWART_ORGANISATION"

# Capability -> roles that hold it. Enforced on the server by `require`; templates only mirror it.
CAPABILITIES: dict[str, frozenset[str]] = {
    "settings.read": frozenset(Role.values),
    "settings.write": frozenset({Role.ADMIN, Role.EDITOR}),
    "licence.write": frozenset({Role.ADMIN}),
    "audit.read": frozenset({Role.ADMIN, Role.AUDITOR}),
    "events.read": frozenset({Role.ADMIN, Role.EDITOR, Role.AUDITOR}),
    "members.read": frozenset(Role.values),
    "members.manage": frozenset({Role.ADMIN}),
    "api_keys.manage": frozenset({Role.ADMIN}),
    "health.read": frozenset(Role.values),
    "controls.write": frozenset({Role.ADMIN, Role.EDITOR}),
    # The executor's panel (counters, write switches, ledger) and its Prometheus endpoint.
    "tools.read": frozenset(Role.values),
    "guard.check": frozenset({Role.ADMIN, Role.EDITOR, Role.APPROVER}),
    "approvals.read": frozenset({Role.ADMIN, Role.APPROVER, Role.EDITOR}),
    "approvals.answer": frozenset({Role.ADMIN, Role.APPROVER}),
    "router.plan": frozenset({Role.ADMIN, Role.EDITOR, Role.APPROVER}),
    "rulebooks.read": frozenset(Role.values),
    "rulebooks.write": frozenset({Role.ADMIN, Role.EDITOR}),
    "firewall.read": frozenset(Role.values),
    "firewall.write": frozenset({Role.ADMIN, Role.EDITOR}),
    # Making a draft the version that decides (publish, rollback): audited, never the auditor's.
    "firewall.publish": frozenset({Role.ADMIN, Role.EDITOR}),
    # Evaluating records events and counts matches: the runtime's keys and the people who run it.
    "firewall.evaluate": frozenset({Role.ADMIN, Role.EDITOR, Role.APPROVER}),
    "proofs.read": frozenset(Role.values),
    "proofs.run": frozenset({Role.ADMIN, Role.EDITOR}),
    # MCP gateways: every role reads them; the runtime's keys report; only an admin forgets one.
    "gateways.read": frozenset(Role.values),
    "gateways.report": frozenset({Role.ADMIN, Role.EDITOR, Role.APPROVER}),
    "gateways.manage": frozenset({Role.ADMIN}),
    # A new bundle key: every runtime must be given it, so only an admin rotates (audited).
    "bundle_keys.rotate": frozenset({Role.ADMIN}),
}


@dataclass(frozen=True)
class Actor:
    """A person or an API key acting inside one organisation with one role."""

    organisation: Organisation
    role: str
    label: str
    user_id: int | None = None
    api_key_id: int | None = None
    # For a key: the person who owns it, and whether an admin made it to answer confirm prompts.
    owner_id: int | None = None
    may_approve: bool = False

    def can(self, capability: str) -> bool:
        return self.role in CAPABILITIES[capability]

    @property
    def person_id(self) -> int | None:
        """The person behind the request: the signed-in person, or the key's owner."""
        return self.user_id if self.user_id is not None else self.owner_id


def require(actor: Actor, capability: str) -> None:
    if not actor.can(capability):
        raise PermissionDenied(f"the {actor.role} role cannot do `{capability}`")


def memberships_of(user) -> list[Membership]:  # noqa: ANN001
    if not getattr(user, "is_authenticated", False) or not getattr(user, "pk", None):
        return []
    return list(
        Membership.objects.filter(user=user)
        .select_related("organisation")
        .order_by("organisation__name")
    )


def actor_for_request(request: HttpRequest) -> Actor:
    """The actor of a request: its API key's organisation, or the signed-in person's chosen one.

    Anyone who is not a member of the organisation asked for gets 404, as if it did not exist.
    """
    key = getattr(request, "auth", None)
    if isinstance(key, ApiKey):
        bind_organisation(key.organisation.slug)
        return Actor(
            organisation=key.organisation,
            role=key.role,
            label=f"api-key:{key.name} ({key.prefix})",
            api_key_id=key.pk,
            owner_id=key.owner_id,
            may_approve=key.may_approve,
        )
    user = getattr(request, "user", None)
    memberships = memberships_of(user)
    if not memberships:
        raise Http404("no organisation")
    if getattr(request, "_organisation_gone", False):
        raise Http404("no such organisation")  # refused once in this request: for all of it
    wanted = request.META.get(ORG_HEADER) or None
    from_session = wanted is None and hasattr(request, "session")
    if from_session:
        wanted = request.session.get(ORG_SESSION_KEY)
    chosen = memberships[0]
    if wanted is not None:
        match = [m for m in memberships if str(m.organisation_id) == str(wanted)]
        match = match or [m for m in memberships if m.organisation.slug == str(wanted)]
        if not match:
            if from_session:
                # The person was removed from the organisation they had chosen: this request
                # (meant for it) is refused, and the next one is of an organisation of theirs.
                request.session.pop(ORG_SESSION_KEY, None)
                request._organisation_gone = True
            raise Http404("no such organisation")
        chosen = match[0]
    bind_organisation(chosen.organisation.slug)
    return Actor(
        organisation=chosen.organisation,
        role=chosen.role,
        label=f"user:{user.get_username()}",
        user_id=user.pk,
    )


def get_object_for_actor(model, actor: Actor, **lookup):  # noqa: ANN001, ANN003, ANN201
    """An object of the actor's organisation, or 404 (another organisation's objects do not exist)."""
    try:
        return model.objects.get(organisation=actor.organisation, **lookup)
    except (model.DoesNotExist, ValueError, TypeError) as exc:
        raise Http404("not found") from exc
