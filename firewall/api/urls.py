"""Routes of the firewall's API under /v1/firewall/."""

from __future__ import annotations

from django.urls import path

from firewall.api import views

urlpatterns = [
    # The decision endpoint first: routes are tried in order on every request.
    path("evaluate", views.EvaluateView.as_view(), name="api-firewall-evaluate"),
    path("policies", views.PolicyListView.as_view(), name="api-firewall-policies"),
    path("policies/<int:policy_id>", views.PolicyDetailView.as_view(), name="api-firewall-policy"),
    path(
        "policies/<int:policy_id>/export",
        views.PolicyExportView.as_view(),
        name="api-firewall-export",
    ),
    path(
        "policies/<int:policy_id>/rules", views.PolicyRulesView.as_view(), name="api-firewall-rules"
    ),
    path(
        "policies/<int:policy_id>/reorder",
        views.PolicyReorderView.as_view(),
        name="api-firewall-reorder",
    ),
    path(
        "policies/<int:policy_id>/presets",
        views.PolicyPresetView.as_view(),
        name="api-firewall-presets",
    ),
    path(
        "policies/<int:policy_id>/versions",
        views.PolicyVersionsView.as_view(),
        name="api-firewall-versions",
    ),
    path(
        "policies/<int:policy_id>/versions/<int:number>",
        views.PolicyVersionDetailView.as_view(),
        name="api-firewall-version",
    ),
    path(
        "policies/<int:policy_id>/publish",
        views.PolicyPublishView.as_view(),
        name="api-firewall-publish",
    ),
    path(
        "policies/<int:policy_id>/rollback",
        views.PolicyRollbackView.as_view(),
        name="api-firewall-rollback",
    ),
    path("policies/<int:policy_id>/diff", views.PolicyDiffView.as_view(), name="api-firewall-diff"),
    path(
        "policies/<int:policy_id>/draft", views.PolicyDraftView.as_view(), name="api-firewall-draft"
    ),
    path(
        "policies/<int:policy_id>/replay",
        views.PolicyReplayView.as_view(),
        name="api-firewall-replay",
    ),
    path("rules/<int:rule_id>", views.RuleDetailView.as_view(), name="api-firewall-rule"),
]
