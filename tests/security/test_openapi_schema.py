"""The OpenAPI schema says what the API answers: the shapes of its pages and every status code."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def _ok(schema, path: str) -> dict:
    ref = schema["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    return schema["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]


@pytest.mark.parametrize("path", ["/v1/events", "/v1/audit"])
def test_a_paginated_list_is_documented_as_the_page_it_answers(schema, path, auditor, client_for):
    documented = _ok(schema, path)
    assert documented["type"] == "object"
    assert set(documented["properties"]) == {"count", "next", "previous", "results"}
    assert documented["properties"]["results"]["type"] == "array"
    answered = client_for(auditor).get(path).json()
    assert set(answered) == set(documented["properties"])


def _operations(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            yield f"{method.upper()} {path}", operation


def test_every_operation_documents_the_errors_every_operation_can_answer(schema):
    missing = {
        name: sorted({"401", "403", "404", "429"} - set(op["responses"]))
        for name, op in _operations(schema)
    }
    assert {name: codes for name, codes in missing.items() if codes} == {}


def test_every_operation_with_a_body_documents_400_413_and_415(schema):
    with_body = {name: op for name, op in _operations(schema) if "requestBody" in op}
    assert "POST /v1/firewall/evaluate" in with_body
    missing = {
        name: sorted({"400", "413", "415"} - set(op["responses"])) for name, op in with_body.items()
    }
    assert {name: codes for name, codes in missing.items() if codes} == {}


def test_every_operation_with_filters_documents_400(schema):
    operations = dict(_operations(schema))
    assert "400" in operations["GET /v1/events"]["responses"]
    assert "400" in operations["GET /v1/audit"]["responses"]


@pytest.mark.parametrize(
    ("operation", "code"),
    [
        ("POST /v1/approvals/{approval_id}/approve", "409"),
        ("POST /v1/approvals/{approval_id}/deny", "409"),
        ("GET /v1/health", "503"),
        ("GET /v1/proofs/{job_id}/report.{fmt}", "409"),
    ],
)
def test_a_views_own_status_codes_are_documented(schema, operation, code):
    assert code in dict(_operations(schema))[operation]["responses"]


def test_the_api_answers_json_for_a_path_no_route_matches(editor, client_for):
    response = client_for(editor).get("/v1/firewall/policies/-1")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "not found"}


def test_the_api_takes_only_json_bodies_where_no_file_is_sent(schema, editor, client_for):
    response = client_for(editor).post("/v1/firewall/policies", {"name": "p"})
    assert response.status_code == 415
    operations = dict(_operations(schema))
    content = operations["POST /v1/firewall/policies"]["requestBody"]["content"]
    assert list(content) == ["application/json"]
