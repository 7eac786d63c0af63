"""Decision-log records stranded by an API key change: a spool left by another key of the same
console and organisation is adopted and shipped with the new key, once, in order; another
organisation's or console's never is. Against a live console, with real keys."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import time

import pytest

from console.models import Event
from stalwart_agents import Client
from stalwart_agents import spool as spool_module
from stalwart_agents.spool import Shipper, Spool

from . import spools
from .spools import feed, legacy_spool, owner_row, records, revoke, stranded_spool, waiting
from .test_decide_local import until

pytestmark = pytest.mark.django_db(transaction=True)

keys, state = spools.keys, spools.state  # the fixtures the tests share


def test_a_decision_never_waits_for_the_organisation_the_shipper_learns_it_later(
    live_server, keys, state
):
    with socket.socket() as probe:  # a port the OS gave, closed again: no console answers there
        probe.bind(("127.0.0.1", 0))
        away = f"http://127.0.0.1:{probe.getsockname()[1]}"
    began = time.monotonic()
    with Client(url=away, api_key=keys()) as client:
        spool = client.decision_log()
        spool(records(1)[0])
        assert time.monotonic() - began < 1.0 and spool.pending() == 1
        time.sleep(0.5)
        assert owner_row(spool.path)[1] is None  # not known: nothing adopts these records yet
    with Client(url=live_server.url, api_key=keys()) as client:
        spool = client.decision_log()
        digest, _ = owner_row(spool.path)
        until(lambda: owner_row(spool.path)[1] is not None, 10.0)
        assert owner_row(spool.path)[0] == digest and owner_row(spool.path)[1] != digest


def test_records_stranded_by_a_key_rotation_reach_the_feed_once_with_the_new_key(
    live_server, keys, state, admin, organisation, other_organisation, actor_for
):
    old_key = keys()
    path = stranded_spool(live_server.url, old_key)
    revoke(old_key, admin, organisation, actor_for)
    assert waiting(path) == 7 and feed(organisation) == []

    # The control: a client of another organisation, same console, same folder, sends nothing.
    with Client(url=live_server.url, api_key=keys(other=True)) as other:
        other.decision_log()
        shipper = other._log[1]
        until(lambda: shipper.looked >= 1, 10.0)
        assert shipper.adopted == [] and waiting(path) == 7
    assert not Event.objects.filter(organisation=other_organisation, source="runtime").exists()

    with Client(url=live_server.url, api_key=keys()) as new:
        new.decision_log()
        until(lambda: len(feed(organisation)) == 7, 10.0)
        until(lambda: waiting(path) == 0, 10.0)
        assert new._log[1].adopted == [path]
    assert feed(organisation) == [1, 2, 3, 4, 5, 6, 7]  # once each, in order
    assert path.exists()  # left in place, empty: a process still on the old key may write to it


def test_a_stalwart_spool_another_key_took_is_adopted_from_the_sibling_beside_it(
    live_server, keys, state, organisation, tmp_path, monkeypatch
):
    """With `STALWART_SPOOL`, the old key owns the file itself and the new key ships from
    `<stem>-<digest><suffix>` beside it: the new key's shipper finds the old file by that naming."""
    given = tmp_path / "spools" / "audit.sqlite3"
    monkeypatch.setenv("STALWART_SPOOL", str(given))
    assert stranded_spool(live_server.url, keys()) == given
    with Client(url=live_server.url, api_key=keys()) as new:
        ours = new.decision_log().path
        assert ours.parent == given.parent and ours.name.startswith("audit-")
        until(lambda: waiting(given) == 0, 10.0)
        assert new._log[1].adopted == [given]
    assert feed(organisation) == [1, 2, 3, 4, 5, 6, 7]


def test_another_consoles_stranded_records_are_not_adopted(live_server, keys, state):
    # The same server under another name is another console's url: its spools are not ours.
    host = "localhost" if "localhost" in live_server.url else "127.0.0.1"
    other_console = live_server.url.replace(
        host, "127.0.0.1" if host == "localhost" else "localhost"
    )
    assert other_console != live_server.url
    path = stranded_spool(other_console, keys())
    with Client(url=live_server.url, api_key=keys()) as new:
        new.decision_log()
        until(lambda: new._log[1].looked >= 1, 10.0)
        assert new._log[1].adopted == [] and waiting(path) == 7


def test_two_adopters_at_once_ship_the_stranded_records_once(
    live_server, keys, state, organisation
):
    path = stranded_spool(live_server.url, keys(), count=40)
    first, second = (
        Client(url=live_server.url, api_key=keys()),
        Client(url=live_server.url, api_key=keys()),
    )
    with first, second:
        first.decision_log()
        second.decision_log()
        until(lambda: waiting(path) == 0, 10.0)
        until(lambda: len(feed(organisation)) == 40, 10.0)
        shippers = (first._log[1], second._log[1])
        assert sum(s.duplicates for s in shippers) == 0
        assert sorted(len(s.adopted) for s in shippers) == [0, 1]  # one shipped it, alone
    assert feed(organisation) == list(range(1, 41))


def test_a_spool_another_process_ships_is_not_adopted_until_that_process_is_gone(
    live_server, keys, state, organisation
):
    path = stranded_spool(live_server.url, keys())
    holder = subprocess.Popen(  # noqa: S603
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time;"
            f"fd = os.open({str(path) + '.lock'!r}, os.O_RDWR | os.O_CREAT);"
            "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB);"
            "print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with Client(url=live_server.url, api_key=keys()) as new:
            new.decision_log()
            until(lambda: new._log[1].looked >= 1, 10.0)
            assert waiting(path) == 7 and feed(organisation) == []
            holder.kill()  # the process dies: the OS lets its lock go
            holder.wait()
            new._log[1].look()
            until(lambda: len(feed(organisation)) == 7, 10.0)
    finally:
        holder.kill()
        holder.wait()


def test_a_batch_sent_again_after_a_crash_is_stored_once(live_server, keys, state, organisation):
    path = stranded_spool(live_server.url, keys())
    new_key = keys()
    sent = Shipper(Spool(path), url=live_server.url, api_key=new_key)
    sent._post([body for _, body in sent.spool.peek(3)])  # stored; the adopter died before the ack
    sent.spool.close()
    with Client(url=live_server.url, api_key=new_key) as new:
        new.decision_log()
        until(lambda: waiting(path) == 0, 10.0)
        assert new._log[1].adopted == [path]
    assert feed(organisation) == [1, 2, 3, 4, 5, 6, 7]


def test_a_spool_made_before_is_not_adopted_on_its_own(live_server, keys, state):
    state.mkdir(parents=True)
    path = legacy_spool(state / "decisions-0123456789abcdef.sqlite3")
    with Client(url=live_server.url, api_key=keys()) as new:
        new.decision_log()
        until(lambda: new._log[1].looked >= 1, 10.0)
        assert new._log[1].adopted == [] and waiting(path) == 5
    with sqlite3.connect(path) as db:  # only read: not even its schema has changed
        assert db.execute("SELECT * FROM owner").fetchall() == [(1, "f00d")]


def test_an_old_owner_table_gains_the_organisation_and_keeps_its_claim(tmp_path):
    path = legacy_spool(tmp_path / "old.sqlite3")
    spool = Spool(path)
    spool.claim("f00d")  # still its owner's
    with pytest.raises(spool_module.SpoolTaken):
        spool.claim("beef")
    spool.settle("f00d", "tenant-digest")
    assert owner_row(path) == ("f00d", "tenant-digest")
