"""Routes of the console: pages, the API under /v1/, and its OpenAPI schema and docs."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from console import gateways, views
from guard import panel as guard_panel
from router import views as router_views

handler404 = "console.api.errors.not_found"
handler403 = "console.views.permission_denied"

urlpatterns = [
    # The API first, its decision endpoints (a call checked, a call evaluated, a runtime's decision
    # logs) ahead of the rest: Django tries the routes in order on every request. No two of these
    # prefixes match one path, so their order changes which routes are tried first, nothing else.
    path("v1/", include("guard.api.urls")),
    path("v1/firewall/", include("firewall.api.urls")),
    path("v1/", include("console.api.urls")),
    path("v1/plan", router_views.PlanView.as_view(), name="api-plan"),
    path("v1/", include("rulebooks.api.urls")),
    path("v1/", include("proof.api.urls")),
    path("v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("v1/docs", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", views.dashboard, name="dashboard"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("organisation/switch", views.organisation_switch, name="organisation-switch"),
    path("settings/", views.settings_page, name="settings"),
    path("settings/validate", views.settings_validate, name="settings-validate"),
    path("settings/bundle-key/rotate", views.bundle_key_rotate, name="bundle-key-rotate"),
    path("audit/", views.audit_page, name="audit"),
    path("events/", views.events_page, name="events"),
    path("events/<int:event_id>/", views.event_detail, name="event"),
    re_path(r"^events/export\.(?P<fmt>csv|json)$", views.events_export, name="events-export"),
    path("controls/holds/<int:hold_id>/release", views.hold_release, name="hold-release"),
    path("controls/switches/<int:switch_id>/enable", views.tool_enable, name="tool-enable"),
    path("members/", views.members_page, name="members"),
    path("members/invite", views.member_invite, name="member-invite"),
    path(
        "members/invitations/<int:invitation_id>/cancel",
        views.invitation_cancel,
        name="invitation-cancel",
    ),
    path("invitations/", views.invitations_page, name="invitations"),
    re_path(
        # at most 18 digits, as an id is: a longer one is no invitation's (int() refuses 4,300)
        r"^invitations/(?P<invitation_id>[0-9]{1,18})/(?P<answer>accept|decline)$",
        views.invitation_answer,
        name="invitation-answer",
    ),
    path("members/<int:membership_id>/role", views.member_role, name="member-role"),
    path("members/<int:membership_id>/remove", views.member_remove, name="member-remove"),
    path("api-keys/", views.api_keys_page, name="api-keys"),
    path("api-keys/create", views.api_key_create, name="api-key-create"),
    path("api-keys/<int:key_id>/revoke", views.api_key_revoke, name="api-key-revoke"),
    path("health/", views.health_page, name="health"),
    path("firewall/", include("firewall.urls")),
    path("rulebooks/", include("rulebooks.urls")),
    path("approvals/", include("guard.urls")),
    path("tools/", guard_panel.tools_page, name="tools"),
    path("tools/writes", guard_panel.writes_switch, name="tools-writes"),
    path("gateways/", gateways.gateways_page, name="gateways"),
    path("gateways/<int:gateway_id>/forget", gateways.gateway_forget_view, name="gateway-forget"),
    path("metrics", guard_panel.MetricsView.as_view(), name="metrics"),
    path("try/", include("router.urls")),
    path("proofs/", include("proof.urls")),
]
