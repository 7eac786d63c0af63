"""Malformed bodies are refused at the API's edge with a 400 (413 for size) naming the field, and a
refused call on a decision endpoint is still an event the security team sees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client, override_settings

from console import services as console_services
from console.models import Event
from firewall.models import Policy
from stalwart_agents import Agent

pytestmark = pytest.mark.django_db
SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop" / "agent.yaml"
RM_RF = {"tool": "shell.exec", "arguments": {"command": "rm -rf /", "pad": "\u0000"}}


def _post(client, url, body: str | bytes, **extra):
    return client.post(url, body, content_type="application/json", **extra)


def _nested(depth: int) -> dict:
    value: object = "deep"
    for _ in range(depth):
        value = {"a": value}
    return value  # type: ignore[return-value]


@pytest.fixture
def key(organisation, admin, actor_for):
    def make(role: str) -> dict[str, str]:
        _, plain = console_services.api_key_create(
            actor=actor_for(admin, organisation), name=f"{role}-key", role=role
        )
        return {"HTTP_AUTHORIZATION": f"Bearer {plain}"}

    return make


@pytest.fixture
def session_id(editor, client_for):
    desk = Agent.from_file(SHOP)
    body = {"agent": "billing", "catalogue": desk.catalogue(), "rulebook": desk.rules().record}
    response = _post(client_for(editor), "/v1/sessions", json.dumps(body))
    assert response.status_code == 201, response.content
    return response.json()["id"]


def test_a_nul_in_an_argument_is_a_400_and_an_event(editor, client_for):
    response = _post(client_for(editor), "/v1/firewall/evaluate", json.dumps(RM_RF))
    assert response.status_code == 400
    assert response.json() == {"arguments.pad": ["a NUL character is not allowed"]}
    event = Event.objects.get(source="firewall")
    assert (event.decision, event.verdict, event.tool) == ("refuse", "deny", "shell.exec")
    assert event.reasons == ["malformed_call: arguments.pad"]
    assert event.detail["call"]["arguments"] == {"command": "rm -rf /", "pad": "\\u0000"}


def test_a_lone_surrogate_in_an_argument_key_is_a_400_and_an_event(session_id, key):
    body = '{"tool": "refund_card", "arguments": {"order_id": "1", "\\ud800x": 1}}'
    response = _post(Client(), f"/v1/sessions/{session_id}/check", body, **key("editor"))
    assert response.status_code == 400
    assert response.json() == {"arguments.\\ud800x": ["the key: a lone surrogate is not allowed"]}
    event = Event.objects.get(source="toolcheck")
    assert (event.session, event.tool, event.decision) == (session_id, "refund_card", "refuse")
    assert event.reasons == ["malformed_call: arguments.\\ud800x"]
    assert event.detail["call"]["arguments"] == {"order_id": "1", "\\ud800x": 1}


def test_a_nul_in_a_call_to_execute_is_a_400_and_an_event(session_id, editor, client_for):
    body = json.dumps({"tool": "refund_card", "arguments": {"order_id": "1\u0000"}})
    response = _post(client_for(editor), f"/v1/sessions/{session_id}/execute", body)
    assert response.status_code == 400
    assert response.json() == {"arguments.order_id": ["a NUL character is not allowed"]}
    event = Event.objects.get(source="toolcheck", session=session_id)
    assert event.reasons == ["malformed_call: arguments.order_id"]


def test_a_malformed_call_without_a_key_is_a_401_and_leaves_no_event(client_for):
    response = _post(client_for(), "/v1/firewall/evaluate", json.dumps(RM_RF))
    assert response.status_code in (401, 403)
    assert not Event.objects.exists()


@pytest.mark.parametrize(
    "url",
    ["/v1/firewall/evaluate", "/v1/firewall/policies", "/v1/rulebooks/compile", "/v1/plan"],
)
def test_json_nested_a_thousand_deep_is_a_400(url, editor, client_for):
    body = '{"tool": ' + "[" * 1000 + "]" * 1000 + "}"
    response = _post(client_for(editor), url, body)
    assert response.status_code == 400
    assert list(response.json()) == ["body"]
    assert "nests deeper than 64 levels" in response.json()["body"][0]


def test_json_nested_past_the_bound_is_a_400_naming_where(editor, client_for):
    body = json.dumps({"tool": "x", "arguments": _nested(70)})
    response = _post(client_for(editor), "/v1/firewall/evaluate", body)
    assert response.status_code == 400
    [(field, [message])] = response.json().items()
    assert field.startswith("arguments.a.a.a") and message == "nests deeper than 64 levels"
    event = Event.objects.get(source="firewall")
    assert event.reasons == [f"malformed_call: {field}"]


@pytest.mark.parametrize("url", ["/v1/firewall/evaluate", "/v1/rulebooks", "/v1/settings"])
def test_a_body_over_two_and_a_half_megabytes_is_a_413(url, editor, client_for):
    body = json.dumps({"source": "x" * 2_700_000})
    send = client_for(editor).put if url == "/v1/settings" else client_for(editor).post
    response = send(url, body, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {"body": ["the body is larger than 2621440 bytes"]}


@override_settings(STALWART_API_MAX_BODY_BYTES=1000)
def test_the_body_bound_is_a_setting(editor, client_for):
    body = json.dumps({"tool": "x", "arguments": {"pad": "x" * 1000}})
    response = _post(client_for(editor), "/v1/firewall/evaluate", body)
    assert response.status_code == 413
    assert Event.objects.get(source="firewall").reasons == ["malformed_call: body"]


@pytest.mark.parametrize(
    "url", ["/v1/rulebooks", "/v1/rulebooks/compile", "/v1/rule-sheets/compile"]
)
def test_a_json_body_that_is_not_an_object_is_a_400(url, editor, client_for):
    response = _post(client_for(editor), url, "5")
    assert response.status_code == 400
    assert response.json() == {"non_field_errors": ["the body must be a JSON object"]}


def test_a_nul_in_a_rule_name_is_a_400_not_a_database_error(editor, client_for):
    body = {"name": "p\u0000", "default_verdict": "allow", "rules": []}
    response = _post(client_for(editor), "/v1/firewall/policies", json.dumps(body))
    assert response.status_code == 400
    assert response.json() == {"name": ["a NUL character is not allowed"]}
    assert not Policy.objects.exists()


def test_deep_nesting_on_the_firewall_import_page_is_an_error_on_the_page(editor, client_for):
    text = '{"name": "deep", "rules": ' + "[" * 5000 + "]" * 5000 + "}"
    response = client_for(editor).post("/firewall/import", {"json": text})
    assert response.status_code == 400
    assert b"the pasted JSON: nests deeper than 64 levels" in response.content
    assert not Policy.objects.exists()


def test_an_unknown_name_in_checks_is_a_400_naming_checks(session_id, editor, client_for):
    body = json.dumps({"tool": "get_order", "arguments": {}, "checks": ["no_such_check"]})
    response = _post(client_for(editor), f"/v1/sessions/{session_id}/check", body)
    assert response.status_code == 400
    assert response.json() == {"checks": ["there is no check named `no_such_check`"]}


@pytest.mark.parametrize(
    ("url", "field"),
    [("/v1/events?agent=a%00b", "agent"), ("/v1/audit?actor=%00", "actor")],
)
def test_a_nul_in_a_filter_is_a_400_not_a_database_error(url, field, admin, client_for):
    response = client_for(admin).get(url)
    assert response.status_code == 400
    assert response.json() == {field: ["a NUL character is not allowed"]}


def _policy_file(rules: int) -> bytes:
    body = {
        "name": "big",
        "default_verdict": "allow",
        "rules": [
            {"priority": i, "name": f"rule-{i}", "verdict": "deny", "tool_name_glob": f"t{i}.*"}
            for i in range(1, rules + 1)
        ],
    }
    return json.dumps(body).encode()


@override_settings(STALWART_API_MAX_BODY_BYTES=1000)
def test_a_policy_file_larger_than_the_api_body_bound_is_refused_on_the_pages_unread(
    editor, client_for, organisation, actor_for
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from firewall import services as firewall_services

    content = _policy_file(40)
    assert len(content) > 1000
    client = client_for(editor)
    upload = SimpleUploadedFile("big.json", content, content_type="application/json")
    response = client.post("/firewall/import", {"file": upload})
    assert response.status_code == 400
    assert b"big.json: the file is larger than 1000 bytes" in response.content
    assert not Policy.objects.exists()

    policy = firewall_services.policy_create(
        actor=actor_for(editor, organisation), name="p", default_verdict="allow"
    )
    upload = SimpleUploadedFile("big.json", content, content_type="application/json")
    response = client.post(f"/firewall/{policy.pk}/draft", {"file": upload})
    assert response.status_code == 400
    assert b"big.json: the file is larger than 1000 bytes" in response.content
    assert not policy.rules.exists()
