"""`POST /v1/decisions`: a runtime's batch of decision-log records, stored in the event feed once."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from console import services
from console.access import actor_for_request, require
from console.api.malformed import RecordsMalformedCalls
from console.api.views import ORG_PARAM
from console.decisions import Unreadable, max_batch, unreadable_event


class DecisionsView(RecordsMalformedCalls, APIView):
    def record_malformed(self, request, refused, **kwargs):  # noqa: ANN001, ANN003, ANN201
        """A body that cannot be read at all is kept as one unreadable record."""
        actor = actor_for_request(request)
        require(actor, "guard.check")
        services.event_record(
            organisation=actor.organisation,
            **unreadable_event(refused.storable, Unreadable(refused.field, refused.problem)),
        )

    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT
    )
    def post(self, request):  # noqa: ANN001, ANN201
        """Store `{"records": [...]}`: `stored`, `duplicates` (ids already stored) and
        `unreadable` (each refused record's index, id, field path and problem; still kept)."""
        actor = actor_for_request(request)
        require(actor, "guard.check")
        data = request.data
        if not isinstance(data, dict):
            raise ValidationError({"non_field_errors": ["the body must be a JSON object"]})
        extra = sorted(set(data) - {"records"})
        if extra:
            raise ValidationError({name: ["not a field here"] for name in extra})
        records = data.get("records")
        if not isinstance(records, list) or not records:
            raise ValidationError({"records": ["a list of one or more records"]})
        if len(records) > max_batch():
            raise ValidationError(
                {"records": [f"{len(records)} records, more than {max_batch()} in one batch"]}
            )
        return Response(services.decisions_ingest(actor=actor, records=records))
