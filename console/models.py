"""Organisations, the people in them and their roles, API keys, settings, audit rows and events."""

from __future__ import annotations

import datetime as dt
import secrets

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"
    EDITOR = "editor", "Editor"
    APPROVER = "approver", "Approver"
    AUDITOR = "auditor", "Auditor"


class Organisation(models.Model):
    """A tenant: every object of the product belongs to exactly one."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=60, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "organisation"], name="one_membership_per_person"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.organisation} as {self.role}"


class Invitation(models.Model):
    """An organisation's offer of a role to a person; the membership is made only when they accept.

    The admin names the person by user name or e-mail (`identifier`, as typed). `user` is the
    account it matched, if any: the inviting organisation never sees it, so an invitation says
    nothing about whether, or whom, it reached until the person answers.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "waiting for the person"
        ACCEPTED = "accepted", "accepted"
        DECLINED = "declined", "declined"
        CANCELLED = "cancelled", "cancelled"
        EXPIRED = "expired", "expired"

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="invitations"
    )
    identifier = models.CharField(max_length=254)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="invitations",
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "identifier"],
                condition=models.Q(status="pending"),
                name="one_open_invitation_per_identifier",
            )
        ]

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.PENDING and timezone.now() < self.expires_at


class ApiKey(models.Model):
    """A key for programs: it belongs to one organisation, acts with one role, and is kept only as a hash.

    Every key has an owner, a person of its organisation; the key's requests count as theirs, so
    neither the key nor its owner answers them. A key answers confirm prompts only when an admin
    made it to (`may_approve`), and then only while its owner is an approver or admin.
    """

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="api_keys"
    )
    name = models.CharField(max_length=100)
    role = models.CharField(max_length=16, choices=Role.choices)
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64)
    created_by_id = models.IntegerField(null=True, blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="api_keys",
    )
    may_approve = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def _new_secret() -> str:
    return secrets.token_hex(32)


def _default_licence_end() -> dt.date:
    return timezone.now().date() + dt.timedelta(days=365)


class Language(models.TextChoices):
    EN = "en", "English"
    PT_BR = "pt-BR", "Português do Brasil"


class OnUnread(models.TextChoices):
    REFUSE = "refuse", "refuse: end the turn with a refusal, no model is called"
    MODEL = "model", "model: send the turn to the agent's model, every call it asks for is checked"
    ASK = "ask", "ask: ask the person whether the model may have the turn"
    ANSWER = "answer", "answer: answer from the organisation's documents, or refuse"


class TaintPolicy(models.TextChoices):
    CONFIRM = "confirm", "confirm: a write after outside content waits for a person"
    REFUSE = "refuse", "refuse: a write after outside content is refused"


class SaidMode(models.TextChoices):
    """The modes of S1, S2 and the confirmation reading (`router.engine.said.MODES`)."""

    OFF = "off", "off: the check does not run"
    REFUSE = "refuse", "refuse: a hard stop, the call is refused"
    CONFIRM = "confirm", "confirm: the call waits for the person, who is shown why"


class GroundedMode(models.TextChoices):
    """`grounded` asks or stays silent: it never allows and never refuses."""

    OFF = "off", "off: the check does not run"
    CONFIRM = "confirm", "confirm: a value nobody said and no tool returned is asked about"


class LicenceOnLapse(models.TextChoices):
    REFUSE_WRITES = "refuse_writes", "refuse writes, reads still run"
    REFUSE_ALL = "refuse_all", "refuse every call"


#: The settings of the checks of what was said, in the order the guardrail checks page lists them.
SAID_FIELDS = ("grounded", "s1_veto", "s2_veto", "confirm_read")


class OrganisationSettings(models.Model):
    """What the Settings page edits; the engines read these on every call."""

    organisation = models.OneToOneField(
        Organisation, on_delete=models.CASCADE, primary_key=True, related_name="settings"
    )
    language = models.CharField(max_length=8, choices=Language.choices, default=Language.EN)
    on_unread = models.CharField(max_length=8, choices=OnUnread.choices, default=OnUnread.REFUSE)
    taint_policy = models.CharField(
        max_length=8, choices=TaintPolicy.choices, default=TaintPolicy.CONFIRM
    )
    # The checks of what was said (the guardrail checks page): S1, S2 and the confirmation reading
    # read the person's latest turn; `grounded` the turns and the results. Default `confirm`.
    s1_veto = models.CharField(max_length=8, choices=SaidMode.choices, default=SaidMode.CONFIRM)
    s2_veto = models.CharField(max_length=8, choices=SaidMode.choices, default=SaidMode.CONFIRM)
    confirm_read = models.CharField(
        max_length=8, choices=SaidMode.choices, default=SaidMode.CONFIRM
    )
    grounded = models.CharField(
        max_length=8, choices=GroundedMode.choices, default=GroundedMode.CONFIRM
    )
    licence_valid_until = models.DateField(default=_default_licence_end)
    licence_on_lapse = models.CharField(
        max_length=16, choices=LicenceOnLapse.choices, default=LicenceOnLapse.REFUSE_WRITES
    )
    compiled_records_only = models.BooleanField(default=False)
    notify_url = models.URLField(
        blank=True, help_text="Where sequence alerts that say `notify` are POSTed, signed."
    )
    notify_secret = models.CharField(max_length=64, default=_new_secret)
    approval_timeout_minutes = models.PositiveIntegerField(
        default=15,
        validators=[MinValueValidator(1), MaxValueValidator(7 * 24 * 60)],
        help_text="How long a confirm prompt waits for a person before it expires.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    def said_modes(self) -> dict[str, str]:
        """The modes of the checks of what was said, as `router.engine.said_checks(modes=...)`."""
        return {name: getattr(self, name) for name in SAID_FIELDS}

    def licence_lapsed(self, today: dt.date | None = None) -> bool:
        return (today or timezone.now().date()) > self.licence_valid_until


class AppendOnlyError(Exception):
    """Raised when code tries to change or remove an audit row."""


class AuditRowQuerySet(models.QuerySet):
    def update(self, **kwargs):  # noqa: ANN003, ANN201
        raise AppendOnlyError("audit rows are append-only: they cannot be updated")

    def delete(self):  # noqa: ANN201
        raise AppendOnlyError("audit rows are append-only: they cannot be deleted")

    def bulk_create(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        raise AppendOnlyError("audit rows are written one at a time by audit_record")

    def bulk_update(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        raise AppendOnlyError("audit rows are append-only: they cannot be updated")


class AuditRow(models.Model):
    """One change, chained to the row before it in its organisation by a keyed hash (HMAC-SHA256)."""

    organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="audit_rows"
    )
    seq = models.PositiveBigIntegerField()
    at = models.DateTimeField()
    actor = models.CharField(max_length=200)
    actor_id = models.IntegerField(null=True, blank=True)
    action = models.CharField(max_length=64)
    object_type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=64)
    changes = models.JSONField(default=dict)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    objects = AuditRowQuerySet.as_manager()

    class Meta:
        ordering = ["-seq"]
        constraints = [
            models.UniqueConstraint(fields=["organisation", "seq"], name="one_audit_row_per_seq")
        ]
        indexes = [models.Index(fields=["organisation", "at"])]

    def save(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        if not self._state.adding:
            raise AppendOnlyError("audit rows are append-only: they cannot be updated")
        return super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        raise AppendOnlyError("audit rows are append-only: they cannot be deleted")


class AuditCheckpoint(models.Model):
    """The signed head of an organisation's audit chain: its length and its last row's hash.

    It lives outside the rows, is rewritten with every row appended (in the row's transaction),
    and is signed with the audit key, which the database does not hold: rows removed from the
    tail, or added behind the chain's back, no longer agree with it, and it cannot be re-signed
    without the key.
    """

    organisation = models.OneToOneField(
        Organisation, on_delete=models.PROTECT, related_name="audit_checkpoint"
    )
    length = models.PositiveBigIntegerField()
    head = models.CharField(max_length=64)
    signature = models.CharField(max_length=64)
    at = models.DateTimeField()


class Decision(models.TextChoices):
    ALLOW = "allow", "allow"
    CONFIRM = "confirm", "confirm"
    REFUSE = "refuse", "refuse"


class MatchState(models.TextChoices):
    """Where an event stands with the sequence matchers (the events table is their outbox)."""

    PENDING = "pending", "waiting for a worker"
    MATCHED = "matched", "matched against the sequence rules"
    UNREADABLE = "unreadable", "kept, but the matcher could not read it"
    SKIPPED = "skipped", "not matcher input (an alert)"


SHARDS = 8


class Event(models.Model):
    """A decision made on the path of a call (firewall, tool check, router), as the event feed shows it."""

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(default=timezone.now)
    source = models.CharField(max_length=32)
    session = models.CharField(max_length=128, blank=True)
    agent = models.CharField(max_length=128, blank=True)
    tool = models.CharField(max_length=200, blank=True)
    stage = models.CharField(max_length=32, blank=True)
    decision = models.CharField(max_length=16, choices=Decision.choices)
    verdict = models.CharField(max_length=32, blank=True)
    reasons = models.JSONField(default=list)
    rule = models.CharField(max_length=200, blank=True)
    detail = models.JSONField(default=dict)
    # The framework's run and thread the call was made in (LangGraph's run id and thread_id, the
    # Agents SDK's trace and group ids), as the door gave them: shown and filtered on the feed.
    run_id = models.CharField(max_length=128, blank=True)
    thread_id = models.CharField(max_length=128, blank=True)
    is_alert = models.BooleanField(default=False)
    # The sequence matchers' outbox: workers take pending events by shard, in id order.
    match_state = models.CharField(
        max_length=12, choices=MatchState.choices, default=MatchState.PENDING
    )
    match_note = models.CharField(max_length=300, blank=True)
    shard = models.PositiveSmallIntegerField(default=0)
    # A decision-log record's own id (`POST /v1/decisions`): a record sent twice is stored once.
    # Unique within its organisation: another organisation's key cannot take an id first.
    record_id = models.UUIDField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["match_state", "shard", "id"]),
            models.Index(fields=["organisation", "is_alert", "at"]),
            models.Index(fields=["organisation", "at"]),
            models.Index(fields=["organisation", "agent", "at"]),
            models.Index(fields=["organisation", "tool", "at"]),
            models.Index(fields=["organisation", "decision", "at"]),
            models.Index(fields=["organisation", "thread_id", "at"], name="event_thread_at"),
            models.Index(fields=["organisation", "run_id", "at"], name="event_run_at"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "record_id"], name="one_event_per_record_id"
            ),
        ]


class WorkerPing(models.Model):
    """Written by the health task, so the health page knows that a worker took a task from the broker."""

    nonce = models.CharField(max_length=64, unique=True)
    hostname = models.CharField(max_length=200)
    at = models.DateTimeField(default=timezone.now)


class SessionHold(models.Model):
    """A session in which every later write needs a person's approval (a sequence rule's `hold_session`)."""

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="holds")
    agent = models.CharField(max_length=128, blank=True)
    session = models.CharField(max_length=128)
    reason = models.CharField(max_length=300)
    alert = models.ForeignKey(Event, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    released_at = models.DateTimeField(null=True, blank=True)
    released_by = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "agent", "session"],
                condition=models.Q(released_at__isnull=True),
                name="one_open_hold_per_session",
            )
        ]


class ToolSwitch(models.Model):
    """A tool switched off for one agent (a sequence rule's `disable_tool`) until someone turns it on."""

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="tool_switches"
    )
    agent = models.CharField(max_length=128, blank=True)
    tool = models.CharField(max_length=200)
    reason = models.CharField(max_length=300)
    alert = models.ForeignKey(Event, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    enabled_at = models.DateTimeField(null=True, blank=True)
    enabled_by = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "agent", "tool"],
                condition=models.Q(enabled_at__isnull=True),
                name="one_open_switch_per_tool",
            )
        ]


class Notification(models.Model):
    """A signed HTTP POST of an alert, retried with backoff; every attempt is recorded."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        DELIVERED = "delivered", "delivered"
        FAILED = "failed", "failed"

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="notifications"
    )
    alert = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="notifications")
    url = models.URLField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True)
    response_code = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["alert", "url"], name="one_notification_per_alert")
        ]


class Gateway(models.Model):
    """An MCP gateway (`stalwart gateway`) as it last reported itself: its servers and their tools.

    `servers` is what the gateway sends at start and on every change, validated and bounded by
    `console.gateways.read_report`: `{server: {"state": "connected" | "down", "error": str,
    "tools": [{"name", "digest", "kind", "status": "pinned" | "withdrawn", "why", "diff"}]}}`.
    One row per gateway instance: two gateways of one `name` (one agent, two machines or two
    folders) are told apart by `instance`, the id each keeps beside its pins file, and `host`,
    the machine it said it runs on (`""` for a gateway from before instances).
    """

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="gateways"
    )
    name = models.CharField(max_length=100)
    instance = models.CharField(max_length=64, blank=True, default="")
    host = models.CharField(max_length=255, blank=True, default="")
    servers = models.JSONField(default=dict)
    reported_by = models.CharField(max_length=200, blank=True)
    first_reported_at = models.DateTimeField(default=timezone.now)
    reported_at = models.DateTimeField(default=timezone.now)
    #: When the gateway said it was stopping (its last report, `state: stopped`); None while it
    #: runs. A gateway that vanished without saying so is told by `reported_at` growing old.
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name", "instance"]
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "name", "instance"], name="one_gateway_per_instance"
            )
        ]

    def __str__(self) -> str:
        return self.name


class BundleKeyGeneration(models.Model):
    """One rotation of an organisation's bundle key: generation N (1, 2, ...) replaces N - 1.

    No row is generation 0, the key of before any rotation. The private key is never stored: it
    is derived from the server's bundle secret, the organisation and the generation (a leaked key
    of one generation tells nothing of another); see `console/bundles.py`.
    """

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="bundle_keys"
    )
    generation = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "generation"], name="one_bundle_key_per_generation"
            )
        ]
        ordering = ["organisation", "-generation"]
