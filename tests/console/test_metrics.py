"""`/metrics` counts decisions and alerts, and shows the outbox and the approvals queue, per organisation."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from console import services
from console.models import Event, MatchState


@pytest.fixture
def scrape(client, organisation, admin, actor_for):  # noqa: ANN001, ANN201
    _, key = services.api_key_create(
        actor=actor_for(admin, organisation), name="prometheus", role="auditor"
    )

    def read() -> str:
        answer = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {key}")
        assert answer.status_code == 200, answer.content
        return answer.content.decode()

    return read


@pytest.mark.django_db
def test_decisions_are_counted_by_source_decision_and_rule(
    scrape, organisation, other_organisation
):
    for _ in range(2):
        services.event_record(
            organisation=organisation, source="firewall", decision="refuse", rule="no rm -rf"
        )
    services.event_record(organisation=organisation, source="toolcheck", decision="confirm")
    services.event_record(organisation=other_organisation, source="firewall", decision="refuse")
    text = scrape()
    assert (
        'stalwart_decisions_total{decision="refuse",organisation="acme",rule="no rm -rf",'
        'source="firewall"} 2.0' in text
    )
    assert 'decision="confirm",organisation="acme",rule="",source="toolcheck"} 1.0' in text
    assert "globex" not in text


@pytest.mark.django_db
def test_the_outbox_depth_and_age_and_the_alerts(scrape, organisation):
    Event.objects.create(
        organisation=organisation,
        source="firewall",
        decision="refuse",
        match_state=MatchState.PENDING,
        at=timezone.now() - dt.timedelta(seconds=90),
    )
    Event.objects.create(
        organisation=organisation,
        source="sequence",
        decision="refuse",
        rule="exfil chain",
        is_alert=True,
        match_state=MatchState.SKIPPED,
    )
    text = scrape()
    assert 'stalwart_outbox_pending{organisation="acme"} 1.0' in text
    age = next(
        line for line in text.splitlines() if line.startswith("stalwart_outbox_oldest_seconds{")
    )
    assert 89 <= float(age.rsplit(" ", 1)[1]) < 200
    assert 'stalwart_alerts_total{organisation="acme",rule="exfil chain"} 1.0' in text
    assert 'stalwart_approvals_waiting{organisation="acme"} 0.0' in text


@pytest.mark.django_db
def test_how_long_deciding_takes_is_a_histogram_per_source(scrape, editor, client_for):
    answer = client_for(editor).post(
        "/v1/firewall/evaluate", {"tool": "shell.exec"}, content_type="application/json"
    )
    assert answer.status_code == 200
    text = scrape()
    count = next(
        line
        for line in text.splitlines()
        if line.startswith('stalwart_decision_seconds_count{organisation="acme",source="firewall"}')
    )
    assert float(count.rsplit(" ", 1)[1]) >= 1
    assert "stalwart_decision_seconds_bucket{" in text and "globex" not in text


def test_with_a_multiprocess_folder_a_scrape_reads_what_another_process_measured(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {
        "PATH": "/usr/bin:/bin",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "console.settings.test",
    }
    setup = "import django; django.setup(); "
    observe = setup + "from console.metrics import observe_decision as o; o('acme', 'toolcheck', 0)"
    subprocess.run([sys.executable, "-c", observe], cwd=root, env=env, check=True)
    read = setup + (
        "from console.metrics import _latency; "
        "print(sum(s.value for f in _latency('acme') for s in f.samples if s.name.endswith('_count')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", read], cwd=root, env=env, check=True, capture_output=True, text=True
    )
    assert float(out.stdout) == 1.0
