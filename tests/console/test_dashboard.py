"""The dashboard of each role: the work waiting for that role, beside the day's counts."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from console.models import Event
from guard.approvals import firewall_request_create
from guard.models import ApprovalRequest

pytestmark = pytest.mark.django_db


@pytest.fixture
def waiting(organisation, editor, actor_for):
    request = firewall_request_create(
        actor=actor_for(editor, organisation),
        call={"tool": "http.post", "agent": "desk", "arguments": {}},
        decision={"reasons": ["require_approval"], "rule": "hold posts", "policy": "p"},
    )
    ApprovalRequest.objects.filter(pk=request.pk).update(
        created_at=timezone.now() - dt.timedelta(minutes=12)
    )
    return request


def test_an_approver_sees_the_approvals_waiting_and_the_oldest_age(waiting, approver, client_for):
    page = client_for(approver).get("/").content.decode()
    panel = page.split('id="dash-approvals"')[1].split("</section>")[0]
    assert "<strong>1</strong> confirm prompt</a>" in panel
    assert "the oldest has waited 12 min" in panel
    assert 'id="dash-rules"' not in page  # an approver changes no rule


def test_an_auditor_sees_the_alerts_and_the_last_hour(organisation, auditor, client_for):
    Event.objects.create(
        organisation=organisation,
        source="sequence",
        decision="allow",
        verdict="audit",
        rule="exfil chain",
        is_alert=True,
        detail={},
    )
    page = client_for(auditor).get("/").content.decode()
    panel = page.split('id="dash-alerts"')[1].split("</section>")[0]
    assert "exfil chain" in panel and "1 decision" in panel
    assert 'id="dash-approvals"' not in page


def test_an_editor_sees_the_rules_that_fired_and_the_shadow_ones(
    organisation, editor, actor_for, client_for
):
    from firewall import services

    actor = actor_for(editor, organisation)
    policy = services.policy_create(actor=actor, name="production")
    services.rule_create(
        actor=actor,
        policy=policy,
        data={"name": "no rm", "tool_name_glob": "shell.*", "verdict": "deny"},
    )
    services.rule_create(
        actor=actor,
        policy=policy,
        data={"name": "maybe", "tool_name_glob": "http.*", "verdict": "deny", "mode": "shadow"},
    )
    services.policy_publish(actor=actor, policy=policy)
    for tool in ("shell.exec", "shell.exec", "http.get"):
        services.firewall_evaluate(actor=actor, call={"tool": tool})
    page = client_for(editor).get("/").content.decode()
    panel = page.split('id="dash-rules"')[1].split("</section>")[0]
    assert ">no rm</a>: 2" in panel
    assert ">maybe</a>: 1 call" in panel
