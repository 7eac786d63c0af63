"""Probes: `/healthz` and `/readyz` answer a load balancer without a key, and say nothing about organisations."""

from __future__ import annotations

import pytest
from django.test import Client

from console import probes
from tests.worker import flush_broker, running_worker


@pytest.fixture(autouse=True)
def _fresh_answer():
    probes.forget()
    yield
    probes.forget()


@pytest.fixture
def served_like_production(settings):
    settings.ALLOWED_HOSTS = ["console.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    return settings


def test_liveness_answers_without_a_key_over_http_to_any_host(served_like_production):
    response = Client().get("/healthz", HTTP_HOST="10.0.0.7:8000")
    assert response.status_code == 200
    assert response.json() == {"live": True}
    assert response["Cache-Control"] == "no-store"


def test_other_paths_keep_the_host_check_and_the_https_redirect(served_like_production):
    assert Client().get("/accounts/login/", HTTP_HOST="10.0.0.7").status_code == 400
    redirect = Client().get("/accounts/login/", HTTP_HOST="console.example.org")
    assert redirect.status_code == 301 and redirect["Location"].startswith("https://")


def test_a_probe_takes_only_get_and_head():
    response = Client().post("/readyz")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"


@pytest.mark.django_db(transaction=True)
def test_readiness_is_503_without_a_worker_and_names_only_the_checks(settings):
    flush_broker()
    settings.STALWART_HEALTH_WORKER_TIMEOUT = 0.3
    response = Client().get("/readyz", HTTP_HOST="10.0.0.7")
    assert response.status_code == 503
    assert response.json() == {
        "ready": False,
        "checks": {"database": True, "broker": True, "worker": False},
    }
    flush_broker()


@pytest.mark.django_db(transaction=True)
def test_readiness_is_kept_for_a_few_seconds_so_probes_send_no_flood_of_pings(monkeypatch):
    calls = []

    def report() -> dict:
        calls.append(1)
        return {"ok": True, "checks": [{"name": "database", "ok": True, "detail": "host db-7"}]}

    monkeypatch.setattr("console.health.health_report", report)
    for _ in range(5):
        response = Client().get("/readyz")
    assert len(calls) == 1
    assert response.json() == {"ready": True, "checks": {"database": True}}
    assert b"db-7" not in response.content


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_readiness_is_200_when_a_real_worker_answers(settings):
    flush_broker()
    settings.STALWART_HEALTH_WORKER_TIMEOUT = 30
    with running_worker():
        response = Client().get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json()["ready"] is True
