"""Routes of the rulebooks' API under /v1/."""

from __future__ import annotations

from django.urls import path

from rulebooks.api import views

urlpatterns = [
    path("rulebooks/compile", views.CompileView.as_view(), name="api-rulebooks-compile"),
    path(
        "rule-sheets/compile", views.RuleSheetCompileView.as_view(), name="api-rule-sheets-compile"
    ),
    path("rulebooks", views.RulebookListView.as_view(), name="api-rulebooks"),
    path(
        "rulebooks/<int:rulebook_id>/versions/<int:number>",
        views.RulebookVersionView.as_view(),
        name="api-rulebook-version",
    ),
]
