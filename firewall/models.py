"""Firewall policies and their rules, stored per organisation, and how often each rule matched."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from console.models import Organisation


class Policy(models.Model):
    """An ordered list of rules and a default verdict; an organisation evaluates calls with its active one."""

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="firewall_policies"
    )
    name = models.CharField(max_length=100)
    default_verdict = models.CharField(max_length=32, default="allow")
    active = models.BooleanField(default=False)
    # Both change in the same transaction as every change to the policy or its rules: `revision`
    # counts changes for people, `version` keys compiled copies (unique even if an id is reused).
    revision = models.PositiveIntegerField(default=1)
    version = models.UUIDField(default=uuid.uuid4)
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


class Rule(models.Model):
    """One rule: its JSON (`spec`, exactly as the policy format writes it, without `id`) and its order."""

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
