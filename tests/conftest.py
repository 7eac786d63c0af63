"""The fixed cast of every test: one organisation with a person per role, and someone from another.

Django is imported inside the fixtures, so the engines' tests run without it (`-p no:django`).
"""

from __future__ import annotations

import pytest

PASSWORD = "correct-horse-battery"


@pytest.fixture
def organisation(db):  # noqa: ANN001, ANN201
    from console import services

    return services.organisation_create(name="Acme", slug="acme")


@pytest.fixture
def other_organisation(db):  # noqa: ANN001, ANN201
    from console import services

    return services.organisation_create(name="Globex", slug="globex")


def make_person(username: str, organisation, role: str):  # noqa: ANN001, ANN201
    from django.contrib.auth import get_user_model

    from console.models import Membership

    user = get_user_model().objects.create_user(
        username=username, email=f"{username}@example.org", password=PASSWORD
    )
    Membership.objects.create(user=user, organisation=organisation, role=role)
    return user


@pytest.fixture
def admin(organisation):  # noqa: ANN001, ANN201
    return make_person("ada-admin", organisation, "admin")


@pytest.fixture
def editor(organisation):  # noqa: ANN001, ANN201
    return make_person("eve-editor", organisation, "editor")


@pytest.fixture
def approver(organisation):  # noqa: ANN001, ANN201
    return make_person("abe-approver", organisation, "approver")


@pytest.fixture
def auditor(organisation):  # noqa: ANN001, ANN201
    return make_person("aud-auditor", organisation, "auditor")


@pytest.fixture
def outsider(other_organisation):  # noqa: ANN001, ANN201
    """An admin of another organisation."""
    return make_person("otto-outsider", other_organisation, "admin")


@pytest.fixture
def people(admin, editor, approver, auditor, outsider):  # noqa: ANN001, ANN201
    return {
        "admin": admin,
        "editor": editor,
        "approver": approver,
        "auditor": auditor,
        "outsider": outsider,
    }


@pytest.fixture
def client_for(db):  # noqa: ANN001, ANN201
    from tests.csrf_client import CsrfClient

    def make(user=None):  # noqa: ANN001, ANN202
        client = CsrfClient()
        if user is not None:
            client.force_login(user)
        return client

    return make


@pytest.fixture
def actor_for():  # noqa: ANN201
    from console.access import Actor
    from console.models import Membership

    def make(user, organisation):  # noqa: ANN001, ANN202
        membership = Membership.objects.get(user=user, organisation=organisation)
        return Actor(
            organisation=organisation,
            role=membership.role,
            label=f"user:{user.get_username()}",
            user_id=user.pk,
        )

    return make
