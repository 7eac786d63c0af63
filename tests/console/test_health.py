"""Health: the database, the broker (the real Redis) and a real worker process, and when they do not answer."""

from __future__ import annotations

import pytest

from console import health
from tests.worker import flush_broker, running_worker, use_broker


@pytest.mark.django_db
def test_the_database_answers():
    probe = health.check_database()
    assert probe.ok and probe.name == "database"


def test_the_real_redis_broker_answers():
    probe = health.check_broker()
    assert probe.ok, probe.detail
    assert "redis" in probe.detail


def test_a_broker_that_does_not_answer_is_reported():
    original = use_broker("redis://127.0.0.1:1/0")
    try:
        probe = health.check_broker()
    finally:
        use_broker(original)
    assert not probe.ok
    assert "does not answer" in probe.detail


@pytest.mark.django_db(transaction=True)
def test_no_worker_is_reported_as_not_answering():
    flush_broker()
    probe = health.check_worker(timeout=0.5)
    assert not probe.ok
    assert "no worker answered" in probe.detail
    flush_broker()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_answers_and_the_report_is_ok(auditor, client_for):
    flush_broker()
    with running_worker():
        probe = health.check_worker(timeout=30)
        assert probe.ok, probe.detail
        response = client_for(auditor).get("/v1/health")
    assert response.status_code == 200
    assert {c["name"]: c["ok"] for c in response.json()["checks"]} == {
        "database": True,
        "broker": True,
        "worker": True,
    }


@pytest.mark.django_db(transaction=True)
def test_the_report_is_503_when_no_worker_answers(auditor, client_for, settings):
    flush_broker()
    settings.STALWART_HEALTH_WORKER_TIMEOUT = 0.3
    response = client_for(auditor).get("/v1/health")
    assert response.status_code == 503
    assert response.json()["ok"] is False
    page = client_for(auditor).get("/health/", HTTP_HX_REQUEST="true")
    assert page.status_code == 200
    assert b'data-check="worker"' in page.content and b"does not answer" in page.content
    flush_broker()
