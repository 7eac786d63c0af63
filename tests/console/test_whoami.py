"""`GET /v1/whoami`: who a key acts as, with the organisation's lasting id."""

from __future__ import annotations

import pytest
from django.test import Client

from console import services
from console.models import Organisation

pytestmark = pytest.mark.django_db


def test_whoami_names_the_organisation_for_good(
    admin, organisation, outsider, other_organisation, actor_for
):
    def whoami(user, org) -> dict:  # noqa: ANN001
        _, key = services.api_key_create(actor=actor_for(user, org), name="r", role="editor")
        answer = Client(HTTP_AUTHORIZATION=f"Bearer {key}").get("/v1/whoami")
        assert answer.status_code == 200
        return answer.json()

    mine, other = whoami(admin, organisation), whoami(outsider, other_organisation)
    assert mine["organisation"] == "acme" and isinstance(mine["organisation_id"], str)
    assert mine["organisation_id"] != other["organisation_id"]
    again = whoami(admin, organisation)  # another key of the same organisation
    assert again["organisation_id"] == mine["organisation_id"]
    Organisation.objects.filter(pk=organisation.pk).update(slug="acme-renamed")
    assert whoami(admin, organisation)["organisation_id"] == mine["organisation_id"]
