"""Routes of the tool check's API under /v1/."""

from __future__ import annotations

from django.urls import path

from guard.api import views

urlpatterns = [
    # The decision endpoint first: routes are tried in order on every request.
    path(
        "sessions/<uuid:session_id>/check",
        views.SessionCheckView.as_view(),
        name="api-session-check",
    ),
    path("sessions", views.SessionListView.as_view(), name="api-sessions"),
    path(
        "sessions/<uuid:session_id>/record",
        views.SessionRecordView.as_view(),
        name="api-session-record",
    ),
    path(
        "sessions/<uuid:session_id>/read", views.SessionReadView.as_view(), name="api-session-read"
    ),
    path(
        "sessions/<uuid:session_id>/undo", views.SessionUndoView.as_view(), name="api-session-undo"
    ),
    path(
        "sessions/<uuid:session_id>/execute",
        views.SessionExecuteView.as_view(),
        name="api-session-execute",
    ),
    path(
        "sessions/<uuid:session_id>/effects",
        views.SessionEffectView.as_view(),
        name="api-session-effects",
    ),
    path("approvals", views.ApprovalListView.as_view(), name="api-approvals"),
    path("approvals/<uuid:approval_id>", views.ApprovalDetailView.as_view(), name="api-approval"),
    path(
        "approvals/<uuid:approval_id>/approve",
        views.ApprovalAnswerView.as_view(),
        name="api-approval-approve",
    ),
    path(
        "approvals/<uuid:approval_id>/deny",
        views.ApprovalDenyView.as_view(),
        name="api-approval-deny",
    ),
]
