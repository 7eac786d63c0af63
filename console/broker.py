"""The embedded broker: kombu's SQLAlchemy transport over a SQLite file, so `make run` needs no Redis.

Why not kombu's filesystem transport, the embedded broker before: a producer creates a message
file and only then locks and writes it, while a consumer lists the folder and moves whatever it
finds, unlocked, so a worker can read a file that is still empty and die with
`JSONDecodeError('Expecting value: line 1 column 1 (char 0)')` (the exchange files of the
remote-control fanout race the same way: celery/kombu#1551). `make soak-broker --transport
filesystem` reproduces it. Here every put is an INSERT and every get a `BEGIN IMMEDIATE`
transaction that takes one row and marks it delivered, so a reader never sees half a message.

What this transport does not do: broadcast across processes (remote control, `celery inspect`,
reaches no worker: the health check pings with a task instead), and it keeps delivered rows,
which `prune_delivered` removes on the beat. A message a killed worker had taken is not
redelivered; nothing is lost by it, since the outbox (events, proofs, pending steps) lives in the
database and the beat's sweeps send its work again.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import sqlite3
from pathlib import Path
from typing import Any

from kombu.transport import sqlalchemy as kombu_sqlalchemy
from sqlalchemy import create_engine, event
from sqlalchemy.exc import IntegrityError

#: kombu's dotted name for this transport (Celery's `broker_transport`).
TRANSPORT = "console.broker:Transport"
#: Seconds between two polls of an empty queue (kombu's default is 1 s).
POLLING_INTERVAL = 0.2
#: How long a delivered message's row is kept before the beat prunes it.
KEEP_DELIVERED = dt.timedelta(hours=1)


def broker_file(var_dir: Path) -> Path:
    return var_dir / "broker.sqlite3"


def broker_url(var_dir: Path) -> str:
    return f"sqlite:///{broker_file(var_dir)}"


class Channel(kombu_sqlalchemy.Channel):
    def _open(self):  # noqa: ANN202 - kombu's signature
        # kombu creates its tables on first use, checking first; processes that start together
        # would both find none and one would fail ("table kombu_queue already exists"), so the
        # check and the creation are made under a lock file beside the database.
        url = self.connection.client.hostname
        if url in self._engines or not url.startswith("sqlite:///"):
            return super()._open()
        path = Path(url.removeprefix("sqlite:///"))
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_name(path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                return super()._open()
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _get_or_create(self, queue):  # noqa: ANN001, ANN202 - kombu's signature
        # kombu's own lock is per process: two processes declaring one queue together can both
        # find none, and one then fails on the unique name. That one reads the row the other made.
        try:
            return super()._get_or_create(queue)
        except IntegrityError:
            self.session.rollback()
            return self.session.query(self.queue_cls).filter(self.queue_cls.name == queue).one()

    def _engine_from_config(self):  # noqa: ANN202 - kombu's signature
        engine = create_engine(
            self.connection.client.hostname,
            # A writer waits for the lock rather than failing while another one holds it.
            connect_args={"timeout": 30},
        )

        @event.listens_for(engine, "connect")
        def _wal(dbapi_connection: Any, _record: Any) -> None:
            # Readers never wait for a writer; the web process, the worker and the beat share it.
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return engine


class Transport(kombu_sqlalchemy.Transport):
    Channel = Channel
    polling_interval = POLLING_INTERVAL


def _forget_engines_after_fork() -> None:
    # A pool worker must not share the parent's SQLite connections: it opens its own.
    for engine, _ in list(Channel._engines.values()):
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_forget_engines_after_fork)


def prune_delivered(path: Path, *, older_than: dt.timedelta = KEEP_DELIVERED) -> int:
    """Delete delivered messages older than `older_than`; returns how many went."""
    if not path.exists():
        return 0
    # kombu stamps a row with the local time when it is delivered (`timestamp`).
    cutoff = (dt.datetime.now() - older_than).isoformat(sep=" ")
    with sqlite3.connect(path, timeout=30) as db:
        try:
            cursor = db.execute(
                "DELETE FROM kombu_message WHERE visible = 0 AND timestamp < ?", (cutoff,)
            )
        except sqlite3.OperationalError:  # no table yet: nothing was ever sent
            return 0
        return cursor.rowcount
