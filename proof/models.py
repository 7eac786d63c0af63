"""Graph-proof jobs: what was submitted, where its proof stands, and the report it ended with."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from console.models import Organisation


class ProofJob(models.Model):
    """One proof of a graph, done on a worker; driven from this row, so nothing is lost.

    A job is `queued` until a worker claims it (`running`, with a lease the worker keeps renewing
    while it proves); it ends `passed` or `failed` (the gate's answer, with the report) or
    `error` (the proof could not be made). A worker lost mid-run leaves the lease to lapse: the
    sweeper queues the job again and the next claim is a new attempt. A job never ends `passed`
    without a report, and after the last attempt it ends `error`.
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        PASSED = "passed"
        FAILED = "failed"
        ERROR = "error"

    FINISHED = frozenset({Status.PASSED, Status.FAILED, Status.ERROR})

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="proof_jobs"
    )
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200)
    submitted_by = models.CharField(max_length=200)
    submitted_by_id = models.IntegerField(null=True, blank=True)
    graph = models.JSONField(help_text="the qls-graph/1 document, as submitted")
    catalogue = models.JSONField(null=True, blank=True)
    rulebook = models.JSONField(null=True, blank=True, help_text="a record, or a rulebook's text")
    session_steps = models.PositiveIntegerField(default=60, help_text="the depth proved to")
    turns = models.PositiveSmallIntegerField(default=3)
    digest = models.CharField(max_length=80, blank=True, help_text="of the document proved")
    nodes = models.PositiveIntegerField(default=0)
    edges = models.PositiveIntegerField(default=0)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    progress = models.PositiveSmallIntegerField(default=0, help_text="0 to 100")
    attempts = models.PositiveSmallIntegerField(default=0)
    lease_until = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    report = models.JSONField(null=True, blank=True, help_text="stalwart-verify/1")
    report_text = models.TextField(blank=True)
    report_sarif = models.JSONField(null=True, blank=True)
    findings_count = models.PositiveIntegerField(default=0)
    failing_count = models.PositiveIntegerField(default=0)
    gate_passed = models.BooleanField(null=True, blank=True)
    stops_agent = models.BooleanField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "lease_until"], name="proofjob_status_lease")]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def live(self) -> bool:
        """Still to be answered: the page keeps asking while a job is queued or running."""
        return not self.finished
