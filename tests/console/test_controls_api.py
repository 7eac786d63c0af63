"""`/v1/controls`: a runbook switches writes off, releases holds and turns tools back on by API key."""

from __future__ import annotations

import pytest

from console import services
from console.models import AuditRow, SessionHold, ToolSwitch
from guard.executor import writes_enabled


@pytest.fixture
def key_for(organisation, actor_for):  # noqa: ANN001, ANN201
    def make(user, role: str) -> dict:  # noqa: ANN001
        _, key = services.api_key_create(
            actor=actor_for(user, organisation), name=f"runbook-{role}", role=role
        )
        return {"HTTP_AUTHORIZATION": f"Bearer {key}"}

    return make


@pytest.mark.django_db
def test_the_first_step_of_an_incident_switches_one_write_off_and_keeps_the_others(
    client, organisation, admin, key_for
):
    headers = key_for(admin, "editor")
    answer = client.put(
        "/v1/controls/writes",
        {"tool": "request_close", "enabled": False},
        content_type="application/json",
        **headers,
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["tool"] == "request_close" and answer.json()["writes_enabled"] is False
    assert not writes_enabled(organisation.pk, "request_close")
    assert writes_enabled(organisation.pk, "read_order")
    assert AuditRow.objects.filter(action="writes.disabled", object_id="request_close").exists()
    listing = client.get("/v1/controls", **headers).json()
    assert [(w["tool"], w["writes_enabled"]) for w in listing["writes"]] == [
        ("request_close", False)
    ]


@pytest.mark.django_db
def test_an_auditor_key_cannot_switch_writes(client, organisation, admin, key_for):
    answer = client.put(
        "/v1/controls/writes",
        {"tool": "", "enabled": False},
        content_type="application/json",
        **key_for(admin, "auditor"),
    )
    assert answer.status_code == 403
    assert writes_enabled(organisation.pk, "anything")


@pytest.mark.django_db
def test_a_switch_needs_a_boolean_and_no_unknown_field(client, admin, key_for):
    headers = key_for(admin, "editor")
    bad = client.put(
        "/v1/controls/writes",
        {"enabled": "off", "tol": "x"},
        content_type="application/json",
        **headers,
    )
    assert bad.status_code == 400
    assert bad.json() == {"tol": ["unknown field"]}
    bad = client.put(
        "/v1/controls/writes", {"enabled": "off"}, content_type="application/json", **headers
    )
    assert bad.status_code == 400 and bad.json() == {"enabled": ["true or false"]}


@pytest.mark.django_db
def test_a_hold_is_released_and_a_tool_turned_back_on(client, organisation, admin, key_for):
    headers = key_for(admin, "editor")
    hold = SessionHold.objects.create(organisation=organisation, session="s-1", reason="chain")
    switch = ToolSwitch.objects.create(organisation=organisation, tool="crm.export", reason="chain")
    listing = client.get("/v1/controls", **headers).json()
    assert [h["id"] for h in listing["holds"]] == [hold.pk]
    assert [s["id"] for s in listing["switches"]] == [switch.pk]
    released = client.post(f"/v1/controls/holds/{hold.pk}/release", **headers)
    assert released.status_code == 200 and released.json()["released_at"]
    enabled = client.post(f"/v1/controls/switches/{switch.pk}/enable", **headers)
    assert enabled.status_code == 200 and enabled.json()["enabled_at"]
    listing = client.get("/v1/controls", **headers).json()
    assert listing["holds"] == [] and listing["switches"] == []


@pytest.mark.django_db
def test_another_organisations_hold_does_not_exist(client, admin, other_organisation, key_for):
    hold = SessionHold.objects.create(organisation=other_organisation, session="s-9", reason="x")
    answer = client.post(f"/v1/controls/holds/{hold.pk}/release", **key_for(admin, "admin"))
    assert answer.status_code == 404
    hold.refresh_from_db()
    assert hold.released_at is None
