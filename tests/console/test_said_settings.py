"""The modes of the checks of what was said: settings an admin changes, on the page and the API."""

from __future__ import annotations

import pytest

from console import selectors
from console.models import AuditRow, OrganisationSettings

pytestmark = pytest.mark.django_db

DEFAULTS = {
    "grounded": "confirm",
    "s1_veto": "confirm",
    "s2_veto": "confirm",
    "confirm_read": "confirm",
}


def _page_form(organisation, **changes):
    saved = OrganisationSettings.objects.get(organisation=organisation)
    return {
        "language": saved.language,
        "on_unread": saved.on_unread,
        "taint_policy": saved.taint_policy,
        **saved.said_modes(),
        "licence_valid_until": saved.licence_valid_until.isoformat(),
        "licence_on_lapse": saved.licence_on_lapse,
        "notify_url": saved.notify_url,
        "approval_timeout_minutes": str(saved.approval_timeout_minutes),
        **changes,
    }


def test_every_mode_is_confirm_by_default(organisation):
    assert selectors.said_modes(organisation.pk) == DEFAULTS


def test_an_organisation_with_no_saved_settings_has_the_defaults(organisation):
    OrganisationSettings.objects.filter(organisation=organisation).delete()
    assert selectors.said_modes(organisation.pk) == DEFAULTS


def test_the_api_shows_the_modes_to_any_role(auditor, client_for):
    body = client_for(auditor).get("/v1/settings").json()
    assert {name: body[name] for name in DEFAULTS} == DEFAULTS


def test_an_admin_changes_the_modes_over_the_api_and_an_audit_row_says_so(
    admin, organisation, client_for
):
    response = client_for(admin).put_json(
        "/v1/settings", {"s1_veto": "refuse", "confirm_read": "off", "grounded": "off"}
    )
    assert response.status_code == 200, response.content
    assert response.json()["s1_veto"] == "refuse"
    assert selectors.said_modes(organisation.pk) == {
        "grounded": "off",
        "s1_veto": "refuse",
        "s2_veto": "confirm",
        "confirm_read": "off",
    }
    row = AuditRow.objects.get(organisation=organisation, action="settings.update")
    assert row.changes == {
        "grounded": {"old": "confirm", "new": "off"},
        "s1_veto": {"old": "confirm", "new": "refuse"},
        "confirm_read": {"old": "confirm", "new": "off"},
    }


@pytest.mark.parametrize("role", ["editor", "approver"])
def test_only_an_admin_changes_a_mode(role, people, organisation, client_for):
    response = client_for(people[role]).put_json("/v1/settings", {"s2_veto": "off"})
    assert response.status_code == 403
    assert selectors.said_modes(organisation.pk) == DEFAULTS
    assert not AuditRow.objects.filter(action="settings.update").exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("s1_veto", "strict"),
        ("s2_veto", "allow"),
        ("confirm_read", ""),
        ("confirm_read", 1),
        ("grounded", "refuse"),  # grounded asks or is off: it never refuses
    ],
)
def test_the_api_refuses_a_value_that_is_not_a_mode_naming_the_field(
    field, value, admin, organisation, client_for
):
    response = client_for(admin).put_json("/v1/settings", {field: value})
    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert selectors.said_modes(organisation.pk) == DEFAULTS


def test_an_admin_changes_a_mode_on_the_page(admin, organisation, client_for):
    client = client_for(admin)
    page = client.get("/settings/")
    for name in DEFAULTS:
        assert f'name="{name}"'.encode() in page.content
    saved = client.post("/settings/", _page_form(organisation, s2_veto="refuse"))
    assert saved.status_code == 200
    assert b'id="settings-saved"' in saved.content
    assert selectors.said_modes(organisation.pk)["s2_veto"] == "refuse"
    row = AuditRow.objects.get(action="settings.update")
    assert row.changes == {"s2_veto": {"old": "confirm", "new": "refuse"}}


def test_a_bad_mode_on_the_page_is_an_inline_error_and_nothing_is_saved(
    admin, organisation, client_for
):
    client = client_for(admin)
    inline = client.post(
        "/settings/validate", _page_form(organisation, confirm_read="maybe"), HTTP_HX_REQUEST="true"
    )
    assert b'data-field="confirm_read"' in inline.content
    assert b"confirm_read: Select a valid choice" in inline.content
    refused = client.post("/settings/", _page_form(organisation, grounded="refuse"))
    assert refused.status_code == 400
    assert b'data-field="grounded"' in refused.content
    assert selectors.said_modes(organisation.pk) == DEFAULTS


def test_an_editor_sees_the_modes_but_cannot_change_them(editor, organisation, client_for):
    client = client_for(editor)
    page = client.get("/settings/")
    assert b'name="s1_veto"' not in page.content
    assert b'id="value-s1_veto"' in page.content
    # A page that sends a mode anyway (as a tampered one would) is refused, naming it.
    tampered = client.post("/settings/", {**_page_form(organisation), "s1_veto": "off"})
    assert tampered.status_code == 400
    assert b"only an admin can change" in tampered.content and b"s1_veto" in tampered.content
    assert selectors.said_modes(organisation.pk) == DEFAULTS
