"""One error shape for the API: DRF's, with the services' Django errors mapped onto it."""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from console.api.parsers import BodyTooLarge, max_body_bytes

log = logging.getLogger(__name__)


def exception_handler(exc, context):  # noqa: ANN001, ANN201
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            detail = {field: [str(m) for m in msgs] for field, msgs in exc.message_dict.items()}
        else:
            detail = {"non_field_errors": [str(m) for m in exc.messages]}
        exc = exceptions.ValidationError(detail)
    elif isinstance(exc, RequestDataTooBig):
        exc = BodyTooLarge("body", f"the body is larger than {max_body_bytes()} bytes")
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    response = drf_exception_handler(exc, context)
    if response is None:
        log.exception("internal error on the API", exc_info=exc)
        return Response(
            {"detail": "internal error: the request was not carried out"},
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    return response


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's 404 for a path no route matches: JSON under `/v1/`, as the API's own 404s are."""
    if request.path_info.startswith("/v1/"):
        return JsonResponse({"detail": "not found"}, status=status.HTTP_404_NOT_FOUND)
    return defaults.page_not_found(request, exception)
