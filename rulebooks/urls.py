"""Routes of the Rulebooks pages under /rulebooks/."""

from __future__ import annotations

from django.urls import path

from rulebooks import views

urlpatterns = [
    path("", views.rulebooks_page, name="rulebooks"),
    path("<int:rulebook_id>/", views.rulebook_page, name="rulebook"),
    path("<int:rulebook_id>/compare", views.compare_page, name="rulebook-compare"),
    path("<int:rulebook_id>/v/<int:number>/", views.version_page, name="rulebook-version"),
    path(
        "<int:rulebook_id>/v/<int:number>/record.json",
        views.record_download,
        name="rulebook-record",
    ),
]
