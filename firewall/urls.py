"""Routes of the rule editor's pages under /firewall/."""

from __future__ import annotations

from django.urls import path

from firewall import views

urlpatterns = [
    path("", views.policy_list_page, name="firewall"),
    path("import", views.policy_import_page, name="firewall-import"),
    path("<int:policy_id>/", views.policy_page, name="firewall-policy"),
    path("<int:policy_id>/settings", views.policy_settings, name="firewall-policy-settings"),
    path("<int:policy_id>/export.json", views.policy_export_page, name="firewall-policy-export"),
    path("<int:policy_id>/delete", views.policy_delete, name="firewall-policy-delete"),
    path("<int:policy_id>/presets", views.preset_apply, name="firewall-preset"),
    path(
        "<int:policy_id>/presets/preview", views.preset_preview_page, name="firewall-preset-preview"
    ),
    path("<int:policy_id>/try", views.try_call, name="firewall-try"),
    path("<int:policy_id>/publish", views.policy_publish, name="firewall-publish"),
    path("<int:policy_id>/rollback", views.policy_rollback, name="firewall-rollback"),
    path("<int:policy_id>/draft", views.policy_draft_import_page, name="firewall-draft-import"),
    path("<int:policy_id>/diff", views.policy_diff_page, name="firewall-diff"),
    path("<int:policy_id>/versions/<int:number>/", views.version_page, name="firewall-version"),
    path("<int:policy_id>/rules/new", views.rule_new, name="firewall-rule-new"),
    path("rules/<int:rule_id>/", views.rule_edit, name="firewall-rule"),
    path("rules/<int:rule_id>/move", views.rule_move, name="firewall-rule-move"),
    path("rules/<int:rule_id>/delete", views.rule_delete, name="firewall-rule-delete"),
]
