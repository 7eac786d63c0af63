"""Traces: one span per decision, with the decision, the reasons and the rule, never the arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from console import tracing
from stalwart_agents import Agent

SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop" / "agent.yaml"


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    yield exporter.get_finished_spans
    tracing.use(None)


def _post(client, url, body):  # noqa: ANN001, ANN202
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.mark.django_db
def test_a_firewall_decision_is_one_span_with_its_verdict_and_reasons(spans, editor, client_for):
    answer = _post(
        client_for(editor),
        "/v1/firewall/evaluate",
        {"tool": "shell.exec", "arguments": {"command": "rm -rf / --password hunter2"}},
    )
    assert answer.status_code == 200, answer.content
    (span,) = spans()
    assert span.name == "stalwart.firewall"
    assert span.attributes["stalwart.decision"] == "refuse"
    assert span.attributes["stalwart.verdict"] == "deny"
    assert tuple(span.attributes["stalwart.reasons"]) == ("no_active_policy",)
    assert span.attributes["stalwart.tool"] == "shell.exec"
    assert span.attributes["stalwart.organisation"] == "acme"
    assert "hunter2" not in json.dumps(dict(span.attributes))


@pytest.mark.django_db
def test_a_tool_check_is_one_span_with_its_rule(spans, editor, client_for):
    desk = Agent.from_file(SHOP)
    client = client_for(editor)
    session = _post(
        client,
        "/v1/sessions",
        {"agent": "billing", "catalogue": desk.catalogue(), "rulebook": desk.rules().record},
    ).json()["id"]
    _post(
        client,
        f"/v1/sessions/{session}/check",
        {
            "tool": "refund_card",
            "arguments": {"order_id": "4411", "amount": 40.0},
            "origins": {"order_id": "typed", "amount": "typed"},
            "context": {"order_paid": False},
        },
    )
    (span,) = [s for s in spans() if s.name == "stalwart.toolcheck"]
    assert span.attributes["stalwart.decision"] == "refuse"
    assert tuple(span.attributes["stalwart.reasons"]) == ("refuse",)
    assert span.attributes["stalwart.rule"]


def test_without_an_endpoint_nothing_is_traced(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert tracing._from_environment() is None
