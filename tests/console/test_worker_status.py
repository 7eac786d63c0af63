"""The dashboard and the Health page say so, prominently, when no worker takes tasks."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from console import health
from console.models import Event, MatchState, WorkerPing
from console.tasks import worker_heartbeat


def _heartbeat(seconds_ago: float) -> None:
    worker_heartbeat()
    WorkerPing.objects.filter(nonce__startswith="heartbeat:").update(
        at=timezone.now() - dt.timedelta(seconds=seconds_ago)
    )


def _pending_event(organisation, seconds_ago: float) -> None:  # noqa: ANN001
    Event.objects.create(
        organisation=organisation,
        source="firewall",
        decision="refuse",
        match_state=MatchState.PENDING,
        at=timezone.now() - dt.timedelta(seconds=seconds_ago),
    )


@pytest.mark.django_db
def test_with_no_heartbeat_ever_the_dashboard_says_no_worker_takes_tasks(admin, client_for):
    page = client_for(admin).get("/")
    assert b'id="workers-missing"' in page.content
    assert b"no worker has taken a task yet" in page.content


@pytest.mark.django_db
def test_a_recent_heartbeat_shows_no_warning(admin, client_for):
    _heartbeat(2)
    page = client_for(admin).get("/")
    assert b'id="workers-missing"' not in page.content and b'id="outbox-late"' not in page.content


@pytest.mark.django_db
def test_a_stale_heartbeat_says_how_long_ago_and_how_long_the_outbox_has_waited(
    admin, organisation, client_for
):
    _heartbeat(180)
    _pending_event(organisation, 600)
    page = client_for(admin).get("/").content.decode()
    assert 'id="workers-missing"' in page
    assert "a worker last took a task 3 min ago" in page
    assert "1 event wait in the outbox, the oldest for 10 min" in page


@pytest.mark.django_db
def test_another_organisations_outbox_is_not_counted(admin, other_organisation, client_for):
    _heartbeat(180)
    _pending_event(other_organisation, 600)
    assert b"nothing waits in the outbox" in client_for(admin).get("/").content


@pytest.mark.django_db
def test_a_live_worker_with_a_late_outbox_is_still_shown(admin, organisation, client_for):
    _heartbeat(1)
    _pending_event(organisation, 300)
    assert b'id="outbox-late"' in client_for(admin).get("/").content


@pytest.mark.django_db
def test_the_health_page_shows_the_heartbeat(auditor, client_for, settings, monkeypatch):
    monkeypatch.setattr("console.views.health_report", lambda: {"ok": False, "checks": []})
    _heartbeat(120)
    fragment = client_for(auditor).get("/health/", HTTP_HX_REQUEST="true")
    assert b'data-alive="false"' in fragment.content
    assert b"No worker is taking tasks" in fragment.content


@pytest.mark.django_db
def test_the_heartbeat_is_not_swept_with_the_old_pings():
    from console.tasks import health_ping

    _heartbeat(7200)
    health_ping("nonce-1")
    assert health.worker_status().seconds_since is not None
