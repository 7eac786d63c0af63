"""The firewall's API: policies and their draft rules (CRUD, order, presets, import, export),
published versions (publish, list, diff, rollback, the draft replayed) and evaluate."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access import actor_for_request, get_object_for_actor, require
from console.api.malformed import RecordsMalformedCalls
from console.api.plain import plain_validated
from console.api.views import ORG_PARAM
from console.services import malformed_call_record
from firewall import engine, selectors, services
from firewall.models import Policy, PolicyVersion, Rule


def _object(request) -> dict[str, Any]:  # noqa: ANN001
    if not isinstance(request.data, dict):
        raise ValidationError({"non_field_errors": ["the body must be a JSON object"]})
    return dict(request.data)


def export_filename(policy: Policy, *, version: int | None = None) -> str:
    """The export's file name: the policy's name reduced to characters safe in a header, and the
    version's number when it is not the published one."""
    stem = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "-" for c in policy.name)
    stem = stem.strip("-.") or f"policy-{policy.pk}"
    published = policy.published
    if version is not None and (published is None or published.number != version):
        stem += f"-v{version}"
    return stem + ".json"


def _policy_summary(policy: Policy) -> dict[str, Any]:
    """The policy: its draft's default verdict, revision and rule count, and what is published."""
    published = policy.published
    return {
        "id": policy.pk,
        "name": policy.name,
        "default_verdict": policy.default_verdict,
        "active": policy.active,
        "revision": policy.revision,
        "rules": policy.rules.count(),
        "published_version": published.number if published else None,
    }


def _version_summary(version: PolicyVersion) -> dict[str, Any]:
    return {
        "number": version.number,
        "published_by": version.published_by,
        "published_at": version.published_at.isoformat(),
        "note": version.note,
        "copied_from": version.copied_from,
        "default_verdict": version.default_verdict,
        "rules": len(version.rules),
    }


class PolicyListView(APIView):
    @extend_schema(
        operation_id="firewall_policies_list", parameters=[ORG_PARAM], responses=OpenApiTypes.OBJECT
    )
    def get(self, request):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "firewall.read")
        policies = selectors.policy_list(organisation=actor.organisation)
        return Response({"results": [_policy_summary(p) for p in policies]})

    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT}
    )
    def post(self, request):  # noqa: ANN001, ANN201
        """Create a policy: `{"name", "default_verdict"}`, or a whole policy with its `rules`.

        What is created is a draft: nothing decides with it until it is published.
        """
        actor = actor_for_request(request)
        require(actor, "firewall.write")
        data = _object(request)
        policy = services.policy_import(actor=actor, data={"rules": [], **data})
        return Response(
            {**_policy_summary(policy), **services.policy_draft_export(policy=policy)},
            status=status.HTTP_201_CREATED,
        )


class PolicyDetailView(APIView):
    def _policy(self, request, policy_id: int):  # noqa: ANN001, ANN202
        actor = actor_for_request(request)
        return actor, get_object_for_actor(Policy, actor, pk=policy_id)

    @extend_schema(parameters=[ORG_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request, policy_id: int):  # noqa: ANN001, ANN201
        actor, policy = self._policy(request, policy_id)
        require(actor, "firewall.read")
        counts = selectors.match_counts(policy=policy)
        body = {**_policy_summary(policy), **services.policy_draft_export(policy=policy)}
        for rule in body["rules"]:
            rule["matches"] = counts.get(rule["id"], {})
        return Response(body)

    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT
    )
    def put(self, request, policy_id: int):  # noqa: ANN001, ANN201
        """Change `name`, the draft's `default_verdict`, or `active` (the policy whose published
        version `evaluate` uses)."""
        actor, policy = self._policy(request, policy_id)
        require(actor, "firewall.write")
        policy = services.policy_update(actor=actor, policy=policy, data=_object(request))
        return Response(_policy_summary(policy))

    @extend_schema(parameters=[ORG_PARAM], responses={204: None})
    def delete(self, request, policy_id: int):  # noqa: ANN001, ANN201
        actor, policy = self._policy(request, policy_id)
        require(actor, "firewall.write")
        services.policy_delete(actor=actor, policy=policy)
        return Response(status=status.HTTP_204_NO_CONTENT)


class _AlwaysJSON(BaseContentNegotiation):
    """JSON whatever the client's Accept header says (never a 406, never the browsable page)."""

    def select_parser(self, request, parsers):  # noqa: ANN001, ANN201
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):  # noqa: ANN001, ANN201
        return renderers[0], renderers[0].media_type


class PolicyExportView(APIView):
    # Always JSON, whatever the client accepts: a browser's export is the file import reads back,
    # never the browsable API's page.
    renderer_classes = [JSONRenderer]
    content_negotiation_class = _AlwaysJSON

    @extend_schema(
        parameters=[
            ORG_PARAM,
            OpenApiParameter(
                "version", int, description="a version's number; default: the published one"
            ),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request, policy_id: int):  # noqa: ANN001, ANN201
        """A published version as the JSON file import reads back (`X-Policy-Version` names it)."""
        actor = actor_for_request(request)
        require(actor, "firewall.read")
        policy = get_object_for_actor(Policy, actor, pk=policy_id)
        number = _number(request.query_params.get("version"), "version", optional=True)
        body = services.policy_export(policy=policy, number=number)
        shown = number or policy.published.number
        response = Response(body)
        response["Content-Disposition"] = (
            f'attachment; filename="{export_filename(policy, version=shown)}"'
        )
        response["X-Policy-Version"] = str(shown)
        return response


def _number(text: Any, field: str, *, optional: bool = False) -> int | None:
    if text in (None, "") and optional:
        return None
    try:
        ref = selectors.read_ref(text)
    except ValueError as exc:
        raise ValidationError({field: [str(exc).replace(", or `draft`", "")]}) from exc
    if ref == selectors.DRAFT:
        raise ValidationError({field: ["a version's number"]})
    return int(ref)


class _Strict(serializers.Serializer):
    """Unknown fields are refused, each by name."""

    def to_internal_value(self, data):  # noqa: ANN001, ANN201
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {n: ["not a field of this body"] for n in unknown}
                )
        return super().to_internal_value(data)


class PublishSerializer(_Strict):
    note = serializers.CharField(
        max_length=300, required=False, allow_blank=True, help_text="why this version"
    )


class RollbackSerializer(_Strict):
    version = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, help_text="the number of the version copied"
    )
    note = serializers.CharField(max_length=300, required=False, allow_blank=True)
    discard_draft = serializers.BooleanField(
        required=False,
        default=False,
        help_text="throw away the draft's unpublished changes (else they refuse the rollback)",
    )


class PolicyVersionsView(APIView):
    @extend_schema(
        operation_id="firewall_policy_versions_list",
        parameters=[ORG_PARAM],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request, policy_id: int):  # noqa: ANN001, ANN201
        """The published versions, newest first; `published` is the one that decides."""
        actor = actor_for_request(request)
        require(actor, "firewall.read")
        policy = get_object_for_actor(Policy, actor, pk=policy_id)
        return Response(
            {
                "published": policy.published.number if policy.published else None,
                "draft_changed": services.draft_changed(policy=policy),
                "results": [_version_summary(v) for v in selectors.version_list(policy=policy)],
            }
        )


class PolicyVersionDetailView(APIView):
    @extend_schema(parameters=[ORG_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request, policy_id: int, number: int):  # noqa: ANN001, ANN201
        """One version: who published it and when, and its rules exactly as they decide."""
        actor = actor_for_request(request)
        require(actor, "firewall.read")
        policy = get_object_for_actor(Policy, actor, pk=policy_id)
        version = get_object_or_404(policy.versions, number=number)
        return Response({**_version_summary(version), "rules": version.rules})


class PolicyPublishView(APIView):
    @extend_schema(
        parameters=[ORG_PARAM], request=PublishSerializer, responses={201: OpenApiTypes.OBJECT}
    )
    def post(self, request, policy_id: int):  # noqa: ANN001, ANN201
        """Publish the draft as the next version: it decides from now on (admin or editor)."""
        actor = actor_for_request(request)
        require(actor, "firewall.publish")
        policy = get_object_for_actor(Policy, actor, pk=policy_id)
        serializer = PublishSerializer(data=_object(request))
        serializer.is_valid(raise_exception=True)
        version = services.policy_publish(
            actor=actor, policy=policy, note=serializer.validated_data.get("note", "")
        )
        return Response(_version_summary(version), status=status.HTTP_201_CREATED)


class PolicyRollbackView(APIView):
    @extend_schema(
        parameters=[ORG_PARAM], request=RollbackSerializer, responses={201: OpenApiTypes.OBJECT}
    )
    def post(self, request, policy_id: int):  # noqa: ANN001, ANN201
        """Publish a copy of an older version as the next one; the draft becomes that copy."""
        actor = actor_for_request(request)
        require(actor, "firewall.publish")
        policy = get_object_for_actor(Policy, actor, pk=policy_id)
        serializer = RollbackSerializer(data=_object(request))
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        version = services.policy_rollback(
            actor=actor,
            policy=policy,
            number=data["version"],
            note=data.get("note", ""),
            discard_draft=data["discard_draft"],
        )
        return Response(_version_summary(version), status=status.HTTP_201_CREATED)


def _ref(text: Any, field: str) -> str | int:
    try:
        return selectors.read_ref(text)
    except ValueError as exc:
        raise ValidationError({field: [str(exc)]}) from exc


class PolicyDiffView(APIView):
    @extend_schema(
        parameters=[
            ORG_PARAM,
            OpenApiParameter("old", str, description="a version's number or `draft`"),
            OpenApiParameter("new", str, description="a version's number or `draft`"),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request, policy_id: int):  # noqa: ANN001, ANN201
        """Rules added, removed and changed between two versions (default: published → draft)."""
        actor = actor_for_request(request)
        require(actor, "firewall.read")
        policy = get_object_for_actor(Policy, actor, pk=policy_id)
        published = policy.published.number if policy.published else None
        old = _ref(request.query_params.get("old") or published or "draft", "old")
        new = _ref(request.query_params.get("new") or "draft", "new")
        try:
            diff = selectors.version_diff(policy=policy, old=old, new=new)
        except LookupError as exc:
            raise ValidationError({"version": [str(exc)]}) from exc
        return Response(diff)


class PolicyDraftView(APIView):
    @extend_schema(parameters=[ORG_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request, policy_id: int):  # noqa: ANN001, ANN201
        """The draft in the policy format (what the next publish would make a version)."""
        actor = actor_for_request(request)
        require(actor, "firewall.read")
        policy = get_object_for_actor(Policy, actor, pk=policy_id)
        return Response(services.policy_draft_export(policy=policy))

    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT
    )
    def put(self, request, policy_id: int):  # noqa: ANN001, ANN201
        """Import a whole policy's JSON (an export) as this policy's draft; nothing is published."""
        actor = actor_for_request(request)
        require(actor, "firewall.write")
        policy = get_object_for_actor(Policy, actor, pk=policy_id)
        services.policy_draft_import(actor=actor, policy=policy, data=_object(request))
        policy.refresh_from_db()
        return Response({**_policy_summary(policy), **services.policy_draft_export(policy=policy)})


class PolicyReplayView(APIView):
    @extend_schema(parameters=[ORG_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request, policy_id: int):  # noqa: ANN001, ANN201
        """The draft decided on the last day's recorded calls beside the published version, and
        (`in_shadow`) the live decisions it would have decided otherwise since it last changed."""
        actor = actor_for_request(request)
        require(actor, "firewall.read")
        policy = get_object_for_actor(Policy, actor, pk=policy_id)
        replay = selectors.draft_replay(policy=policy)
        replay["changes"] = [
            {
                "event": c["event"].pk,
                "at": c["event"].at.isoformat(),
                "tool": c["event"].tool,
                "published": {"verdict": c["before"]["verdict"], "rule": c["before"]["rule"]},
                "draft": {"verdict": c["after"]["verdict"], "rule": c["after"]["rule"]},
            }
            for c in replay.get("changes", [])
        ]
        shadow = selectors.draft_in_shadow(policy=policy)
        replay["in_shadow"] = shadow and {
            "count": shadow["count"],
            "events": [
                {"event": e.pk, "tool": e.tool, "verdict": e.verdict, "draft": e.detail["draft"]}
                for e in shadow["events"]
            ],
        }
        return Response(replay)


class PolicyRulesView(APIView):
    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT}
    )
    def post(self, request, policy_id: int):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "firewall.write")
        policy = get_object_for_actor(Policy, actor, pk=policy_id)
        rule = services.rule_create(actor=actor, policy=policy, data=_object(request))
        return Response(rule.as_json(), status=status.HTTP_201_CREATED)


class RuleDetailView(APIView):
    @extend_schema(parameters=[ORG_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request, rule_id: int):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "firewall.read")
        return Response(get_object_for_actor(Rule, actor, pk=rule_id).as_json())

    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT
    )
    def put(self, request, rule_id: int):  # noqa: ANN001, ANN201
        """Replace the rule with the body (a whole rule; `priority` kept when left out)."""
        actor = actor_for_request(request)
        require(actor, "firewall.write")
        rule = get_object_for_actor(Rule, actor, pk=rule_id)
        rule = services.rule_update(actor=actor, rule=rule, data=_object(request))
        return Response(rule.as_json())

    @extend_schema(parameters=[ORG_PARAM], responses={204: None})
    def delete(self, request, rule_id: int):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "firewall.write")
        services.rule_delete(actor=actor, rule=get_object_for_actor(Rule, actor, pk=rule_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class PolicyReorderView(APIView):
    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT
    )
    def post(self, request, policy_id: int):  # noqa: ANN001, ANN201
        """`{"rules": [ids in the new evaluation order]}`; every rule of the policy, once."""
        actor = actor_for_request(request)
        require(actor, "firewall.write")
        policy = get_object_for_actor(Policy, actor, pk=policy_id)
        data = _object(request)
        rules = services.rules_reorder(actor=actor, policy=policy, rule_ids=data.get("rules"))
        return Response({"rules": [r.as_json() for r in rules]})


class PolicyPresetView(APIView):
    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT}
    )
    def post(self, request, policy_id: int):  # noqa: ANN001, ANN201
        """`{"preset": "block_ssrf_egress"}` or an autonomy level such as `tight`."""
        actor = actor_for_request(request)
        require(actor, "firewall.write")
        policy = get_object_for_actor(Policy, actor, pk=policy_id)
        preset = _object(request).get("preset")
        if not isinstance(preset, str):
            raise ValidationError({"preset": ["name a preset or an autonomy level"]})
        rules = services.preset_apply(actor=actor, policy=policy, preset=preset)
        return Response({"rules": [r.as_json() for r in rules]}, status=status.HTTP_201_CREATED)


class CallSerializer(serializers.Serializer):
    """A call as `POST /v1/firewall/evaluate` takes it; unknown fields are refused."""

    tool = serializers.CharField(max_length=200)
    skill = serializers.CharField(max_length=200, required=False, allow_blank=True)
    stage = serializers.ChoiceField(choices=list(engine.STAGES), required=False)
    arguments = serializers.JSONField(required=False, default=dict)
    destination = serializers.CharField(max_length=2000, required=False)
    kind = serializers.ChoiceField(
        choices=["read", "write", "sends_out"],
        required=False,
        help_text="ignored, and kept only so older callers are not refused: whether a tool reads "
        "comes from the catalogue of the session the call names, never from the call; a tool no "
        "catalogue of the organisation describes counts as a write",
    )
    agent = serializers.CharField(max_length=128, required=False, allow_blank=True)
    session = serializers.CharField(max_length=128, required=False, allow_blank=True)
    policy = serializers.IntegerField(
        required=False, help_text="a policy id; default: the active one"
    )
    token = serializers.CharField(
        required=False, help_text="the token an approval signed for exactly this call"
    )
    user = serializers.CharField(
        max_length=150, required=False, help_text="the person the agent acts for"
    )

    def to_internal_value(self, data):  # noqa: ANN001, ANN201
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {name: ["not a field of a call"] for name in unknown}
                )
        return super().to_internal_value(data)


class EvaluateView(RecordsMalformedCalls, APIView):
    def record_malformed(self, request, refused, **kwargs):  # noqa: ANN001, ANN003, ANN201
        actor = actor_for_request(request)
        require(actor, "firewall.evaluate")
        malformed_call_record(
            organisation=actor.organisation,
            source="firewall",
            verdict="deny",
            field=refused.field,
            problem=refused.problem,
            body=refused.storable,
        )

    @extend_schema(parameters=[ORG_PARAM], request=CallSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request):  # noqa: ANN001, ANN201
        """Decide a call with the published version of the active policy (or of `policy`);
        `policy_version` names it, and every verdict but a plain allow is recorded as an event."""
        actor = actor_for_request(request)
        require(actor, "firewall.evaluate")
        data = _object(request)
        call = plain_validated(CallSerializer, data)
        if call is None:
            serializer = CallSerializer(data=data)
            serializer.is_valid(raise_exception=True)
            call = dict(serializer.validated_data)
        policy = None
        if "policy" in call:
            policy = get_object_for_actor(Policy, actor, pk=call.pop("policy"))
        token = call.pop("token", None)
        return Response(
            services.firewall_evaluate(actor=actor, call=call, policy=policy, token=token)
        )
