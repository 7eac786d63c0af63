"""Serializers of the console's API; unknown fields are refused, never ignored."""

from __future__ import annotations

from rest_framework import serializers

from console.models import AuditRow, Event, OrganisationSettings


class StrictSerializerMixin:
    """Refuse fields the serializer does not declare, naming each one."""

    def to_internal_value(self, data):  # noqa: ANN001, ANN201
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))  # type: ignore[attr-defined]
            if unknown:
                raise serializers.ValidationError({name: ["not a field"] for name in unknown})
        return super().to_internal_value(data)  # type: ignore[misc]


class SettingsSerializer(StrictSerializerMixin, serializers.ModelSerializer):
    class Meta:
        model = OrganisationSettings
        fields = [
            "language",
            "on_unread",
            "taint_policy",
            "grounded",
            "s1_veto",
            "s2_veto",
            "confirm_read",
            "licence_valid_until",
            "licence_on_lapse",
            "compiled_records_only",
            "notify_url",
            "approval_timeout_minutes",
            "updated_at",
        ]
        read_only_fields = ["updated_at"]


class AuditRowSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditRow
        fields = [
            "id",
            "seq",
            "at",
            "actor",
            "action",
            "object_type",
            "object_id",
            "changes",
            "prev_hash",
            "hash",
        ]


class EventSerializer(serializers.ModelSerializer):
    class Meta:
        model = Event
        fields = [
            "id",
            "at",
            "source",
            "session",
            "agent",
            "tool",
            "stage",
            "decision",
            "verdict",
            "reasons",
            "rule",
            "detail",
            "is_alert",
            "run_id",
            "thread_id",
        ]


class HealthProbeSerializer(serializers.Serializer):
    name = serializers.CharField()
    ok = serializers.BooleanField()
    detail = serializers.CharField()


class HealthSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    checks = HealthProbeSerializer(many=True)


class _Page(serializers.Serializer):
    """A page of a list (`?limit=&offset=`): the count, the neighbours' URLs, the results."""

    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)


class EventPageSerializer(_Page):
    results = EventSerializer(many=True)


class AuditRowPageSerializer(_Page):
    results = AuditRowSerializer(many=True)
