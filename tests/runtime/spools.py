"""Spools as a key left them, for the tests of adoption and of `stalwart spool adopt`: the
state folder, keys of two organisations, a stranded spool and one written before spools recorded
their organisation."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from console import services as console_services
from console.models import ApiKey, Event
from stalwart_agents import Client
from stalwart_agents.spool import Spool
from tests.console.test_decisions_api import record

from .test_decide_local import until


@pytest.fixture
def state(tmp_path, monkeypatch):
    """The user's state folder, where each client's spool is named for its console and key."""
    monkeypatch.delenv("STALWART_SPOOL", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state" / "stalwart"


@pytest.fixture
def keys(admin, organisation, outsider, other_organisation, actor_for):
    """Make a key: of our organisation, or (`other=True`) of another one."""

    def make(other: bool = False) -> str:
        actor = actor_for(outsider, other_organisation) if other else actor_for(admin, organisation)
        _, plain = console_services.api_key_create(actor=actor, name="runtime", role="editor")
        return plain

    return make


def owner_row(path: Path) -> tuple:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT digest, tenant FROM owner").fetchone()


def waiting(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT count(*) FROM records").fetchone()[0]


def records(count: int, session: str = "stranded") -> list[dict]:
    return [
        record(id=f"00000000-0000-4000-8000-{n:012d}", session=session, sequence=n + 1)
        for n in range(count)
    ]


def stranded_spool(url: str, key: str, count: int = 7) -> Path:
    """Key `key`'s spool, whose shipper learned its organisation, then stopped (the console away)
    while `count` records were written; the process then ended, and the key is rotated."""
    with Client(url=url, api_key=key) as old:
        spool = old.decision_log()
        until(lambda: owner_row(spool.path)[1] is not None, 10.0)
        old._log[1].stop()
        for each in records(count):
            spool(each)
        path = spool.path
    return path


def revoke(key: str, admin, organisation, actor_for) -> None:  # noqa: ANN001
    found = console_services.api_key_authenticate(key)
    assert isinstance(found, ApiKey) and found.organisation_id == organisation.pk
    console_services.api_key_revoke(actor=actor_for(admin, organisation), key=found)


def feed(organisation) -> list[int]:  # noqa: ANN001
    rows = Event.objects.filter(organisation=organisation, source="runtime", session="stranded")
    return [e.detail["record"]["sequence"] for e in rows.order_by("id")]


def legacy_spool(path: Path, count: int = 5) -> Path:
    """A spool as this version's predecessor left it: an owner row with no organisation."""
    spool = Spool(path)
    for each in records(count):
        spool(each)
    spool.close()
    with sqlite3.connect(path) as db:
        db.executescript(
            "DROP TABLE owner; CREATE TABLE owner (only INTEGER PRIMARY KEY CHECK (only = 1), "
            "digest TEXT NOT NULL); INSERT INTO owner VALUES (1, 'f00d');"
        )
    return path
