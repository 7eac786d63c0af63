"""Routes of the proofs' API under /v1/."""

from __future__ import annotations

from django.urls import path

from proof.api import views

urlpatterns = [
    path("proofs", views.ProofListView.as_view(), name="api-proofs"),
    path("proofs/<uuid:job_id>", views.ProofDetailView.as_view(), name="api-proof"),
    path(
        "proofs/<uuid:job_id>/report.<str:fmt>",
        views.ProofReportView.as_view(),
        name="api-proof-report",
    ),
]
