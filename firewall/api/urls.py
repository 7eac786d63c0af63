"""Routes of the firewall's API under /v1/firewall/."""

from __future__ import annotations

from django.urls import path

from firewall.api import views

urlpatterns = [
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
    path("rules/<int:rule_id>", views.RuleDetailView.as_view(), name="api-firewall-rule"),
    path("evaluate", views.EvaluateView.as_view(), name="api-firewall-evaluate"),
]
