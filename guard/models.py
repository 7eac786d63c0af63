"""Sessions of agents checked by the console: the catalogue, the rulebook record, the history."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from console.models import Organisation


class GuardSession(models.Model):
    """One conversation of one agent; its history is signed with a key only the server holds."""

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="guard_sessions"
    )
    public_id = models.UUIDField(default=uuid.uuid4, unique=True)
    agent = models.CharField(max_length=128)
    catalogue = models.JSONField()
    rulebook = models.JSONField(null=True, blank=True)
    history = models.JSONField(default=dict)
    turns = models.JSONField(default=list)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)


class ApprovalRequest(models.Model):
    """A call that waits for a person: approving it issues the signed token for exactly that call."""

    class Status(models.TextChoices):
        PENDING = "pending", "waiting"
        APPROVED = "approved", "approved"
        DENIED = "denied", "denied"
        EXPIRED = "expired", "expired"

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="approval_requests"
    )
    public_id = models.UUIDField(default=uuid.uuid4, unique=True)
    session = models.ForeignKey(
        GuardSession, null=True, blank=True, on_delete=models.CASCADE, related_name="approvals"
    )
    source = models.CharField(max_length=16, default="toolcheck")  # or "firewall"
    agent = models.CharField(max_length=128)
    tool = models.CharField(max_length=200)
    call = models.JSONField(help_text="the call exactly as checked: the token covers it")
    origins = models.JSONField(default=dict)
    reasons = models.JSONField(default=list)
    rule = models.CharField(max_length=200, blank=True)
    detail = models.JSONField(default=dict)
    history_at = models.PositiveIntegerField(default=0)
    requested_by = models.CharField(max_length=200)
    requested_by_id = models.IntegerField(null=True, blank=True)
    requested_for = models.CharField(max_length=150, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    answered_by = models.CharField(max_length=200, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    token = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organisation", "status", "created_at"])]

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.PENDING and timezone.now() < self.expires_at
