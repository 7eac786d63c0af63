"""What every page's layout needs: the person's organisations and their role in the current one."""

from __future__ import annotations

from django.http import Http404
from django.urls import reverse

from console.access import CAPABILITIES, actor_for_request, memberships_of
from console.services import invitations_for


def organisation(request):  # noqa: ANN001, ANN201
    user = getattr(request, "user", None)
    if not getattr(user, "is_authenticated", False):
        return {}
    invitations = len(invitations_for(user=user))
    try:
        actor = actor_for_request(request)
    except Http404:
        return {"memberships": [], "invitation_count": invitations}
    can = {name.replace(".", "_"): actor.role in roles for name, roles in CAPABILITIES.items()}
    return {
        "invitation_count": invitations,
        "memberships": memberships_of(user),
        "current_actor": actor,
        "can": can,
        "nav": navigation(request.path, can),
    }


#: The pages of the nav, in groups: (group, [(label, url name, capability or None)]).
NAV = (
    (
        "Watch",
        (
            ("Dashboard", "dashboard", None),
            ("Events", "events", "events_read"),
            ("Audit", "audit", "audit_read"),
            ("Health", "health", None),
        ),
    ),
    (
        "Decide",
        (("Approvals", "approvals", "approvals_read"), ("Try a turn", "try-a-turn", "router_plan")),
    ),
    (
        "Govern",
        (
            ("Firewall", "firewall", None),
            ("Rulebooks", "rulebooks", None),
            ("Tools", "tools", None),
            ("Gateways", "gateways", None),
            ("Proofs", "proofs", "proofs_read"),
            ("Settings", "settings", None),
        ),
    ),
    (
        "Organisation",
        (
            ("People", "members", None),
            ("API keys", "api-keys", "api_keys_manage"),
            ("API", "api-docs", None),
        ),
    ),
)


def navigation(path: str, can: dict[str, bool]) -> list[dict]:
    """The nav's groups with the pages this role may open, the current one marked."""
    groups = []
    for group, pages in NAV:
        items = []
        for label, name, capability in pages:
            if capability and not can.get(capability):
                continue
            url = reverse(name)
            current = path == url if url == "/" else path.startswith(url)
            items.append({"label": label, "url": url, "current": current})
        if items:
            groups.append({"label": group, "items": items})
    return groups
