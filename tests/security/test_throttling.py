"""Sign-in is throttled per account and address (django-axes); bad API keys per address."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client, override_settings

from console import services as console_services
from console.api.authentication import api_key_failures_reset
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db
ATTACKER = "203.0.113.7"


def _sign_in(client, username: str, password: str, address: str = ATTACKER):
    return client.post(
        "/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address
    )


def _signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_many_bad_sign_ins_then_the_right_password_is_refused(editor, client_for):
    client = client_for()
    answers = {_sign_in(client, "eve-editor", f"guess-{i}").status_code for i in range(30)}
    assert answers == {200, 429}
    right = _sign_in(client, "eve-editor", PASSWORD)
    assert right.status_code == 429
    assert b"too many failed sign-ins" in right.content.lower()
    assert not _signed_in(client)


def test_the_lockout_holds_only_that_account_from_that_address(editor, admin, client_for):
    for i in range(5):
        _sign_in(client_for(), "eve-editor", f"guess-{i}")
    elsewhere = client_for()
    assert _sign_in(elsewhere, "eve-editor", PASSWORD, address="198.51.100.9").status_code == 302
    assert _signed_in(elsewhere)
    other_account = client_for()
    assert _sign_in(other_account, "ada-admin", PASSWORD).status_code == 302


@override_settings(AXES_FAILURE_LIMIT=2)
def test_the_sign_in_limit_is_a_setting(editor, client_for):
    client = client_for()
    assert [_sign_in(client, "eve-editor", "nope").status_code for _ in range(3)] == [200, 429, 429]


@pytest.fixture
def address():
    """An address of its own (the counter lives in the cache, which outlives a test's rows)."""
    value = f"2001:db8::{uuid.uuid4().hex[:4]}"
    api_key_failures_reset(value)
    yield value
    api_key_failures_reset(value)


@override_settings(STALWART_API_KEY_FAILURE_LIMIT=20, STALWART_API_KEY_FAILURE_WINDOW=300)
def test_many_unknown_api_keys_from_one_address_are_throttled(
    address, organisation, admin, actor_for
):
    _, good = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="runtime", role="auditor"
    )
    client = Client()
    answers = [
        client.get(
            "/v1/events", HTTP_AUTHORIZATION=f"Bearer stw_{i:04d}_guess", REMOTE_ADDR=address
        ).status_code
        for i in range(25)
    ]
    assert answers == [401] * 20 + [429] * 5
    throttled = client.get("/v1/events", HTTP_AUTHORIZATION=f"Bearer {good}", REMOTE_ADDR=address)
    assert throttled.status_code == 429
    assert throttled["Retry-After"] == "300"
    other = client.get("/v1/events", HTTP_AUTHORIZATION=f"Bearer {good}", REMOTE_ADDR="192.0.2.1")
    assert other.status_code == 200
