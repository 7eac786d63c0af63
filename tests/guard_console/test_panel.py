"""The executor's panel: counters per tool, the write switch on the console, `/metrics`."""

from __future__ import annotations

import re

import pytest

from console.models import AuditRow
from guard.counters import count
from guard.engine.execution import COUNTERS
from guard.models import WriteSwitch

pytestmark = pytest.mark.django_db


def test_the_page_shows_each_tools_counters(organisation, other_organisation, auditor, client_for):
    count(organisation, "request_close", "effects", 3)
    count(organisation, "request_close", "blocked_actions")
    count(other_organisation, "secret_tool", "effects")
    page = client_for(auditor).get("/tools/").content.decode()
    assert 'data-tool="request_close"' in page and "secret_tool" not in page
    row = page.split('data-tool="request_close"')[1].split("</tr>")[0]
    cells = [cell.split("</td>")[0] for cell in row.split("<td>")[2:9]]
    # schema_valid, schema_rejected, blocked_actions, duplicates, denied, partial, effects
    assert cells == ["0", "0", "1", "0", "0", "0", "3"]
    # headed in words; the counters' own names stay for Prometheus, in the cells' data
    headings = re.findall(r'data-counter="([a-z_]+)">([^<]+)</th>', page)
    assert [name for name, _ in headings] == list(COUNTERS)
    assert all("_" not in label and label[0].isupper() for _, label in headings), headings
    assert "Switch every write off" not in page  # an auditor reads, and cannot switch


def test_an_editor_switches_writes_off_and_back_on(organisation, editor, client_for):
    client = client_for(editor)
    answer = client.post("/tools/writes", {"tool": "", "enabled": "off"}, follow=True)
    assert "Read-only" in answer.content.decode()
    assert WriteSwitch.objects.get(organisation=organisation, tool="").writes_enabled is False
    client.post("/tools/writes", {"tool": "request_close", "enabled": "off"})
    client.post("/tools/writes", {"tool": "", "enabled": "on"})
    switches = dict(WriteSwitch.objects.values_list("tool", "writes_enabled"))
    assert switches == {"": True, "request_close": False}
    assert AuditRow.objects.filter(action="writes.disabled").count() == 2
    bad = client.post("/tools/writes", {"tool": "", "enabled": "maybe"}, follow=True)
    assert "enabled: must be on or off" in bad.content.decode()
    assert AuditRow.objects.filter(object_type="write_switch").count() == 3


def test_an_auditor_cannot_switch_writes_on_the_console(auditor, client_for):
    answer = client_for(auditor).post("/tools/writes", {"tool": "", "enabled": "off"})
    assert answer.status_code == 403 and not WriteSwitch.objects.exists()


def test_prometheus_reads_the_counters_with_an_api_key(
    client, organisation, other_organisation, admin, actor_for
):
    from console import services

    count(organisation, "request_close", "effects", 2)
    count(organisation, "request_close", "duplicates_suppressed")
    count(other_organisation, "request_close", "effects", 9)
    _, key = services.api_key_create(
        actor=actor_for(admin, organisation), name="prometheus", role="auditor"
    )
    answer = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"].startswith("text/plain; version=0.0.4")
    text = answer.content.decode()
    assert 'stalwart_tool_effects_total{organisation="acme",tool="request_close"} 2.0' in text
    line = 'stalwart_tool_duplicates_suppressed_total{organisation="acme",tool="request_close"} 1.0'
    assert line in text
    assert "# TYPE stalwart_tool_schema_rejected_total counter" in text
    assert "globex" not in text and 'stalwart_pending_steps{organisation="acme"} 0.0' in text


def test_metrics_need_an_identity(client):
    assert client.get("/metrics").status_code in (401, 403)
