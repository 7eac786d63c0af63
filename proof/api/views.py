"""The proofs' API: submit a graph-proof job, list and follow jobs, download a job's report.

`POST /v1/proofs` answers 201 with the queued job; a body that cannot be proved answers 400
with every error under its field path (`graph.edges[3].when[0]`, `session_steps`). A report is
there once the job is finished with one (`passed` or `failed`); before that, and for a job that
ended `error`, asking for it answers 409 with the job's status.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access import actor_for_request, require
from console.api.parsers import StrictJSONParser
from console.api.views import ORG_PARAM
from proof import selectors, services
from proof.models import ProofJob

FORMATS = ("txt", "json", "sarif")


def job_json(job: ProofJob, *, with_report: bool = False) -> dict[str, Any]:
    """A job as the API shows it; the report itself only on the job's own endpoint."""
    ident = str(job.public_id)
    body: dict[str, Any] = {
        "id": ident,
        "name": job.name,
        "status": job.status,
        "progress": job.progress,
        "attempts": job.attempts,
        "session_steps": job.session_steps,
        "turns": job.turns,
        "graph_digest": job.digest,
        "nodes": job.nodes,
        "edges": job.edges,
        "submitted_by": job.submitted_by,
        "created_at": job.created_at.isoformat(),
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "gate": None,
        "error": job.error or None,
        "links": {
            "self": reverse("api-proof", args=[ident]),
            **{f"report.{fmt}": reverse("api-proof-report", args=[ident, fmt]) for fmt in FORMATS},
        },
    }
    if job.status in (ProofJob.Status.PASSED, ProofJob.Status.FAILED):
        body["gate"] = {
            "passed": bool(job.gate_passed),
            "stops_agent": bool(job.stops_agent),
            "findings": job.findings_count,
            "failing": job.failing_count,
        }
        if with_report:
            body["report"] = job.report
    return body


class ProofListView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(
        operation_id="proofs_list",
        parameters=[ORG_PARAM, OpenApiParameter("status", str, required=False)],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request):  # noqa: ANN001, ANN201
        """The organisation's graph-proof jobs, newest first (`status` narrows them)."""
        actor = actor_for_request(request)
        require(actor, "proofs.read")
        try:
            jobs = selectors.job_list(
                organisation=actor.organisation, status=request.query_params.get("status")
            )
        except selectors.FilterError as exc:
            raise ValidationError({exc.field: [exc.message]}) from exc
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(jobs, request, view=self)
        return paginator.get_paginated_response([job_json(j) for j in page])

    @extend_schema(
        operation_id="proofs_create",
        parameters=[ORG_PARAM],
        request=OpenApiTypes.OBJECT,
        responses={201: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
    )
    def post(self, request):  # noqa: ANN001, ANN201
        """Submit a job: `{"graph", "catalogue", "rulebook", "session_steps", "turns", "name"}`."""
        actor = actor_for_request(request)
        require(actor, "proofs.run")
        job = services.proof_job_submit(actor=actor, body=request.data)
        return Response(job_json(job), status=status.HTTP_201_CREATED)


class ProofDetailView(APIView):
    @extend_schema(
        operation_id="proofs_retrieve", parameters=[ORG_PARAM], responses=OpenApiTypes.OBJECT
    )
    def get(self, request, job_id):  # noqa: ANN001, ANN201
        """A job: where it stands and, once finished, its gate and its report (`stalwart-verify/1`)."""
        actor = actor_for_request(request)
        require(actor, "proofs.read")
        job = selectors.job_get(actor=actor, job_id=job_id)
        return Response(job_json(job, with_report=True))


class _AnyAccept(BaseContentNegotiation):
    """A report is a file: it is sent as it is, whatever the client says it accepts."""

    def select_parser(self, request, parsers):  # noqa: ANN001, ANN201
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):  # noqa: ANN001, ANN201
        return renderers[0], renderers[0].media_type


class ProofReportView(APIView):
    content_negotiation_class = _AnyAccept

    @extend_schema(
        operation_id="proofs_report",
        parameters=[ORG_PARAM],
        responses={200: OpenApiTypes.STR, 409: OpenApiTypes.OBJECT},
    )
    def get(self, request, job_id, fmt: str):  # noqa: ANN001, ANN201
        """The finished job's report as text, JSON (`stalwart-verify/1`) or SARIF 2.1.0."""
        actor = actor_for_request(request)
        require(actor, "proofs.read")
        if fmt not in FORMATS:
            raise Http404("no such report format")
        job = selectors.job_get(actor=actor, job_id=job_id)
        if job.report is None or job.status not in (
            ProofJob.Status.PASSED,
            ProofJob.Status.FAILED,
        ):
            return Response(
                {
                    "detail": f"the job is {job.status}: it has no report"
                    + (f" ({job.error})" if job.error else ""),
                    "status": job.status,
                },
                status=status.HTTP_409_CONFLICT,
            )
        content, content_type = services.report_body(job, fmt)
        response = HttpResponse(content, content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="proof-{job.public_id}.{fmt}"'
        return response
