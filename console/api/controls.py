"""`/v1/controls`: the write switches, session holds and tools switched off, for runbooks and scripts.

The field notebook's first step in an incident, "switch `request_close` off and keep `read_order`",
is `PUT /v1/controls/writes {"tool": "request_close", "enabled": false}`. Each write goes through
the same service as the Tools page and the dashboard (and writes the same audit row).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from console import services
from console.access import actor_for_request, get_object_for_actor, require
from console.api.views import ORG_PARAM
from console.controls import holds_in_force, switches_in_force
from console.models import SessionHold, ToolSwitch


def _write(switch) -> dict:  # noqa: ANN001
    return {
        "tool": switch.tool,
        "writes_enabled": switch.writes_enabled,
        "changed_by": switch.changed_by,
        "changed_at": switch.changed_at.isoformat(),
    }


def _hold(hold: SessionHold) -> dict:
    return {
        "id": hold.pk,
        "agent": hold.agent,
        "session": hold.session,
        "reason": hold.reason,
        "alert": hold.alert_id,
        "created_at": hold.created_at.isoformat(),
        "released_at": hold.released_at.isoformat() if hold.released_at else None,
        "released_by": hold.released_by,
    }


def _switch(switch: ToolSwitch) -> dict:
    return {
        "id": switch.pk,
        "agent": switch.agent,
        "tool": switch.tool,
        "reason": switch.reason,
        "alert": switch.alert_id,
        "created_at": switch.created_at.isoformat(),
        "enabled_at": switch.enabled_at.isoformat() if switch.enabled_at else None,
        "enabled_by": switch.enabled_by,
    }


class ControlsView(APIView):
    @extend_schema(operation_id="controls", parameters=[ORG_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request):  # noqa: ANN001, ANN201
        """The write switches, the sessions on hold and the tools switched off by alerts."""
        from guard.models import WriteSwitch

        actor = actor_for_request(request)
        require(actor, "tools.read")
        org = actor.organisation
        return Response(
            {
                "writes": [
                    _write(s) for s in WriteSwitch.objects.filter(organisation=org).order_by("tool")
                ],
                "holds": [
                    _hold(h) for h in holds_in_force(organisation=org).order_by("-created_at")
                ],
                "switches": [
                    _switch(s) for s in switches_in_force(organisation=org).order_by("-created_at")
                ],
            }
        )


class WritesView(APIView):
    @extend_schema(
        operation_id="controls_writes_set",
        parameters=[ORG_PARAM],
        request=OpenApiTypes.OBJECT,
        responses=OpenApiTypes.OBJECT,
    )
    def put(self, request):  # noqa: ANN001, ANN201
        """`{"tool": "request_close", "enabled": false}`; `"tool": ""` (or none) is every tool."""
        from guard.executor import write_switch_set

        actor = actor_for_request(request)
        require(actor, "controls.write")
        data = request.data
        if not isinstance(data, dict):
            raise ValidationError({"non_field_errors": ["the body must be a JSON object"]})
        unknown = sorted(set(data) - {"tool", "enabled"})
        if unknown:
            raise ValidationError({name: ["unknown field"] for name in unknown})
        if not isinstance(data.get("enabled"), bool):
            raise ValidationError({"enabled": ["true or false"]})
        tool = data.get("tool", "")
        if not isinstance(tool, str):
            raise ValidationError({"tool": ["a tool's name, or empty for every tool"]})
        try:
            switch = write_switch_set(actor=actor, tool=tool.strip(), enabled=data["enabled"])
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from exc
        return Response(_write(switch))


class _ControlAction(APIView):
    """POST on one hold or switch of the organisation: the service, then the object as it is now."""

    model: type
    service: staticmethod
    render: staticmethod

    def post(self, request, pk: int):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "controls.write")
        obj = get_object_for_actor(self.model, actor, pk=pk)
        self.service(actor, obj)
        obj.refresh_from_db()
        return Response(self.render(obj))


@extend_schema_view(
    post=extend_schema(
        operation_id="controls_hold_release",
        parameters=[ORG_PARAM],
        request=None,
        responses=OpenApiTypes.OBJECT,
    )
)
class HoldReleaseView(_ControlAction):
    model = SessionHold
    service = staticmethod(lambda actor, hold: services.hold_release(actor=actor, hold=hold))
    render = staticmethod(_hold)


@extend_schema_view(
    post=extend_schema(
        operation_id="controls_tool_enable",
        parameters=[ORG_PARAM],
        request=None,
        responses=OpenApiTypes.OBJECT,
    )
)
class ToolEnableView(_ControlAction):
    model = ToolSwitch
    service = staticmethod(lambda actor, switch: services.tool_enable(actor=actor, switch=switch))
    render = staticmethod(_switch)
