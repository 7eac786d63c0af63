"""Routes of the console's API under /v1/."""

from __future__ import annotations

from django.urls import path

from console import gateways
from console.api import bundle, controls, decisions, views

urlpatterns = [
    path("settings", views.SettingsView.as_view(), name="api-settings"),
    path("events", views.EventListView.as_view(), name="api-events"),
    path("decisions", decisions.DecisionsView.as_view(), name="api-decisions"),
    path("events/<int:event_id>", views.EventDetailView.as_view(), name="api-event"),
    path("audit", views.AuditListView.as_view(), name="api-audit"),
    path("health", views.HealthView.as_view(), name="api-health"),
    path("whoami", views.WhoAmIView.as_view(), name="api-whoami"),
    path("bundle", bundle.BundleView.as_view(), name="api-bundle"),
    path("bundle/key", bundle.BundleKeyView.as_view(), name="api-bundle-key"),
    path("bundle/key/rotate", bundle.BundleKeyRotateView.as_view(), name="api-bundle-key-rotate"),
    path("controls", controls.ControlsView.as_view(), name="api-controls"),
    path("gateways", gateways.GatewayListView.as_view(), name="api-gateways"),
    path(
        "gateways/<str:name>/report",
        gateways.GatewayReportView.as_view(),
        name="api-gateway-report",
    ),
    path("controls/writes", controls.WritesView.as_view(), name="api-controls-writes"),
    path(
        "controls/holds/<int:pk>/release",
        controls.HoldReleaseView.as_view(),
        name="api-hold-release",
    ),
    path(
        "controls/switches/<int:pk>/enable",
        controls.ToolEnableView.as_view(),
        name="api-tool-enable",
    ),
]
