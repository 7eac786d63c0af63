"""Routes of the Proofs pages under /proofs/."""

from __future__ import annotations

from django.urls import path

from proof import views

urlpatterns = [
    path("", views.proofs_page, name="proofs"),
    path("rules/", views.rules_page, name="proof-rules"),
    path("rules/<str:rule_id>", views.rule_page, name="proof-rule"),
    path("<uuid:job_id>/", views.proof_page, name="proof"),
    path("<uuid:job_id>/report.<str:fmt>", views.report_download, name="proof-report"),
]
