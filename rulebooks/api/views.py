"""The rulebooks' API: compile a rulebook or a rule sheet (keeping nothing), and saved versions."""

from __future__ import annotations

import base64
import binascii

from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access import actor_for_request, get_object_for_actor, require
from console.api.parsers import WITH_FILES
from console.api.views import ORG_PARAM
from rulebooks import compiler, services
from rulebooks.models import Rulebook


def _upload(request, *, default_name: str) -> tuple[bytes, str, str | None]:  # noqa: ANN001
    """The bytes, file name and Colang version of a request: a multipart `file`, or JSON."""
    upload = request.FILES.get("file")
    version = request.data.get("colang_version") or None
    if upload is not None:
        return upload.read(services.MAX_UPLOAD_BYTES + 1), upload.name, version
    if not hasattr(request.data, "get"):
        raise ValidationError({"non_field_errors": ["send a `file`, or JSON with `source`"]})
    filename = request.data.get("filename") or default_name
    if not isinstance(filename, str):
        raise ValidationError({"filename": ["must be a string"]})
    if "content_base64" in request.data:
        try:
            return (
                base64.b64decode(request.data["content_base64"], validate=True),
                filename,
                version,
            )
        except (binascii.Error, TypeError, ValueError) as exc:
            raise ValidationError({"content_base64": ["not valid base64"]}) from exc
    source = request.data.get("source")
    if not isinstance(source, str):
        raise ValidationError({"source": ["the rulebook's text is required (or a `file`)"]})
    return source.encode("utf-8"), filename, version


def _rejected(exc: services.Rejected) -> Response:
    """400 with every located error; 413 when the rulebook is too large to compile."""
    errors = [{k: v for k, v in e.items() if k != "text"} for e in exc.errors]
    too_large = exc.code == compiler.TOO_LARGE
    return Response(
        {"code": exc.code, "errors": errors, "rendered": exc.rendered},
        status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
        if too_large
        else status.HTTP_400_BAD_REQUEST,
    )


class CompileView(APIView):
    parser_classes = WITH_FILES
    sheets_only = False
    default_name = "policy.co"

    @extend_schema(
        parameters=[ORG_PARAM],
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
    )
    def post(self, request):  # noqa: ANN001, ANN201
        """Compile and return the record, or every located error; nothing is kept."""
        actor = actor_for_request(request)
        require(actor, "rulebooks.read")
        data, filename, version = _upload(request, default_name=self.default_name)
        try:
            record = services.compile_upload(
                organisation=actor.organisation,
                data=data,
                filename=filename,
                colang_version=version,
                sheets_only=self.sheets_only,
            )
        except services.Rejected as exc:
            return _rejected(exc)
        return Response(record)


class RuleSheetCompileView(CompileView):
    sheets_only = True
    default_name = "rules.csv"


def _version_json(version, *, with_record: bool = False) -> dict:  # noqa: ANN001
    body = {
        "rulebook": version.rulebook.name,
        "number": version.number,
        "filename": version.filename,
        "format": version.format,
        "sha256": version.sha256,
        "uploaded_by": version.uploaded_by,
        "created_at": version.created_at.isoformat(),
    }
    if with_record:
        body["record"] = version.record
    return body


class RulebookListView(APIView):
    parser_classes = WITH_FILES

    @extend_schema(parameters=[ORG_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "rulebooks.read")
        rulebooks = Rulebook.objects.filter(organisation=actor.organisation).order_by("name")
        return Response(
            {
                "results": [
                    {
                        "id": r.pk,
                        "name": r.name,
                        "latest": _version_json(r.latest) if r.latest else None,
                    }
                    for r in rulebooks
                ]
            }
        )

    @extend_schema(
        parameters=[ORG_PARAM],
        request=OpenApiTypes.OBJECT,
        responses={201: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
    )
    def post(self, request):  # noqa: ANN001, ANN201
        """Upload a new version of the rulebook `name` (created on its first upload)."""
        actor = actor_for_request(request)
        require(actor, "rulebooks.write")
        data, filename, version = _upload(request, default_name="policy.co")
        try:
            saved = services.rulebook_upload(
                actor=actor,
                name=request.data.get("name", ""),
                data=data,
                filename=filename,
                colang_version=version,
            )
        except services.Rejected as exc:
            return _rejected(exc)
        return Response(_version_json(saved, with_record=True), status=status.HTTP_201_CREATED)


class RulebookVersionView(APIView):
    @extend_schema(parameters=[ORG_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request, rulebook_id: int, number: int):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "rulebooks.read")
        rulebook = get_object_for_actor(Rulebook, actor, pk=rulebook_id)
        version = rulebook.versions.filter(number=number).first()
        if version is None:
            from django.http import Http404

            raise Http404("no such version")
        return Response(_version_json(version, with_record=True))
