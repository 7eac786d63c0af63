"""Secrets: every shape of the one credential table is kept out of every sink, and approvals show
a secret as secret while the values that matter stay readable."""

from __future__ import annotations

import io
import json
import logging
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from console import services
from console.models import AuditRow, Event
from firewall.engine import credentials
from firewall.engine.sanitize import build_sanitizer
from proof.engine.codechecks import check_python, check_text
from tests.credential_samples import SAMPLES

#: The secret inside each sample of tests/credential_samples.py.
SECRETS: dict[str, str] = {
    "private_key": "MIIEowIBAAKCAQEA7bqSECRETBODY",
    "url_password": "hunter2pass",
    "url_token": "9f8e7d6c5b4a3f2e",
    "slack_webhook": "B0002/XXXXXXXXXXXXXXXXXXXXXXXX",
    "jwt": "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    "anthropic_key": "abcdefghijklmnopqrstuvwxyz",
    "openai_key": "Zyxwvutsrqponmlkjihgfedcba",
    "stalwart_key": "q7Lm2Np8Rs4Tv6Wx9Yz0Ab3Cd5Ef",
    "github_token": "R2d2C3poBb8Kx9Lm0Nq1Pr4St7Uv5Wy6Za3Yb",
    "slack_token": "123456789012-Qw3rTy8UiOp2",
    "aws_access_key": "IOSFODNN7EXAMPLE",
    "aws_secret_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "bearer_token": "Vq9Lm2Xc8Rt4Zp7Kd3",
    "basic_auth": "ZGVwbG95Omh1bnRlcjJwYXNz",
}
#: One credential of every shape in the table: (the text an attacker gets written, the secret in it).
SHAPES: dict[str, tuple[str, str]] = {name: (SAMPLES[name], SECRETS[name]) for name in SECRETS}
NAMES = sorted(SHAPES)


def test_every_shape_of_the_table_has_an_attack_here():
    assert set(SHAPES) == set(credentials.CREDENTIAL_NAMES)


def _note(shape: str) -> str:
    return f"please use {SHAPES[shape][0]} for this"


# -- the engines -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", NAMES)
def test_a_credential_in_a_call_is_sanitized_by_the_credentials_preset(shape):
    cleaned, labels = build_sanitizer({"presets": ["credentials"]}).redact({"note": _note(shape)})
    assert SHAPES[shape][1] not in cleaned["note"] and "[redacted:credentials]" in cleaned["note"]
    assert labels == ["credentials"]


@pytest.mark.parametrize("shape", NAMES)
def test_a_credential_written_into_a_tools_code_is_reported(shape):
    text, _ = SHAPES[shape]
    rule = "CC006" if shape == "url_password" else "CC001"
    assert rule in {f.rule for f in check_python("tools.py", f"NOTE = {text!r}\n")}
    assert rule in {f.rule for f in check_text("agent.yaml", text.replace("\n", " "))}


# -- the console's sinks ---------------------------------------------------------------------


def _event(organisation, shape: str) -> Event:
    return services.event_record(
        organisation=organisation,
        source="firewall",
        decision="refuse",
        tool="mail.send",
        detail={"arguments": {"body": _note(shape)}},
    )


@pytest.mark.django_db
@pytest.mark.parametrize("shape", NAMES)
def test_a_credential_in_a_calls_arguments_never_reaches_the_event_row(organisation, shape):
    stored = Event.objects.get(pk=_event(organisation, shape).pk).detail["arguments"]["body"]
    assert SHAPES[shape][1] not in stored and f"[redacted:{shape}]" in stored


@pytest.mark.django_db
@pytest.mark.parametrize("shape", NAMES)
def test_a_credential_in_a_calls_arguments_never_reaches_an_export(
    organisation, auditor, client_for, shape
):
    _event(organisation, shape)
    client = client_for(auditor)
    for fmt in ("csv", "json"):
        body = client.get(f"/events/export.{fmt}").getvalue().decode()
        assert SHAPES[shape][1] not in body and f"[redacted:{shape}]" in body


@pytest.mark.django_db
@pytest.mark.parametrize("shape", NAMES)
def test_a_credential_in_a_calls_arguments_never_reaches_the_event_page(
    organisation, auditor, client_for, shape
):
    event = _event(organisation, shape)
    for url in (f"/events/{event.pk}/", "/events/", f"/v1/events/{event.pk}"):
        body = client_for(auditor).get(url).content.decode()
        assert SHAPES[shape][1] not in body, url


@pytest.mark.django_db
@pytest.mark.parametrize("shape", NAMES)
def test_a_credential_as_an_arguments_name_never_reaches_the_event_row_nor_an_export(
    organisation, auditor, client_for, shape
):
    # A hostile agent (or a model told to) writes the secret where a name goes, not a value.
    event = services.event_record(
        organisation=organisation,
        source="firewall",
        decision="refuse",
        tool="mail.send",
        detail={"arguments": {SHAPES[shape][0]: "x", "order_id": "4411"}},
    )
    stored = Event.objects.get(pk=event.pk).detail["arguments"]
    assert SHAPES[shape][1] not in json.dumps(stored)
    assert stored["order_id"] == "4411"
    assert f"[redacted:{shape}]" in json.dumps(stored)
    client = client_for(auditor)
    for url in ("/events/export.csv", "/events/export.json", f"/events/{event.pk}/"):
        assert SHAPES[shape][1] not in client.get(url).getvalue().decode(), url


@pytest.mark.django_db
@pytest.mark.parametrize("shape", NAMES)
def test_a_credential_in_a_change_never_reaches_the_audit_row(
    organisation, admin, actor_for, shape
):
    from django.db import transaction

    with transaction.atomic():
        services.audit_record(
            actor=actor_for(admin, organisation),
            action="policy.update",
            object_type="policy",
            object_id=1,
            changes={"notes": {"old": "", "new": _note(shape)}},
        )
    stored = json.dumps(AuditRow.objects.get(organisation=organisation).changes)
    assert SHAPES[shape][1] not in stored and f"[redacted:{shape}]" in stored


@pytest.mark.django_db
@pytest.mark.parametrize("shape", ["url_token", "url_password", "slack_webhook"])
def test_a_webhook_address_with_a_token_never_reaches_the_audit_row(
    organisation, admin, actor_for, client_for, shape
):
    services.settings_update(
        actor=actor_for(admin, organisation), data={"notify_url": SHAPES[shape][0]}
    )
    stored = json.dumps(AuditRow.objects.get(organisation=organisation).changes)
    assert SHAPES[shape][1] not in stored and f"[redacted:{shape}]" in stored
    page = client_for(admin).get("/audit/").content.decode()
    assert SHAPES[shape][1] not in page


@pytest.fixture
def web_log():
    """What the web process's configured log handler writes, captured from its own stream."""
    handler = next(h for h in logging.getLogger().handlers if h.get_name() == "console")
    buffer = io.StringIO()
    previous = handler.setStream(buffer)
    yield buffer
    handler.setStream(previous)


@pytest.mark.django_db
@pytest.mark.parametrize("shape", NAMES)
def test_a_credential_in_a_requested_address_never_reaches_the_web_log(
    web_log, auditor, client_for, shape
):
    response = client_for(auditor).get("/events/no-such-page/" + quote(SHAPES[shape][0], safe=""))
    assert response.status_code == 404
    written = web_log.getvalue()
    assert "Not Found: /events/no-such-page/" in written
    assert SHAPES[shape][1] not in written and f"[redacted:{shape}]" in written


@pytest.fixture(scope="module")
def worker_log(tmp_path_factory) -> str:
    """The log of a real worker that was sent one task message for each shape (one each, since
    the worker shortens a long message body before logging it)."""
    from console.celery import app
    from tests.worker import running_worker

    log = Path(tmp_path_factory.mktemp("worker")) / "worker.log"
    with running_worker(log=log):
        for shape in NAMES:
            app.send_task("stalwart.no_such_task", args=[_note(shape)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and log.read_text().count(UNKNOWN) < len(NAMES):
            time.sleep(0.2)
    return log.read_text()


UNKNOWN = "Received unregistered task of type 'stalwart.no_such_task'"


@pytest.mark.parametrize("shape", NAMES)
def test_a_credential_in_a_task_message_never_reaches_the_worker_log(worker_log, shape):
    assert worker_log.count(UNKNOWN) == len(NAMES)
    assert SHAPES[shape][1] not in worker_log
    assert f"[redacted:{shape}]" in worker_log


# -- approvals -------------------------------------------------------------------------------

#: What an agent asked to run: the values that matter, and credentials beside them.
ASKED = {
    "order_id": "4411",
    "amount": 40.0,
    "api_key": "stw_1a2b3c4d_q7Lm2Np8Rs4Tv6Wx9Yz0Ab3Cd5Ef",
    "header": "Bearer Vq9Lm2Xc8Rt4Zp7Kd3",
    "password": "hunter2-horse",
    "note": "use sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
    "reply_to": "stw_9z8y7x6w_Kk2Jj3Hh4Gg5Ff6Dd7Ss8Aa9",
}
CLEAR = (
    "Kk2Jj3Hh4Gg5Ff6Dd7Ss8Aa9",
    "q7Lm2Np8Rs4Tv6Wx9Yz0Ab3Cd5Ef",
    "Vq9Lm2Xc8Rt4Zp7Kd3",
    "hunter2-horse",
    "abcdefghijklmnopqrstuvwxyz",
)


#: An earlier call of the session, shown beside the request: its argument carries a GitHub token.
LOOKED_UP = "4411 via ghp_R2d2C3poBb8Kx9Lm0Nq1Pr4St7Uv5Wy6Za3Yb"


@pytest.fixture
def asked(organisation, editor, client_for, actor_for):
    """A tool-check approval whose call carries credentials, as the check puts it in the queue."""
    from guard.approvals import approval_request_create
    from guard.models import GuardSession
    from stalwart_agents import Agent
    from tests.guard_console.test_sessions_api import SHOP, _open

    desk = Agent.from_file(SHOP)
    client = client_for(editor)
    session_id = _open(client, (desk.catalogue(), desk.rules().record))
    ran = {"tool": "get_order", "arguments": {"order_id": LOOKED_UP}, "result": {"status": "paid"}}
    recorded = client.post(
        f"/v1/sessions/{session_id}/record", json.dumps(ran), content_type="application/json"
    )
    assert recorded.status_code == 200, recorded.content
    session = GuardSession.objects.get(public_id=session_id)
    call = {"tool": "refund_card", "arguments": dict(ASKED), "origins": {"amount": "model"}}
    shown = {name: {"value": value, "origin": "model"} for name, value in ASKED.items()}
    return approval_request_create(
        actor=actor_for(editor, organisation),
        session=session,
        call=call,
        decision={
            "decision": "confirm",
            "reasons": ["argument_origin: amount"],
            "detail": {"arguments": shown},
        },
    )


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["approver", "editor"])
def test_credentials_in_a_tool_check_approval_are_not_shown_on_the_approvals_page(
    asked, people, client_for, role
):
    page = client_for(people[role]).get("/approvals/").content.decode()
    assert not [secret for secret in CLEAR if secret in page]
    assert "4411" in page and "40.0" in page
    assert "[redacted:stalwart_key]" in page and "[redacted:bearer_token]" in page
    assert "[redacted:anthropic_key]" in page and "[redacted]" in page


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["approver", "editor"])
def test_credentials_in_a_tool_check_approval_are_not_shown_by_the_approvals_api(
    asked, people, client_for, role
):
    client = client_for(people[role])
    for body in (
        client.get("/v1/approvals").json()["results"][0],
        client.get(f"/v1/approvals/{asked.public_id}").json(),
    ):
        shown = body["arguments"]
        assert not [secret for secret in CLEAR if secret in json.dumps(body)]
        assert (shown["order_id"], shown["amount"]) == ("4411", 40.0)
        assert shown["api_key"] == "[redacted]" and shown["password"] == "[redacted]"
        assert shown["header"] == "Bearer [redacted:bearer_token]"
        assert shown["note"] == "use [redacted:anthropic_key]"
        assert shown["reply_to"] == "[redacted:stalwart_key]"


@pytest.mark.django_db
def test_credentials_in_the_sessions_last_calls_are_not_shown_beside_an_approval(
    asked, approver, client_for
):
    page = client_for(approver).get("/approvals/").content.decode()
    assert "get_order" in page and "4411 via [redacted:github_token]" in page
    assert "R2d2C3poBb8Kx9Lm0Nq1Pr4St7Uv5Wy6Za3Yb" not in page


@pytest.mark.django_db
def test_the_settings_page_shows_other_roles_the_webhook_without_its_token(
    organisation, admin, editor, auditor, actor_for, client_for
):
    from console import services as console_services

    url = "https://hooks.example.org/alerts?token=zq8Rk2mWv7Lp4Xn9Tc3Y"
    console_services.settings_update(actor=actor_for(admin, organisation), data={"notify_url": url})
    for person in (editor, auditor):
        page = client_for(person).get("/settings/").content.decode()
        assert "zq8Rk2mWv7Lp4Xn9Tc3Y" not in page
        assert 'id="value-notify_url"' in page


@pytest.mark.django_db
@pytest.mark.parametrize("shape", ["anthropic_key", "github_token", "stalwart_key"])
def test_a_credential_named_in_a_refused_calls_reasons_never_reaches_the_feed(
    editor, auditor, client_for, shape
):
    # A malformed call's reason names the field path, and the path is the caller's key.
    body = {"tool": "mail.send", "arguments": {SHAPES[shape][0]: "\u0000"}}
    response = client_for(editor).post(
        "/v1/firewall/evaluate", json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 400
    event = Event.objects.get(source="firewall")
    assert event.reasons and SHAPES[shape][1] not in json.dumps(event.reasons)
    client = client_for(auditor)
    for url in ("/events/export.csv", "/events/export.json", f"/events/{event.pk}/", "/events/"):
        assert SHAPES[shape][1] not in client.get(url).getvalue().decode(), url
