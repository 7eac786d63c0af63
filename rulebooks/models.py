"""Rulebooks of an organisation and their saved versions: the source, its SHA-256 and its record."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from console.models import Organisation


class Rulebook(models.Model):
    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="rulebooks"
    )
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "name"], name="rulebook_name_per_org")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def latest(self) -> RulebookVersion | None:
        return self.versions.order_by("-number").first()


class RulebookVersion(models.Model):
    """One upload that compiled: never changed afterwards, so two versions can be compared."""

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE)
    rulebook = models.ForeignKey(Rulebook, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    filename = models.CharField(max_length=200)
    format = models.CharField(max_length=32)
    source = models.BinaryField(help_text="the bytes uploaded (empty for a compiled record)")
    sha256 = models.CharField(max_length=64)
    record = models.JSONField()
    uploaded_by = models.CharField(max_length=200)
    uploaded_by_id = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-number"]
        constraints = [
            models.UniqueConstraint(fields=["rulebook", "number"], name="one_version_number")
        ]
