"""The tool check's API: `POST /v1/sessions` and `POST /v1/sessions/{id}/check`, `/read`, `/record`."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access import actor_for_request, get_object_for_actor, require
from console.api.malformed import RecordsMalformedCalls
from console.api.parsers import WITH_FILES
from console.api.views import ORG_PARAM
from console.services import malformed_call_record
from guard import approvals, engine, services
from guard.executor import Executor
from guard.models import ApprovalRequest, GuardSession

CHECK_FIELDS = {
    "tool",
    "arguments",
    "origins",
    "labels",
    "context",
    "token",
    "checks",
    "usage",
    "compensation_of",
    "plan",
    "plan_token",
    "plan_step",
    "user",
    "cost",
    "agent",
    "run",
}
RECORD_FIELDS = {
    "tool",
    "arguments",
    "origins",
    "labels",
    "result",
    "compensation_of",
    "plan",
    "cost",
    "agent",
}


def _body(request, allowed: set[str], required: tuple[str, ...] = ()) -> dict[str, Any]:  # noqa: ANN001
    data = request.data
    if not isinstance(data, dict):
        raise ValidationError({"non_field_errors": ["the body must be a JSON object"]})
    errors = {name: ["not a field here"] for name in sorted(set(data) - allowed)}
    errors.update({name: ["this field is required"] for name in required if name not in data})
    if errors:
        raise ValidationError(errors)
    return dict(data)


def _session(request, session_id):  # noqa: ANN001, ANN202
    actor = actor_for_request(request)
    require(actor, "guard.check")
    return actor, get_object_for_actor(GuardSession, actor, public_id=session_id)


def _session_named(request, session_id):  # noqa: ANN001, ANN202
    """The session's identity only: the check reads the rest itself, in one statement."""
    actor = actor_for_request(request)
    require(actor, "guard.check")
    return actor, services.session_named(actor=actor, public_id=session_id)


class _DecidesCalls(RecordsMalformedCalls):
    """A session's decision endpoint: a malformed call is recorded in the session."""

    def record_malformed(self, request, refused, session_id=None, **kwargs):  # noqa: ANN001, ANN003, ANN201
        actor, session = _session(request, session_id)
        malformed_call_record(
            organisation=actor.organisation,
            source="toolcheck",
            session=str(session.public_id),
            agent=session.agent,
            field=refused.field,
            problem=refused.problem,
            body=refused.storable,
        )


class SessionListView(APIView):
    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT}
    )
    def post(self, request):  # noqa: ANN001, ANN201
        """Open a session: `{"agent", "catalogue", "rulebook", "settings"}`.

        `rulebook` is a record or Colang text; `settings` the session's own (`taint_policy`,
        `said`, `language`, `label_trust`, `checks`, `token_ttl`), which can only make the
        organisation's stricter."""
        actor = actor_for_request(request)
        require(actor, "guard.check")
        data = _body(
            request, {"agent", "catalogue", "rulebook", "settings"}, ("agent", "catalogue")
        )
        session = services.session_create(
            actor=actor,
            agent=data["agent"],
            catalogue=data["catalogue"],
            rulebook=data.get("rulebook"),
            settings=data.get("settings"),
        )
        return Response(
            {
                "id": str(session.public_id),
                "agent": session.agent,
                "rulebook": bool(session.rulebook),
            },
            status=status.HTTP_201_CREATED,
        )


class SessionCheckView(_DecidesCalls, APIView):
    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT
    )
    def post(self, request, session_id):  # noqa: ANN001, ANN201
        """Decide a call: `allow`, `confirm` or `refuse`, with reasons and detail."""
        actor, session = _session_named(request, session_id)
        data = _body(request, CHECK_FIELDS, ("tool",))
        return Response(services.session_check(actor=actor, session=session, data=data))


class SessionRecordView(APIView):
    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT
    )
    def post(self, request, session_id):  # noqa: ANN001, ANN201
        """Append a call that ran, with its result, to the session's signed history."""
        actor, session = _session(request, session_id)
        data = _body(request, RECORD_FIELDS, ("tool",))
        return Response(services.session_record(actor=actor, session=session, data=data))


class SessionUndoView(APIView):
    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT
    )
    def post(self, request, session_id):  # noqa: ANN001, ANN201
        """The undo of the current run's writes, last first: `{"steps": [...]}`, each step to
        send through `execute` with its `compensation_of` (the SDK does it on a refusal)."""
        actor, session = _session(request, session_id)
        _body(request, set())
        return Response(services.session_undo_plan(actor=actor, session=session))


class SessionReadView(APIView):
    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT
    )
    def post(self, request, session_id):  # noqa: ANN001, ANN201
        """Give the person's turn, which the checks of what was said read."""
        actor, session = _session(request, session_id)
        data = _body(request, {"turn"}, ("turn",))
        return Response(services.session_read(actor=actor, session=session, turn=data["turn"]))


EXECUTE_FIELDS = {
    "tool",
    "arguments",
    "origins",
    "labels",
    "context",
    "token",
    "user",
    "compensation_of",
    "checks",
    "usage",
    "cost",
    "agent",
    "run",
}
EFFECT_FIELDS = {
    "tool",
    "arguments",
    "origins",
    "labels",
    "compensation_of",
    "key",
    "result",
    "replayed",
    "failed",
    "blocked",
    "cost",
    "agent",
    "run",
}


def _executor(actor, session, data: dict[str, Any]) -> Executor:  # noqa: ANN001
    return Executor(
        actor=actor, session=session, bindings={}, run=services.session_run_ids(data.get("run"))
    )


def _call_of(data: dict[str, Any]) -> dict[str, Any]:
    call = {"tool": data.get("tool"), "arguments": data.get("arguments", {})}
    for name in ("origins", "labels", "compensation_of", "agent"):
        if data.get(name) is not None:
            call[name] = data[name]
    return call


class SessionExecuteView(_DecidesCalls, APIView):
    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT
    )
    def post(self, request, session_id):  # noqa: ANN001, ANN201
        """Begin a call through the executor: every control up to the effect.

        `RUN` (with the `key` and the `tenant` to run the tool with) means the agent's process now
        runs the tool and reports with `POST .../effects`; any other outcome is final. A write the
        ledger holds as done answers with its recorded result (`duplicate: true`).
        """
        actor, session = _session(request, session_id)
        data = _body(request, EXECUTE_FIELDS, ("tool",))
        for name in ("token", "user"):
            if data.get(name) is not None and not isinstance(data[name], str):
                raise ValidationError({name: ["must be a string"]})
        try:
            outcome = _executor(actor, session, data).begin(
                _call_of(data),
                token=data.get("token"),
                context=data.get("context"),
                user=data.get("user") or "",
                **services.check_options(data),
            )
        except engine.UnknownCheck as exc:
            raise ValidationError({"checks": [str(exc)]}) from exc
        return Response(outcome)


class SessionEffectView(APIView):
    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT
    )
    def post(self, request, session_id):  # noqa: ANN001, ANN201
        """Report what a begun call did: its `result` (`replayed: true` when the tool had already
        applied the key), or `failed` / `blocked` with why. Reported twice, it is recorded once."""
        actor, session = _session(request, session_id)
        data = _body(request, EFFECT_FIELDS, ("tool", "arguments"))
        errors: dict[str, list[str]] = {}
        if not isinstance(data.get("key", ""), str):
            errors["key"] = ["must be a string"]
        if not isinstance(data.get("replayed", False), bool):
            errors["replayed"] = ["must be true or false"]
        for name in ("failed", "blocked"):
            if data.get(name) is not None and not isinstance(data[name], str):
                errors[name] = ["must be a string saying why"]
        if sum(name in data for name in ("result", "failed", "blocked")) != 1:
            errors["result"] = ["give exactly one of result, failed or blocked"]
        if errors:
            raise ValidationError(errors)
        outcome = _executor(actor, session, data).complete(
            _call_of(data),
            key=data.get("key", ""),
            result=data.get("result"),
            replayed=data.get("replayed", False),
            failed=data.get("failed"),
            blocked=data.get("blocked"),
            cost=data.get("cost"),
        )
        return Response(outcome)


def _approval_json(item: ApprovalRequest) -> dict[str, Any]:
    return {
        "id": str(item.public_id),
        "status": item.status if item.status != "pending" or item.is_open else "expired",
        "tool": item.tool,
        "agent": item.agent,
        "arguments": approvals.shown_arguments(item),
        "origins": item.origins,
        "reasons": item.reasons,
        "rule": item.rule or None,
        "session": str(item.session.public_id)
        if item.session
        else (item.detail or {}).get("session")
        if item.source == "runtime"
        else None,
        "source": item.source,
        "requested_by": item.requested_by,
        "created_at": item.created_at.isoformat(),
        "expires_at": item.expires_at.isoformat(),
        "answered_by": item.answered_by or None,
        "token": item.token or None,
    }


class ApprovalListView(APIView):
    @extend_schema(
        operation_id="approvals_list", parameters=[ORG_PARAM], responses=OpenApiTypes.OBJECT
    )
    def get(self, request):  # noqa: ANN001, ANN201
        """The open requests, oldest first, a page at a time (`?limit=`, at most 500, and
        `?offset=`; tokens are never listed here)."""
        from console.api.pagination import Pages

        actor = actor_for_request(request)
        require(actor, "approvals.read")
        paginator = Pages()
        page = paginator.paginate_queryset(
            approvals.open_requests(organisation=actor.organisation), request, view=self
        )
        return paginator.get_paginated_response(
            [{**_approval_json(item), "token": None} for item in page]
        )

    @extend_schema(
        operation_id="approvals_file",
        parameters=[ORG_PARAM],
        request=OpenApiTypes.OBJECT,
        responses={201: OpenApiTypes.OBJECT},
    )
    def post(self, request):  # noqa: ANN001, ANN201
        """File a call a runtime deciding in the agent's process holds for a person:
        `{agent, session, call, reasons, origins, history_at, user, secret}`. Once approved, its
        `token` is a grant signed with the organisation's bundle key for exactly that call."""
        from django.core.exceptions import ValidationError as DjangoValidationError

        actor = actor_for_request(request)
        require(actor, "guard.check")
        try:
            item = approvals.runtime_request_create(actor=actor, data=request.data)
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from exc
        return Response(_approval_json(item), status=status.HTTP_201_CREATED)


class ApprovalDetailView(APIView):
    @extend_schema(parameters=[ORG_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request, approval_id):  # noqa: ANN001, ANN201
        """A request's answer; once approved, the token the runtime checks the call again with."""
        actor = actor_for_request(request)
        require(actor, "guard.check")
        item = get_object_for_actor(ApprovalRequest, actor, public_id=approval_id)
        return Response(_approval_json(item))


class ApprovalAnswerView(APIView):
    action = "approve"
    parser_classes = WITH_FILES

    @extend_schema(
        parameters=[ORG_PARAM],
        request=None,
        responses={200: OpenApiTypes.OBJECT, 409: OpenApiTypes.OBJECT},
    )
    def post(self, request, approval_id):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "approvals.answer")
        item = get_object_for_actor(ApprovalRequest, actor, public_id=approval_id)
        answer = approvals.approval_grant if self.action == "approve" else approvals.approval_deny
        try:
            item = answer(actor=actor, request=item)
        except approvals.AlreadyAnswered as exc:
            return Response({"detail": "; ".join(exc.messages)}, status=status.HTTP_409_CONFLICT)
        return Response({**_approval_json(item), "token": None})


class ApprovalDenyView(ApprovalAnswerView):
    action = "deny"
