"""Keys are authenticated from a cache: a revoked key must still stop working at once."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client

from console import services as console_services
from console.models import ApiKey

pytestmark = pytest.mark.django_db


@pytest.fixture
def issued(admin, organisation, actor_for):
    actor = actor_for(admin, organisation)
    key, plain = console_services.api_key_create(actor=actor, name="runtime", role="editor")
    return actor, key, Client(HTTP_AUTHORIZATION=f"Bearer {plain}")


def test_a_revoked_key_is_refused_on_its_very_next_request(issued):
    actor, key, client = issued
    assert client.get("/v1/firewall/policies").status_code == 200  # now cached
    console_services.api_key_revoke(actor=actor, key=key)
    answer = client.get("/v1/firewall/policies")
    assert answer.status_code == 401
    assert b"unknown or revoked" in answer.content


def test_a_key_cached_by_a_request_that_raced_the_revocation_is_still_refused(issued):
    actor, key, client = issued
    stale = ApiKey.objects.select_related("organisation").get(pk=key.pk)
    console_services.api_key_revoke(actor=actor, key=key)
    # A request that read the key before the revocation committed caches it afterwards.
    cache.set(f"stalwart:api-key:{key.prefix}", stale, timeout=300)
    assert client.get("/v1/firewall/policies").status_code == 401


def test_a_cached_key_still_needs_its_secret(issued):
    _, key, client = issued
    assert client.get("/v1/firewall/policies").status_code == 200
    forged = Client(HTTP_AUTHORIZATION=f"Bearer stw_{key.prefix}_{'0' * 64}")
    assert forged.get("/v1/firewall/policies").status_code == 401
