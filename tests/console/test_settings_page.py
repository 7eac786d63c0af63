"""The Settings page: an htmx form that validates inline and saves nothing invalid."""

from __future__ import annotations

import pytest

from console.models import AuditRow, OrganisationSettings

pytestmark = pytest.mark.django_db

VALID = {
    "language": "pt-BR",
    "on_unread": "ask",
    "taint_policy": "confirm",
    "grounded": "confirm",
    "s1_veto": "confirm",
    "s2_veto": "confirm",
    "confirm_read": "confirm",
    "licence_valid_until": "",
    "licence_on_lapse": "refuse_writes",
    "notify_url": "",
    "approval_timeout_minutes": "15",
}


def _form(organisation, **changes):
    saved = OrganisationSettings.objects.get(organisation=organisation)
    data = {**VALID, "licence_valid_until": saved.licence_valid_until.isoformat(), **changes}
    return {k: v for k, v in data.items() if v is not None}


def test_the_page_shows_the_form_to_an_editor(editor, client_for):
    page = client_for(editor).get("/settings/")
    assert b'id="settings-form"' in page.content
    assert b'name="on_unread"' in page.content
    assert b'hx-post="/settings/validate"' in page.content


def test_the_page_shows_values_only_to_an_auditor(auditor, client_for):
    page = client_for(auditor).get("/settings/")
    assert b'name="on_unread"' not in page.content
    assert b'id="value-on_unread"' in page.content
    main = page.content.split(b"<main>", 1)[1]
    assert b"<form" not in main and b"hx-post" not in main  # nothing to post


def test_an_htmx_save_returns_the_form_with_saved(editor, organisation, client_for):
    response = client_for(editor).post("/settings/", _form(organisation), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert b"<html" not in response.content
    assert b'id="settings-saved"' in response.content
    saved = OrganisationSettings.objects.get(organisation=organisation)
    assert (saved.language, saved.on_unread) == ("pt-BR", "ask")
    assert AuditRow.objects.filter(action="settings.update").count() == 1


def test_inline_validation_shows_the_error_and_saves_nothing(editor, organisation, client_for):
    response = client_for(editor).post(
        "/settings/validate", _form(organisation, on_unread="maybe"), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert b'<div id="errors-on_unread" hx-swap-oob="true">' in response.content
    assert b'name="on_unread"' not in response.content
    assert b'data-field="on_unread"' in response.content
    assert b"on_unread: Select a valid choice" in response.content
    assert OrganisationSettings.objects.get(organisation=organisation).on_unread == "refuse"
    assert not AuditRow.objects.exists()


def test_validation_never_saves_even_a_valid_form(editor, organisation, client_for):
    client_for(editor).post("/settings/validate", _form(organisation), HTTP_HX_REQUEST="true")
    assert OrganisationSettings.objects.get(organisation=organisation).language == "en"


def test_saving_an_invalid_value_is_refused_with_nothing_saved(editor, organisation, client_for):
    response = client_for(editor).post(
        "/settings/", _form(organisation, language="pt-PT"), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 400
    assert b"language: Select a valid choice" in response.content
    saved = OrganisationSettings.objects.get(organisation=organisation)
    assert (saved.language, saved.on_unread) == ("en", "refuse")
    assert not AuditRow.objects.exists()


def test_an_editor_changing_the_licence_on_the_page_is_told_why(editor, organisation, client_for):
    response = client_for(editor).post(
        "/settings/", _form(organisation, licence_on_lapse="refuse_all")
    )
    assert response.status_code == 400
    assert b"only an admin can change the licence" in response.content
    saved = OrganisationSettings.objects.get(organisation=organisation)
    assert (saved.licence_on_lapse, saved.language) == ("refuse_writes", "en")


def test_a_lapsed_licence_is_shown_on_the_dashboard(admin, organisation, client_for):
    OrganisationSettings.objects.filter(organisation=organisation).update(
        licence_valid_until="2020-01-01"
    )
    page = client_for(admin).get("/")
    assert b"The licence lapsed on" in page.content
    assert OrganisationSettings.objects.get(organisation=organisation).licence_lapsed()


def test_a_timeout_out_of_range_is_refused(admin, organisation, client_for):
    response = client_for(admin).put_json("/v1/settings", {"approval_timeout_minutes": 0})
    assert response.status_code == 400
    assert "approval_timeout_minutes" in response.json()
    assert (
        OrganisationSettings.objects.get(organisation=organisation).approval_timeout_minutes == 15
    )


def _editor_form(organisation, **changes):
    """What the page sends for an editor: every field but the admin's."""
    admin_only = {
        "licence_valid_until",
        "licence_on_lapse",
        "notify_url",
        "grounded",
        "s1_veto",
        "s2_veto",
        "confirm_read",
    }
    return {k: v for k, v in _form(organisation, **changes).items() if k not in admin_only}


def test_an_editors_save_is_never_read_as_a_change_of_the_licence(editor, organisation, client_for):
    page = client_for(editor).post("/settings/", _editor_form(organisation, on_unread="model"))
    assert page.status_code == 200
    assert b"only an admin" not in page.content
    assert OrganisationSettings.objects.get(organisation=organisation).on_unread == "model"


def test_sending_the_licence_back_unchanged_is_no_change(editor, organisation, client_for):
    validate = client_for(editor).post("/settings/validate", _form(organisation))
    assert b"only an admin" not in validate.content


def test_an_editor_sees_the_licence_as_a_value_not_as_a_field(editor, client_for):
    page = client_for(editor).get("/settings/")
    assert b'name="licence_valid_until"' not in page.content
    assert b'name="notify_url"' not in page.content
    assert b'id="value-licence_valid_until"' in page.content
    assert b'name="on_unread"' in page.content


@pytest.mark.parametrize("value", ["-5", "0"])
def test_the_timeout_names_one_lower_bound_however_far_below(
    admin, organisation, client_for, value
):
    response = client_for(admin).post(
        "/settings/validate", _form(organisation, approval_timeout_minutes=value)
    )
    text = response.content.decode()
    assert "greater than or equal to 1" in text
    assert "greater than or equal to 0" not in text


def test_a_plain_http_webhook_gets_an_inline_error(admin, organisation, client_for):
    response = client_for(admin).post(
        "/settings/validate", _form(organisation, notify_url="http://hooks.example.org/x")
    )
    assert b'data-field="notify_url"' in response.content
    assert b"https://" in response.content
    saved = client_for(admin).post(
        "/settings/", _form(organisation, notify_url="http://a.example/x")
    )
    assert saved.status_code == 400
    assert OrganisationSettings.objects.get(organisation=organisation).notify_url == ""


def test_a_loopback_receiver_may_be_plain_http(admin, organisation, client_for):
    saved = client_for(admin).post(
        "/settings/", _form(organisation, notify_url="http://127.0.0.1:8025/hook")
    )
    assert saved.status_code == 200


@pytest.mark.parametrize(
    "url",
    [
        "http://127.attacker.example/hook",
        "http://127.0.0.1.nip.io/hook",
        "http://localhost.example/x",
    ],
)
def test_a_name_that_only_starts_like_a_loopback_address_is_no_loopback(
    url, admin, organisation, client_for
):
    # `127.attacker.example` is a DNS name anyone may point anywhere: alerts and their signature
    # would cross the network in clear.
    saved = client_for(admin).post("/settings/", _form(organisation, notify_url=url))
    assert saved.status_code == 400
    assert OrganisationSettings.objects.get(organisation=organisation).notify_url == ""
    response = client_for(admin).put_json("/v1/settings", {"notify_url": url})
    assert response.status_code == 400


@pytest.mark.parametrize(
    "url", ["http://127.0.0.2:9000/hook", "http://[::1]:8025/hook", "http://localhost/x"]
)
def test_every_loopback_address_may_be_plain_http(url, admin, organisation, client_for):
    saved = client_for(admin).post("/settings/", _form(organisation, notify_url=url))
    assert saved.status_code == 200


def test_the_api_refuses_a_plain_http_webhook(admin, organisation, client_for):
    response = client_for(admin).put_json("/v1/settings", {"notify_url": "http://a.example/x"})
    assert response.status_code == 400
    assert "notify_url" in response.json()


def test_a_new_error_clears_the_saved_line(editor, organisation, client_for):
    response = client_for(editor).post(
        "/settings/validate", _editor_form(organisation, on_unread="maybe")
    )
    assert b'<div id="settings-status" hx-swap-oob="true"></div>' in response.content
