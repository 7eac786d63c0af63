"""Reads of graph-proof jobs: always within one organisation (another's jobs do not exist)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from console.access import Actor, get_object_for_actor
from console.models import Organisation
from proof.models import ProofJob

#: The fields a list needs; the documents and reports stay in the database until a job is opened.
LIST_FIELDS = (
    "id",
    "organisation_id",
    "public_id",
    "name",
    "submitted_by",
    "session_steps",
    "turns",
    "digest",
    "nodes",
    "edges",
    "status",
    "progress",
    "attempts",
    "findings_count",
    "failing_count",
    "gate_passed",
    "stops_agent",
    "error",
    "created_at",
    "started_at",
    "finished_at",
)


class FilterError(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


def job_list(*, organisation: Organisation, status: str | None = None) -> QuerySet[ProofJob]:
    jobs = ProofJob.objects.filter(organisation=organisation).only(*LIST_FIELDS)
    if status:
        if status not in ProofJob.Status.values:
            raise FilterError(
                "status", f"`{status}` is not a status: {', '.join(ProofJob.Status.values)}"
            )
        jobs = jobs.filter(status=status)
    return jobs.order_by("-created_at", "-id")


def job_get(*, actor: Actor, job_id: Any) -> ProofJob:
    """The actor's organisation's job, or 404."""
    if job_id is None:
        raise Http404("no such job")
    return get_object_for_actor(ProofJob, actor, public_id=job_id)
