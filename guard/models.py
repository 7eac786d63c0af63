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
    # The point the history must end at (`{session, length, mac}`), kept beside it and written in
    # the same save: a history cut short, emptied or swapped for another session's does not verify.
    head = models.JSONField(default=dict)
    turns = models.JSONField(default=list)
    # What the session was opened with beyond the organisation's settings: only ever stricter
    # (`guard.services.session_settings`).
    settings = models.JSONField(default=dict, blank=True)
    # Where the current run began in the history: the writes from here on are the run's, undone
    # last first when a call of the run is refused (`guard.services.session_undo_plan`).
    run_from = models.PositiveIntegerField(default=0)
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
    # Who asked, when a key asked: the key, and the person who owns it. Neither may answer.
    requested_by_key_id = models.IntegerField(null=True, blank=True)
    requested_by_owner_id = models.IntegerField(null=True, blank=True)
    requested_for = models.CharField(max_length=150, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    answered_by = models.CharField(max_length=200, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    token = models.TextField(blank=True)
    # A firewall token is spent by the one call it lets through.
    token_spent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organisation", "status", "created_at"])]

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.PENDING and timezone.now() < self.expires_at


class Effect(models.Model):
    """The executor's ledger: one row per intent, written before the effect, keyed by the intent.

    A row is `claimed` before the tool is called and `done` once its result is known; a retry finds
    the row and gets the recorded result instead of a second effect. A `claimed` row found by a
    later attempt means an earlier one may have had its effect: the tool is called again with the
    same key only when it replays keys (`idempotent`), and the outcome is UNCERTAIN otherwise.
    """

    class Status(models.TextChoices):
        CLAIMED = "claimed", "claimed"
        DONE = "done", "done"
        FAILED = "failed", "failed"
        BLOCKED = "blocked", "blocked"

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="effects")
    key = models.CharField(max_length=80)
    session = models.ForeignKey(
        GuardSession, null=True, blank=True, on_delete=models.CASCADE, related_name="effects"
    )
    agent = models.CharField(max_length=128)
    tool = models.CharField(max_length=200)
    arguments = models.JSONField(help_text="redacted")
    compensation_of = models.IntegerField(null=True, blank=True)
    step = models.IntegerField(default=0, help_text="the session's step the key was derived at")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.CLAIMED)
    result = models.JSONField(null=True, blank=True)
    history_index = models.IntegerField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    replays = models.PositiveIntegerField(default=0)
    error = models.CharField(max_length=300, blank=True)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "key"], name="effect_key_once")
        ]


class CheckedWrite(models.Model):
    """A write `/check` allowed and not yet reported: the host runs such a tool itself.

    Until `/record` reports the call (or `expires_at` passes: the session's token lifetime) it
    counts towards the tool's `at_most`, a `spend` over the run and the run's `cap_cost`, as a write
    the executor began (an `Effect` still claimed) does; only tools with one of those are kept.
    """

    session = models.ForeignKey(
        GuardSession, on_delete=models.CASCADE, related_name="checked_writes"
    )
    tool = models.CharField(max_length=200)
    arguments = models.JSONField(help_text="redacted")
    # SHA-256 of the canonical arguments as given: the record of the call finds it by them.
    digest = models.CharField(max_length=64)
    # The intent's key (`engine.execution.intent_key`): a re-check of the same call has the same.
    intent = models.CharField(max_length=80)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["session", "expires_at"]),
            models.Index(fields=["expires_at"], name="guard_checked_expires_idx"),
        ]


class PendingStep(models.Model):
    """The outbox of a write's secondary steps (its audit trail, a notification).

    Written in the transaction that marks the effect done; a step that failed is reconciled by a
    Celery task, which runs that step again and never the main write.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        DONE = "done", "done"
        GAVE_UP = "gave_up", "gave up"

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="pending_steps"
    )
    effect = models.ForeignKey(Effect, on_delete=models.CASCADE, related_name="steps")
    name = models.CharField(max_length=300, help_text="the step's dotted path")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    last_error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "next_attempt_at"])]


class ToolCounter(models.Model):
    """One counter of the executor's panel, per organisation and tool."""

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="tool_counters"
    )
    tool = models.CharField(max_length=200)
    name = models.CharField(max_length=40)
    value = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "tool", "name"], name="counter_once")
        ]


class WriteSwitch(models.Model):
    """Writes switched off (or back on) for one tool, or for every tool when `tool` is empty.

    Reads stay available whatever the switches say: the field notebook's rollback to read-only.
    """

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="write_switches"
    )
    tool = models.CharField(max_length=200, blank=True)
    writes_enabled = models.BooleanField(default=True)
    changed_by = models.CharField(max_length=200)
    changed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "tool"], name="write_switch_once")
        ]
