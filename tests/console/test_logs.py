"""JSON log lines: the request id and the organisation on every line, a decision's rule and reasons, no secret."""

from __future__ import annotations

import json
import logging

import pytest

from console import logs, services


@pytest.fixture
def json_lines():
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = Keep()
    handler.setFormatter(logs.JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    old_level = root.level
    root.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in records]
    root.removeHandler(handler)
    root.setLevel(old_level)


@pytest.mark.django_db
def test_a_decision_line_carries_the_request_id_the_organisation_the_rule_and_reasons(
    json_lines, organisation, admin, client_for
):
    client = client_for(admin)
    answer = client.get("/", HTTP_X_REQUEST_ID="req-0123456789")
    assert answer["X-Request-ID"] == "req-0123456789"
    # As while a request runs: its id is bound for every line logged meanwhile.
    token = logs.request_id.set("req-0123456789")
    try:
        services.event_record(
            organisation=organisation,
            source="firewall",
            decision="refuse",
            verdict="deny",
            rule="no rm -rf",
            reasons=["rule: no rm -rf"],
            tool="shell.exec",
        )
    finally:
        logs.request_id.reset(token)
    line = next(entry for entry in json_lines() if entry["logger"] == "stalwart.decisions")
    assert line["request_id"] == "req-0123456789"
    assert line["organisation"] == "acme"
    assert (line["decision"], line["rule"], line["reasons"]) == (
        "refuse",
        "no rm -rf",
        ["rule: no rm -rf"],
    )


def test_a_secret_in_a_message_a_field_or_an_error_is_never_written(json_lines):
    log = logging.getLogger("stalwart.test")
    try:
        raise ValueError("upstream said Bearer abcdefghijklmnop0123")
    except ValueError:
        log.exception(
            "calling with sk-ant-abcdefghijklmnopqrstuv",
            extra={"api_key": "stw_abcdefgh_0123456789abcdefghij", "tool": "crm.read"},
        )
    (line,) = json_lines()
    text = json.dumps(line)
    assert "sk-ant-abcdefghijklmnopqrstuv" not in text
    assert "stw_abcdefgh_0123456789abcdefghij" not in text
    assert "abcdefghijklmnop0123" not in text
    assert line["tool"] == "crm.read" and line["level"] == "error"


def test_a_request_id_that_is_not_a_short_token_is_replaced(client):
    answer = client.get("/accounts/login/", HTTP_X_REQUEST_ID="bad id\nwith a newline")
    assert len(answer["X-Request-ID"]) == 32 and "\n" not in answer["X-Request-ID"]


def test_the_json_format_is_chosen_by_the_environment():
    config = logs.logging_config("json", "INFO")
    assert config["handlers"]["console"]["formatter"] == "json"
    assert "formatter" not in logs.logging_config("text", "INFO")["handlers"]["console"]
