"""The event feed's foundation: recording with redaction, filtering, paging, and the API."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from console import services
from console.models import Event
from console.redaction import REDACTED, redact

pytestmark = pytest.mark.django_db


def _event(organisation, minutes_ago=0, **fields):
    event = services.event_record(
        organisation=organisation, **{"source": "firewall", "decision": "allow", **fields}
    )
    Event.objects.filter(pk=event.pk).update(at=timezone.now() - dt.timedelta(minutes=minutes_ago))
    return event


def test_secrets_are_redacted_before_an_event_is_written(organisation):
    event = services.event_record(
        organisation=organisation,
        source="toolcheck",
        decision="refuse",
        detail={
            "arguments": {
                "password": "hunter2",
                "note": "Bearer abcdefghijklmnop123",
                "nested": [{"api_key": "k-123"}, "sk-ant-abcdefghijklmnopqrstu"],
                "card": "4111",
            }
        },
        secret_keys=frozenset({"card"}),
    )
    stored = Event.objects.get(pk=event.pk).detail["arguments"]
    assert stored["password"] == REDACTED
    assert stored["note"] == "Bearer [redacted:bearer_token]"
    assert stored["nested"] == [{"api_key": REDACTED}, "[redacted:anthropic_key]"]
    assert stored["card"] == REDACTED
    assert "hunter2" not in str(Event.objects.get(pk=event.pk).__dict__)


def test_redaction_leaves_ordinary_values_alone():
    assert redact({"order_id": "4411", "amount": 40.0, "items": [1, "a"]}) == {
        "order_id": "4411",
        "amount": 40.0,
        "items": [1, "a"],
    }


@pytest.fixture
def feed(organisation):
    return [
        _event(organisation, 300, agent="desk", tool="get_order", decision="allow"),
        _event(
            organisation,
            200,
            agent="billing",
            tool="refund_card",
            decision="confirm",
            session="s1",
            reasons=["write"],
        ),
        _event(
            organisation,
            100,
            agent="billing",
            tool="refund_card",
            decision="refuse",
            session="s2",
            reasons=["refuse"],
            rule="refunds",
        ),
        _event(
            organisation,
            5,
            agent="desk",
            tool="shell.exec",
            decision="refuse",
            rule="no rm -rf",
            verdict="deny",
        ),
    ]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, [3, 2, 1, 0]),
        ({"agent": "billing"}, [2, 1]),
        ({"tool": "refund_card", "decision": "refuse"}, [2]),
        ({"session": "s1"}, [1]),
        ({"rule": "no rm -rf"}, [3]),
        ({"decision": "allow"}, [0]),
    ],
)
def test_the_feed_filters(params, expected, feed, auditor, client_for):
    body = client_for(auditor).get("/v1/events", params).json()
    assert [e["id"] for e in body["results"]] == [feed[i].pk for i in expected]
    page = client_for(auditor).get("/events/", params)
    assert page.content.count(b'class="event-row') == len(expected)


def test_the_feed_filters_by_time_range(feed, auditor, client_for):
    now = timezone.now()
    since = (now - dt.timedelta(minutes=250)).isoformat()
    until = (now - dt.timedelta(minutes=50)).isoformat()
    body = client_for(auditor).get("/v1/events", {"since": since, "until": until}).json()
    assert [e["id"] for e in body["results"]] == [feed[2].pk, feed[1].pk]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"decision": "deny"}, "decision"),
        ({"since": "soon"}, "since"),
        ({"since": "2026-11-30", "until": "2026-11-01"}, "until"),
    ],
)
def test_a_bad_filter_names_its_parameter(params, field, feed, auditor, client_for):
    response = client_for(auditor).get("/v1/events", params)
    assert response.status_code == 400
    assert field in response.json()
    page = client_for(auditor).get("/events/", params)
    assert page.status_code == 200
    assert f"{field}: ".encode() in page.content


def test_the_feed_pages_with_htmx(organisation, auditor, client_for):
    for i in range(30):
        _event(organisation, i, tool=f"t{i}")
    client = client_for(auditor)
    first = client.get("/events/")
    assert first.content.count(b'class="event-row') == 25
    assert b'hx-get="?page=2"' in first.content
    second = client.get(
        "/events/", {"page": 2}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="event-rows"
    )
    assert b"<html" not in second.content
    assert second.content.count(b'class="event-row') == 5


def test_an_event_page_shows_the_redacted_detail(organisation, auditor, client_for):
    event = services.event_record(
        organisation=organisation,
        source="toolcheck",
        decision="refuse",
        tool="refund_card",
        reasons=["refuse"],
        rule="refunds",
        detail={"token": "abc", "flow": "refunds"},
    )
    page = client_for(auditor).get(f"/events/{event.pk}/")
    assert page.status_code == 200
    assert b"refunds" in page.content and b"abc" not in page.content


def test_the_live_poll_returns_only_newer_rows_and_a_new_poller(
    feed, organisation, auditor, client_for
):
    client = client_for(auditor)
    newest = feed[-1].pk
    nothing = client.get(
        "/events/", {"after": newest}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="event-tbody"
    )
    assert b'class="event-row' not in nothing.content
    assert (
        f"after={newest}".encode() in nothing.content and b'hx-swap-oob="true"' in nothing.content
    )
    fresh = _event(organisation, 0, tool="fresh.tool", decision="refuse")
    response = client.get(
        "/events/",
        {"after": newest, "decision": "refuse"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="event-tbody",
    )
    assert response.content.count(b'class="event-row') == 1
    assert b"fresh.tool" in response.content
    assert f"after={fresh.pk}".encode() in response.content
    assert b"decision=refuse" in response.content  # the poller keeps the filters


def test_the_chart_counts_decisions_per_hour(feed, organisation):
    from console.selectors import EventFilters, decisions_per_hour

    buckets = decisions_per_hour(organisation=organisation, filters=EventFilters())
    assert len(buckets) == 24
    totals = {s: sum(b[s] for b in buckets) for s in ("allow", "confirm", "refuse")}
    # A firewall's deny is a refusal: one series, not two.
    assert totals == {"allow": 1, "confirm": 1, "refuse": 2}


def test_the_chart_is_counted_by_the_database_not_row_by_row(organisation):
    # The feed's page and its poll (every 2 s while it is open) draw the chart: a day of events
    # read into the web worker one by one is a worker busy for as long as the day is large.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from console.selectors import EventFilters, decisions_per_hour

    for minutes in (5, 10, 70):
        _event(organisation, minutes, decision="refuse", verdict="deny")
    _event(organisation, 5, decision="allow")
    with CaptureQueriesContext(connection) as queries:
        buckets = decisions_per_hour(organisation=organisation, filters=EventFilters())
    assert sum(b["refuse"] for b in buckets) == 3 and sum(b["allow"] for b in buckets) == 1
    [query] = queries.captured_queries
    assert "GROUP BY" in query["sql"].upper() and "COUNT(" in query["sql"].upper()


def test_the_feed_page_draws_the_chart(feed, auditor, client_for):
    page = client_for(auditor).get("/events/")
    assert b'id="decisions-chart"' in page.content
    assert page.content.count(b"<rect ") == 4  # four hours with one decision each
    assert page.content.count(b'class="legend-total"') == 3


def test_export_csv_and_json_follow_the_filters(feed, auditor, client_for):
    import csv
    import io
    import json

    client = client_for(auditor)
    response = client.get("/events/export.csv", {"agent": "billing"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.getvalue().decode())))
    assert [int(r["id"]) for r in rows] == [feed[2].pk, feed[1].pk]
    body = json.loads(client.get("/events/export.json", {"decision": "refuse"}).getvalue())
    assert [e["id"] for e in body] == [feed[3].pk, feed[2].pk]
    assert client.get("/events/export.xml").status_code == 404
    assert client.get("/events/export.csv", {"decision": "maybe"}).status_code == 400


def test_the_export_is_streamed_row_by_row(feed, auditor, client_for):
    # Up to 100,000 events, each with its detail: built whole, the file and its copies were held
    # in the web worker's memory at once (about a gigabyte for 3 KB a row).
    import json

    client = client_for(auditor)
    for fmt in ("csv", "json"):
        response = client.get(f"/events/export.{fmt}")
        assert response.streaming, fmt
        assert response["Content-Disposition"].startswith('attachment; filename="events-')
    body = json.loads(client.get("/events/export.json").getvalue())
    assert [e["id"] for e in body] == [e.pk for e in reversed(feed)]
    empty = client.get("/events/export.json", {"agent": "nobody"}).getvalue()
    assert empty == b"[\n\n]\n"  # as it was written whole


def test_export_needs_the_role(feed, approver, client_for):
    assert client_for(approver).get("/events/export.csv").status_code == 403


def test_alerts_only_filter(organisation, auditor, client_for):
    _event(organisation, 1, tool="a")
    alert = services.event_record(
        organisation=organisation,
        source="sequence",
        decision="allow",
        verdict="audit",
        rule="exfil chain",
    )
    Event.objects.filter(pk=alert.pk).update(is_alert=True)
    body = client_for(auditor).get("/v1/events", {"alerts": "1"}).json()
    assert [e["id"] for e in body["results"]] == [alert.pk]


@pytest.mark.parametrize(
    ("tool", "names"),
    [
        ("crm", {"crm.read", "crm.export"}),
        ("crm.*", {"crm.read", "crm.export"}),
        ("*.export", {"crm.export"}),
        ("CRM.READ", {"crm.read"}),
    ],
)
def test_the_tool_filter_takes_a_part_of_the_name_or_a_glob(
    organisation, auditor, client_for, tool, names
):
    for name in ("crm.read", "crm.export", "http.post"):
        _event(organisation, 0, tool=name)
    rows = client_for(auditor).get("/v1/events", {"tool": tool}).json()["results"]
    assert {r["tool"] for r in rows} == names


def test_the_chart_draws_with_svg_numbers_in_a_pt_br_organisation(
    feed, organisation, auditor, client_for
):
    import re

    from console.models import OrganisationSettings

    OrganisationSettings.objects.filter(organisation=organisation).update(language="pt-BR")
    page = client_for(auditor).get("/events/").content.decode()
    drawn = re.findall(r'<rect x="([^"]+)" y="([^"]+)" width="([^"]+)" height="([^"]+)"', page)
    assert drawn and all(re.fullmatch(r"-?\d+(\.\d+)?", n) for row in drawn for n in row)


def test_the_live_poll_redraws_the_chart(feed, organisation, auditor, client_for):
    client = client_for(auditor)
    newest = max(e.pk for e in feed) if isinstance(feed, list) else 0
    _event(organisation, 0, tool="fresh.tool", decision="allow")
    response = client.get(
        "/events/", {"after": newest}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="event-tbody"
    )
    assert b'id="decisions-chart" hx-swap-oob="true"' in response.content
    # the chart redrawn counts every row of the feed, not only the rows the poll brings
    totals = dict(re.findall(rb'data-series="(\w+)">(\d+)<', response.content))
    assert totals == {b"allow": b"2", b"confirm": b"1", b"refuse": b"2"}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"since": "2024-13-45T10:00"}, "since"),  # shaped as a date and time, but no moment
        ({"since": "2024-02-30"}, "since"),
        ({"until": "2024-01-01T25:00"}, "until"),
        ({"since": "2024-01-01T10:00:00+99:00"}, "since"),
        ({"since": "0001-01-01T00:00:00+23:59"}, "since"),  # before the calendar's first moment
        ({"since": "9999-12-31T23:59:59-23:59"}, "since"),  # after its last
        ({"after": "²"}, "after"),  # a digit to str.isdigit, not to int()
        ({"after": "9" * 30}, "after"),
        ({"tool": "a*" * 2000}, "tool"),  # a clause per piece: SQLite's expression tree overflowed
        ({"agent": "a\x00b"}, "agent"),  # PostgreSQL cannot compare a text with a NUL
        ({"session": "x" * 10_000}, "session"),
    ],
)
def test_a_malformed_or_huge_filter_is_refused_by_name_not_a_500(
    params, field, feed, auditor, client_for
):
    client = client_for(auditor)
    client.raise_request_exception = False
    response = client.get("/v1/events", params)
    assert response.status_code == 400
    assert field in response.json()
    page = client.get("/events/", params)
    assert page.status_code == 200
    assert f"{field}: ".encode() in page.content
    for fmt in ("csv", "json"):
        export = client.get(f"/events/export.{fmt}", params)
        assert export.status_code == 400
        assert export.content.startswith(f"{field}: ".encode())


def test_a_glob_of_only_stars_still_matches_every_tool(feed, auditor, client_for):
    body = client_for(auditor).get("/v1/events", {"tool": "*" * 100}).json()
    assert len(body["results"]) == len(feed)


def test_a_list_api_answers_a_page_of_at_most_500_whatever_limit_is_asked(
    organisation, auditor, approver, client_for
):
    """`?limit=` of the events, audit and approvals lists is capped: a client asking a billion
    gets a page of 500 and the link to the next, never the organisation's whole table at once."""
    from guard.models import ApprovalRequest

    Event.objects.bulk_create(
        [
            Event(organisation=organisation, source="firewall", decision="allow", tool=f"t{i}")
            for i in range(520)
        ]
    )
    feed = client_for(auditor).get("/v1/events?limit=1000000000").json()
    assert (feed["count"], len(feed["results"])) == (520, 500) and feed["next"], feed["next"]
    later = timezone.now() + dt.timedelta(hours=1)
    ApprovalRequest.objects.bulk_create(
        [
            ApprovalRequest(
                organisation=organisation,
                agent="desk",
                tool="refund_card",
                call={"tool": "refund_card", "arguments": {"n": i}},
                requested_by="runtime",
                expires_at=later,
            )
            for i in range(520)
        ]
    )
    queue = client_for(approver).get("/v1/approvals?limit=1000000000").json()
    assert (queue["count"], len(queue["results"])) == (520, 500) and queue["next"]
    first = client_for(approver).get("/v1/approvals").json()
    assert (first["count"], len(first["results"])) == (520, 50)  # the default page
