"""Upgrades: the models and the migrations agree, and `organisation_create` starts a deployment."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from console.models import Membership


@pytest.mark.django_db
def test_every_model_change_has_its_migration():
    out = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


@pytest.mark.django_db
def test_a_deployment_starts_with_an_organisation_and_its_first_admin(monkeypatch, client):
    monkeypatch.setenv("STALWART_ADMIN_PASSWORD", "a-long-first-admin-password")
    call_command(
        "organisation_create", slug="acme", name="Acme", admin="alice", stdout=io.StringIO()
    )
    membership = Membership.objects.get(user__username="alice")
    assert (membership.organisation.slug, membership.role) == ("acme", "admin")
    # Signed in through the page, as the admin will (sign-in is throttled per request, so by a form).
    signed_in = client.post(
        "/accounts/login/", {"username": "alice", "password": "a-long-first-admin-password"}
    )
    assert signed_in.status_code == 302 and signed_in["Location"] == "/"


@pytest.mark.django_db
def test_a_weak_first_password_is_refused_and_nothing_is_created(monkeypatch):
    monkeypatch.setenv("STALWART_ADMIN_PASSWORD", "12345")
    with pytest.raises(CommandError, match="the password is refused"):
        call_command("organisation_create", slug="acme", name="Acme", admin="alice")
    assert not Membership.objects.exists()
