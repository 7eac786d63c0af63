"""What every page's layout needs: the person's organisations and their role in the current one."""

from __future__ import annotations

from django.http import Http404

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
    return {
        "invitation_count": invitations,
        "memberships": memberships_of(user),
        "current_actor": actor,
        "can": {
            name.replace(".", "_"): actor.role in roles for name, roles in CAPABILITIES.items()
        },
    }
