"""The OpenAPI schema says what the API answers: the error codes every operation can give.

Every `/v1/` operation can answer 401 (no or a bad key), 403 (the role may not), 404 (an object,
or an organisation asked for, that the caller cannot see) and 429 (a throttled address); every
operation with a body can answer 400 (the edge or the view refused it), 413 (too large) and 415
(not JSON), and every operation with query parameters 400 (a filter refused). Views declare the codes of their own (409, 503, ...) with `extend_schema`; this
post-processing hook adds the shared ones so that no view can forget one, and bounds integer ids
in paths to what the routes match (`<int:...>` takes no sign).
"""

from __future__ import annotations

from typing import Any

ERROR = {
    "type": "object",
    "description": "an error: `detail`, or each refused field with its messages",
    "additionalProperties": True,
}
SHARED = {
    "401": "no API key or session, or an unknown or revoked key",
    "403": "the role may not do this (or a session's CSRF check failed)",
    "404": "no such object in the organisation, or an organisation the caller is not in",
    "429": "too many failed API-key authentications from this address",
}
WITH_QUERY = {"400": "a refused query parameter, under its name"}
WITH_BODY = {
    "400": "the body was refused, each problem under its field path",
    "413": "the body is larger than `STALWART_API_MAX_BODY_BYTES`",
    "415": "the body is not JSON (or a form, where a file can be sent)",
}


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def add_error_responses(result, generator, request, public):  # noqa: ANN001, ANN201, ARG001
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            codes = dict(SHARED)
            if any(p.get("in") == "query" for p in operation.get("parameters", [])):
                codes.update(WITH_QUERY)
            if "requestBody" in operation:
                codes.update(WITH_BODY)
            for code, description in codes.items():
                responses.setdefault(code, _error(description))
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if parameter.get("in") == "path" and schema.get("type") == "integer":
                    schema.setdefault("minimum", 0)
    return result
