"""The fixed cast of every test: one organisation with a person per role, and someone from another.

Django is imported inside the fixtures, so the engines' tests run without it (`-p no:django`).
"""

from __future__ import annotations

import os
import sys

import pytest

PASSWORD = "correct-horse-battery"

#: The fixtures through which a test reaches the database (pytest-django's, and what needs them).
DATABASE_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback",
     "live_server", "django_db_setup"}
)  # fmt: skip


def _uses_database(item: pytest.Item) -> bool:
    if item.get_closest_marker("django_db") is not None:
        return True
    return bool(DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`make test` runs the suite twice, on SQLite and on PostgreSQL: a test that never reaches the
    database (the engines, the router's sets, the proof, the gateway's and the sandbox's own) gives
    the same answer on both, so the PostgreSQL half runs only the tests that reach it."""
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        return
    if os.environ.get("STALWART_EVERY_TEST_ON_POSTGRES"):
        return
    keep = [item for item in items if _uses_database(item)]
    dropped = [item for item in items if not _uses_database(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(autouse=True)
def _own_state_folder(tmp_path_factory, monkeypatch):  # noqa: ANN001, ANN202
    """A test's decision-log spools (a local session's default sink) live in a folder of the
    run's own, never in the user's state folder that other runs on the machine share."""
    if "STALWART_SPOOL" not in os.environ:
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.getbasetemp() / "state"))


@pytest.fixture(autouse=True)
def _event_writer_stopped():  # noqa: ANN202
    """A test that made decisions outside a transaction on PostgreSQL started its process's event
    writer (console/eventwriter.py): it is ended after the test, with its connection, so that
    the test database can be flushed and dropped; and what the process kept of the organisations'
    policies (firewall/active.py) is dropped."""
    yield
    writer = sys.modules.get("console.eventwriter")
    if writer is not None:
        writer.stop()
    kept = sys.modules.get("firewall.active")
    if kept is not None:
        kept.forget()  # an organisation's id may be another's in the next test's database


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
