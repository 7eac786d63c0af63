"""Routes of the approvals page under /approvals/."""

from __future__ import annotations

from django.urls import path

from guard import views

urlpatterns = [
    path("", views.approvals_page, name="approvals"),
    path("<uuid:approval_id>/approve", views.approve, name="approval-approve"),
    path("<uuid:approval_id>/deny", views.deny, name="approval-deny"),
]
