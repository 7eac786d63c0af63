"""Evidence a person can read: recorded calls as highlighted JSON, decisions in plain language,
an alert page that names its rule and draws its chain as a timeline."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from console import plain, services
from console.models import Event
from console.templatetags.evidence import json_html

pytestmark = pytest.mark.django_db


def test_a_value_is_shown_as_json_never_as_a_python_repr():
    html = json_html({"amount": 40.0, "paid": True, "note": None, "tags": ["a"], "id": "x'y"})
    assert '<span class="j-key">&quot;amount&quot;</span>: <span class="j-num">40.0</span>' in html
    assert '<span class="j-lit">true</span>' in html and '<span class="j-lit">null</span>' in html
    assert "True" not in html and "None" not in html
    assert "&quot;x&#x27;y&quot;" in html


def test_markup_in_a_recorded_value_is_escaped():
    html = json_html({"<b>": "<script>alert(1)</script>"})
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;" in html


def test_a_redacted_value_is_marked_as_a_secret():
    html = json_html({"authorization": "[redacted]"})
    assert (
        '<span class="j-secret" title="a secret: never shown">&quot;[redacted]&quot;</span>' in html
    )


def test_a_deep_value_is_still_shown_and_bounded():
    value: object = "leaf"
    for _ in range(200):
        value = [value]
    html = json_html(value)
    assert "leaf" in html


class _Event:
    def __init__(self, decision, reasons, rule=""):
        self.decision, self.reasons, self.rule = decision, reasons, rule


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("en", "asked: the amount came from the model, not from you"),
        ("pt-BR", "perguntada: o valor de amount veio do modelo, não de você"),
    ],
)
def test_a_decision_is_said_in_the_organisations_language(language, text):
    event = _Event("confirm", ["argument_origin: amount"])
    assert plain.plain_decision(event, language) == text


def test_a_code_without_a_sentence_is_left_to_its_code():
    assert plain.plain_decision(_Event("refuse", ["something_new"]), "en") == "refused"
    assert plain.plain_decision(_Event("refuse", [], rule="no rm"), "en") == (
        "refused: the rule no rm decided"
    )


def test_the_event_page_says_the_decision_in_plain_words(organisation, auditor, client_for):
    event = services.event_record(
        organisation=organisation,
        source="toolcheck",
        decision="refuse",
        tool="refund_card",
        reasons=["tainted_call"],
        detail={"arguments": {"order_id": "4411"}},
    )
    page = client_for(auditor).get(f"/events/{event.pk}/").content.decode()
    assert 'id="event-plain">refused: it was proposed after reading outside content<' in page
    assert '<span class="j-str">&quot;4411&quot;</span>' in page


def test_an_alert_page_names_its_rule_and_draws_its_chain(organisation, auditor, client_for):
    calls = [
        services.event_record(
            organisation=organisation,
            source="firewall",
            decision="allow",
            tool="crm.read",
            session="s1",
            agent="desk",
        )
        for _ in range(12)
    ]
    first = timezone.now().replace(hour=9, minute=0, second=5, microsecond=0)
    for i, call in enumerate(calls):  # a minute apart: the step runs from 09:00:05 to 09:11:05
        Event.objects.filter(pk=call.pk).update(at=first + dt.timedelta(minutes=i))
    alert = Event.objects.create(
        organisation=organisation,
        source="sequence",
        decision="allow",
        verdict="audit",
        rule="exfil chain",
        session="s1",
        agent="desk",
        tool="crm.read",
        is_alert=True,
        detail={
            "rule_id": 1,
            "chain": [[{"id": e.pk, "tool": "crm.read"} for e in calls]],
            "actions": ["hold_session"],
            "shadow": False,
        },
    )
    page = client_for(auditor).get(f"/events/{alert.pk}/").content.decode()
    assert f"<title>Alert {alert.pk} · exfil chain · Stalwart</title>" in page
    assert "Alert 117: allow" not in page and "badge decision-allow" not in page
    assert 'verdict-audit">audit</span>' in page and "then hold_session" in page
    step = page.split('class="chain-step"')[1].split("</li>")[0]
    assert "<code>crm.read</code> × 12, 09:00:05 to 09:11:05" in step
    assert step.count('href="/events/') == 5 and "and 7 more" in step
