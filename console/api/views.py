"""The console's API views: parse, check the role, call one service or selector, render."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from console import selectors, services
from console.access import actor_for_request, get_object_for_actor, require
from console.api.pagination import Pages
from console.api.serializers import (
    AuditRowPageSerializer,
    AuditRowSerializer,
    EventPageSerializer,
    EventSerializer,
    HealthSerializer,
    SettingsSerializer,
)
from console.health import health_report
from console.models import Event

ORG_PARAM = OpenApiParameter(
    "X-Stalwart-Organisation",
    location=OpenApiParameter.HEADER,
    required=False,
    description="For a signed-in person in several organisations: the id or slug of the one meant.",
)


class SettingsView(APIView):
    @extend_schema(parameters=[ORG_PARAM], responses=SettingsSerializer)
    def get(self, request):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "settings.read")
        obj = services.settings_get(organisation=actor.organisation)
        return Response(SettingsSerializer(obj).data)

    @extend_schema(parameters=[ORG_PARAM], request=SettingsSerializer, responses=SettingsSerializer)
    def put(self, request):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "settings.write")
        obj = services.settings_get(organisation=actor.organisation)
        if not isinstance(request.data, dict):
            raise ValidationError({"non_field_errors": ["the body must be a JSON object"]})
        serializer = SettingsSerializer(obj, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        obj = services.settings_update(actor=actor, data=dict(serializer.validated_data))
        return Response(SettingsSerializer(obj).data)


def _filter_params(request, cls):  # noqa: ANN001, ANN202
    try:
        return cls.from_params(request.query_params)
    except selectors.FilterError as exc:
        raise ValidationError({exc.field: [exc.message]}) from exc


class EventListView(APIView):
    @extend_schema(
        parameters=[ORG_PARAM]
        + [
            OpenApiParameter(name, str, required=False)
            for name in (
                "since",
                "until",
                "agent",
                "session",
                "tool",
                "decision",
                "verdict",
                "rule",
                "alerts",
                "after",
                "run",
                "thread",
            )
        ],
        responses=EventPageSerializer,
        operation_id="events_list",
    )
    def get(self, request):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "events.read")
        filters = _filter_params(request, selectors.EventFilters)
        qs = selectors.event_list(organisation=actor.organisation, filters=filters)
        paginator = Pages()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(EventSerializer(page, many=True).data)


class EventDetailView(APIView):
    @extend_schema(parameters=[ORG_PARAM], responses=EventSerializer)
    def get(self, request, event_id: int):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "events.read")
        event = get_object_for_actor(Event, actor, pk=event_id)
        return Response(EventSerializer(event).data)


class AuditListView(APIView):
    @extend_schema(
        parameters=[ORG_PARAM]
        + [
            OpenApiParameter(name, str, required=False)
            for name in ("since", "until", "actor", "action", "object_type")
        ],
        responses=AuditRowPageSerializer,
        operation_id="audit_list",
    )
    def get(self, request):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "audit.read")
        filters = _filter_params(request, selectors.AuditFilters)
        qs = selectors.audit_list(organisation=actor.organisation, filters=filters)
        paginator = Pages()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(AuditRowSerializer(page, many=True).data)


class HealthView(APIView):
    @extend_schema(responses={200: HealthSerializer, 503: HealthSerializer})
    def get(self, request):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "health.read")
        report = health_report()
        code = status.HTTP_200_OK if report["ok"] else status.HTTP_503_SERVICE_UNAVAILABLE
        return Response(report, status=code)


class WhoAmIView(APIView):
    """Who the request acts as; it reads nothing else, so it is also the stack's cost alone.

    `benchmarks/http` measures it beside the decision endpoints, as the authenticated no-op of the
    same stack (middleware, key authentication, DRF, JSON rendering).
    """

    @extend_schema(
        parameters=[ORG_PARAM],
        responses=inline_serializer(
            "WhoAmI",
            {
                "organisation": serializers.CharField(),
                "organisation_id": serializers.CharField(),
                "role": serializers.CharField(),
                "label": serializers.CharField(),
            },
        ),
    )
    def get(self, request):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        organisation = actor.organisation
        return Response(
            {
                "organisation": organisation.slug,
                # Its id and the microsecond it was made: never another organisation's, even on a
                # console whose database was made again (ids given anew), and kept by a rename.
                "organisation_id": f"{organisation.pk}.{int(organisation.created_at.timestamp() * 1e6)}",
                "role": actor.role,
                "label": actor.label,
            }
        )
