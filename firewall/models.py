"""Firewall policies, their draft rules and published versions, per organisation, and their matches.

A policy's `Rule` rows are its draft: every edit changes them and nothing else. What decides is the
policy's published `PolicyVersion`, a numbered, immutable copy of the draft taken by a publish.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from console.models import Organisation


class Policy(models.Model):
    """An ordered list of rules and a default verdict; an organisation evaluates calls with its active one.

    `default_verdict` and the rules are the draft; `published` is the version that decides.
    """

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="firewall_policies"
    )
    name = models.CharField(max_length=100)
    default_verdict = models.CharField(max_length=32, default="allow")
    active = models.BooleanField(default=False)
    # `revision` counts changes to the draft, for people; it changes in the same transaction as
    # every change to the policy or its rules. What decides is `published`, replaced by a publish.
    revision = models.PositiveIntegerField(default=1)
    published = models.ForeignKey(
        "PolicyVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Replaced by every change to the draft and cleared by a publish: while set, the draft may
    # decide otherwise than the published version, and it runs in shadow beside every live
    # decision (recorded, never enforced); it keys the draft's compiled copy.
    draft_key = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "name"], name="policy_name_per_org"),
            models.UniqueConstraint(
                fields=["organisation"],
                condition=models.Q(active=True),
                name="one_active_policy_per_org",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class PolicyVersion(models.Model):
    """A published version of a policy: numbered from 1 per policy, immutable, who and when.

    It holds the rules exactly as they decide (each with the id of its draft row, which stays the
    rule's identity from version to version) and the default verdict. `key` is unique even when a
    database reuses ids, so it keys compiled copies: a key always means the same content.
    A rollback is a new version whose content is a copy of an older one (`copied_from`).
    """

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="firewall_policy_versions"
    )
    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    key = models.UUIDField(default=uuid.uuid4, unique=True)
    default_verdict = models.CharField(max_length=32)
    rules = models.JSONField(default=list)
    digest = models.CharField(max_length=64)
    note = models.CharField(max_length=300, blank=True)
    copied_from = models.PositiveIntegerField(null=True, blank=True)
    published_by = models.CharField(max_length=200)
    published_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-number"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "number"], name="one_number_per_version"),
        ]

    def __str__(self) -> str:
        return f"{self.policy_id} v{self.number}"

    def save(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        if not self._state.adding:
            raise ValueError("a published version is never changed: publish a new one")
        super().save(*args, **kwargs)


class Rule(models.Model):
    """One rule of a policy's draft: its JSON (`spec`, exactly as the policy format writes it, without `id`) and its order."""

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="firewall_rules"
    )
    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="rules")
    priority = models.IntegerField()
    name = models.CharField(max_length=200)
    spec = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["priority", "id"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "name"], name="rule_name_per_policy"),
        ]

    def __str__(self) -> str:
        return self.name

    def as_json(self) -> dict:
        return {"id": self.pk, **self.spec}


class RuleMatchCount(models.Model):
    """Matches of a rule in one hour, enforcing or in shadow: the editor shows the last hour and day."""

    rule = models.ForeignKey(Rule, on_delete=models.CASCADE, related_name="match_counts")
    hour = models.DateTimeField()
    mode = models.CharField(max_length=8)
    count = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["rule", "hour", "mode"], name="one_count_per_hour")
        ]


class MatcherShard(models.Model):
    """One row per shard of the event outbox: a worker locks it while it drains that shard."""

    shard = models.PositiveSmallIntegerField(primary_key=True)
    drained_at = models.DateTimeField(null=True, blank=True)
    events_matched = models.PositiveBigIntegerField(default=0)


class SequenceState(models.Model):
    """The sequence rules' partial progress in one session of one agent: `{rule id: state}`.

    One row per session, so a batch reads and writes one row for each session it touches,
    whatever the number of rules; each state is bounded by its rule's steps.
    """

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE)
    agent = models.CharField(max_length=128, blank=True)
    session = models.CharField(max_length=128, blank=True)
    states = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "agent", "session"], name="one_state_per_session"
            )
        ]


class SequenceAlert(models.Model):
    """A completed chain: raised once per rule, session and completing event, however often retried."""

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE)
    rule = models.ForeignKey(Rule, null=True, on_delete=models.SET_NULL, related_name="alerts")
    rule_ref = models.BigIntegerField(help_text="the rule's id, kept when the rule is deleted")
    rule_name = models.CharField(max_length=200)
    agent = models.CharField(max_length=128, blank=True)
    session = models.CharField(max_length=128, blank=True)
    last_event_id = models.BigIntegerField()
    event = models.OneToOneField(
        "console.Event", on_delete=models.CASCADE, related_name="sequence_alert"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["rule_ref", "agent", "session", "last_event_id"],
                name="one_alert_per_chain",
            )
        ]
