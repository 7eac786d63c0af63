"""What a matched sequence sets off: a held session, a tool switched off, a signed notification."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from console import services as console_services
from console.access import Actor
from console.models import AuditRow, Event, Notification, SessionHold, ToolSwitch
from console.tasks import deliver_notification
from firewall import services
from tests.firewall.test_sequences import EXFIL, drain_all

pytestmark = pytest.mark.django_db


def _rule(on_match):
    return {**EXFIL, "sequence": {**EXFIL["sequence"], "on_match": on_match}}


@pytest.fixture
def actor(editor, organisation):
    return Actor(
        organisation=organisation, role="editor", label="user:eve-editor", user_id=editor.pk
    )


def _setup(actor, on_match):
    policy = services.policy_create(actor=actor, name="production")
    services.rule_create(actor=actor, policy=policy, data=_rule(on_match))
    services.policy_publish(actor=actor, policy=policy)
    return policy


def _call(actor, tool, session="s1", **extra):
    return services.firewall_evaluate(
        actor=actor, call={"tool": tool, "agent": "desk", "session": session, **extra}
    )


def _complete(actor, session="s1"):
    for _ in range(3):
        _call(actor, "crm.read", session)
    _call(actor, "crm.export", session)
    _call(actor, "http.post", session, stage="egress", destination="https://example.org/x")
    drain_all()


def test_hold_session_sends_later_writes_of_that_session_to_a_person(actor, admin, client_for):
    _setup(actor, ["hold_session"])
    _complete(actor)
    hold = SessionHold.objects.get()
    assert (hold.agent, hold.session, hold.released_at) == ("desk", "s1", None)
    held = _call(actor, "crm.update")
    assert (held["decision"], held["verdict"]) == ("confirm", "require_approval")
    assert "session_held" in held["reasons"]
    # No catalogue says `crm.read` reads in session s1, and the call's own `kind` is not taken.
    assert _call(actor, "crm.read", kind="read")["decision"] == "confirm"
    assert _call(actor, "crm.update", session="other")["decision"] == "allow"
    response = client_for(admin).post(f"/controls/holds/{hold.pk}/release")
    assert response.status_code == 302
    assert _call(actor, "crm.update")["decision"] == "allow"
    assert AuditRow.objects.filter(action="control.hold.release").count() == 1


def test_disable_tool_switches_the_completing_tool_off_for_the_agent(actor, admin, client_for):
    _setup(actor, ["disable_tool"])
    _complete(actor)
    switch = ToolSwitch.objects.get()
    assert (switch.agent, switch.tool) == ("desk", "http.post")
    refused = _call(actor, "http.post", session="later")
    assert (refused["decision"], refused["reasons"]) == ("refuse", ["tool_disabled"])
    assert _call(actor, "http.post", session="x")["decision"] == "refuse"
    other_agent = services.firewall_evaluate(
        actor=actor, call={"tool": "http.post", "agent": "billing"}
    )
    assert other_agent["decision"] == "allow"
    client_for(admin).post(f"/controls/switches/{switch.pk}/enable")
    assert _call(actor, "http.post", session="y")["decision"] == "allow"


def test_an_auditor_cannot_release_a_hold(actor, auditor, client_for):
    _setup(actor, ["hold_session"])
    _complete(actor)
    hold = SessionHold.objects.get()
    assert client_for(auditor).post(f"/controls/holds/{hold.pk}/release").status_code == 403
    assert SessionHold.objects.get().released_at is None


def test_a_shadow_sequence_raises_its_alert_but_sets_nothing_off(actor):
    policy = services.policy_create(actor=actor, name="production")
    services.rule_create(
        actor=actor,
        policy=policy,
        data={**_rule(["hold_session", "disable_tool"]), "mode": "shadow"},
    )
    services.policy_publish(actor=actor, policy=policy)
    _complete(actor)
    alert = Event.objects.get(is_alert=True)
    assert "shadow" in alert.reasons and alert.detail["actions"] == []
    assert not SessionHold.objects.exists() and not ToolSwitch.objects.exists()


class _Receiver(BaseHTTPRequestHandler):
    received: list = []
    answers: list = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((dict(self.headers), body))
        code = type(self).answers.pop(0) if type(self).answers else 200
        self.send_response(code)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    _Receiver.received, _Receiver.answers = [], []
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hook", _Receiver
    server.shutdown()


def test_notify_posts_a_signed_alert_and_records_the_delivery(
    actor, admin, organisation, receiver, actor_for, monkeypatch
):
    url, handler = receiver
    console_services.settings_update(actor=actor_for(admin, organisation), data={"notify_url": url})
    sent = []
    monkeypatch.setattr("firewall.matching._send", lambda name, *args: sent.append((name, args)))
    _setup(actor, ["notify"])
    _complete(actor)
    notification = Notification.objects.get()
    deliver_notification.apply(args=[notification.pk])
    notification.refresh_from_db()
    assert (notification.status, notification.attempts, notification.response_code) == (
        "delivered",
        1,
        200,
    )
    headers, body = handler.received[0]
    secret = organisation.settings.notify_secret
    expected = hmac.new(
        secret.encode(), headers["X-Stalwart-Timestamp"].encode() + b"." + body, hashlib.sha256
    ).hexdigest()
    assert headers["X-Stalwart-Signature"] == f"sha256={expected}"
    payload = json.loads(body)
    assert payload["alert"]["rule"] == "exfil chain"
    assert [len(s) for s in payload["alert"]["chain"]] == [3, 1, 1]


def test_a_failed_delivery_is_retried_and_recorded(
    actor, admin, organisation, receiver, actor_for, monkeypatch
):
    url, handler = receiver
    handler.answers = [500, 503]
    console_services.settings_update(actor=actor_for(admin, organisation), data={"notify_url": url})
    monkeypatch.setattr("firewall.matching._send", lambda *a: None)
    _setup(actor, ["notify"])
    _complete(actor)
    notification = Notification.objects.get()
    # Run eagerly, Celery performs the retries inline; every attempt is recorded.
    deliver_notification.apply(args=[notification.pk])
    notification.refresh_from_db()
    assert (notification.status, notification.attempts, notification.last_error) == (
        "delivered",
        3,
        "",
    )
    assert len(handler.received) == 3
    assert len({h["X-Stalwart-Delivery"] for h, _ in handler.received}) == 1


def test_a_delivery_gives_up_after_its_attempts(actor, admin, organisation, actor_for, monkeypatch):
    from console import tasks

    console_services.settings_update(
        actor=actor_for(admin, organisation), data={"notify_url": "http://127.0.0.1:9/closed"}
    )
    monkeypatch.setattr("firewall.matching._send", lambda *a: None)
    monkeypatch.setattr(tasks, "MAX_ATTEMPTS", 2)
    _setup(actor, ["notify"])
    _complete(actor)
    notification = Notification.objects.get()
    deliver_notification.apply(args=[notification.pk])
    notification.refresh_from_db()
    assert (notification.status, notification.attempts) == ("failed", 2)
    assert notification.last_error.startswith("the endpoint could not be reached")


def test_only_an_admin_sets_the_webhook(editor, organisation, client_for):
    response = client_for(editor).put_json("/v1/settings", {"notify_url": "https://evil.example"})
    assert response.status_code == 403
    assert organisation.settings.notify_url == ""
