"""Group commit of decision events: one INSERT and one COMMIT for the decisions of many requests.

Under gunicorn's gthread workers a process answers several requests at once, each in a thread of
its own. A decision's durable write was its own transaction: `BEGIN`, the INSERT, and a `COMMIT`
that waits for the write-ahead log to reach the disk, each a round trip, for every decision.
Here one writer thread per process takes the events of every decision waiting at that moment and
writes them in one transaction (one multi-row INSERT, one COMMIT), with whatever else each
decision writes beside its event (its rule's match counts); while it commits, the next decisions
queue up and form the next batch. A batch of events alone is one INSERT in autocommit, its own
transaction, without a BEGIN and a COMMIT of their own.

Nothing is answered before it is stored: a request waits until the transaction holding its event
has committed, and if that fails, the request fails as a direct write would (the error is raised
in the request's thread; nothing is answered). A batch that fails is written again one decision
at a time, so one decision that cannot be stored fails alone. The events are the same rows as
`console.services.event_record` writes (`_event_row`: redacted, in their session's shard,
`pending` for the sequence matchers, which read them from the same table, in the same
transaction), followed by the same matcher kicks and log lines once committed.

Used only where it can be: PostgreSQL (SQLite has one writer at a time anyway), the setting
`STALWART_EVENT_GROUP_COMMIT` on (the default), and a decision made outside any transaction
(inside one, as in the tests' transactions, the caller's transaction must hold the event).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction

log = logging.getLogger(__name__)


@dataclass
class Job:
    """One decision's writes: its events' rows, and what else it writes in their transaction."""

    organisation: Any
    rows: list[Any]
    also: Callable[[], None] | None = None
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    events: list[Any] = field(default_factory=list)


class EventWriter:
    """This process's writer thread, and the queue of decisions waiting for it."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.queue: list[Job] = []
        self.stopping = False
        # How many decisions the transaction under way holds (0 between transactions).
        self.writing = 0
        self.ready = threading.Condition()
        self.thread = threading.Thread(target=self._run, name="stalwart-event-writer", daemon=True)
        self.thread.start()

    def write(self, job: Job, timeout: float) -> list[Any]:
        """Queue `job` and wait until it is committed: its events, or its error raised here."""
        with self.ready:
            self.queue.append(job)
            self.ready.notify()
        if not job.done.wait(timeout):
            raise OperationalError(f"the decision's event was not stored within {timeout:g} s")
        if job.error is not None:
            raise job.error
        return job.events

    def stop(self) -> None:
        """Let the thread write what is queued, close its connection and end."""
        with self.ready:
            self.stopping = True
            self.ready.notify()
        self.thread.join(timeout=30)

    def _run(self) -> None:
        while True:
            with self.ready:
                while not self.queue and not self.stopping:
                    self.ready.wait()
                if not self.queue:
                    connection.close()
                    return
                batch, self.queue = self.queue[: self.most], self.queue[self.most :]
                self.writing = len(batch)
            try:
                self._store(batch)
            except BaseException:  # noqa: BLE001 - never leave a request waiting
                log.exception("the event writer failed")
                for job in batch:
                    if not job.done.is_set():
                        job.error = job.error or DatabaseError("the event writer failed")
                        job.done.set()
            finally:
                self.writing = 0

    def _store(self, batch: list[Job]) -> None:
        # A connection past its age, or one that failed, is replaced (without Django's health
        # check, a round trip per batch); one the server dropped (a restart) fails the batch's
        # first statement, and is replaced and the batch written again.
        obsolete = connection.close_at is not None and time.monotonic() >= connection.close_at
        if connection.connection is not None and (connection.errors_occurred or obsolete):
            connection.close()
        try:
            self._commit(batch)
        except (OperationalError, InterfaceError):
            # The connection failed: before the write reached the server, or after it committed
            # and before its answer came back. What was stored is found by its rows' record ids.
            connection.close()
            try:
                self._commit(batch, again=True)
            except DatabaseError:
                self._one_by_one(batch, again=True)
                return
        except DatabaseError:
            self._one_by_one(batch)
            return
        # Committed, at the first try or on a new connection: each request has its answer.
        for job in batch:
            job.done.set()

    def _commit(self, batch: list[Job], *, again: bool = False) -> None:
        from console.services import _event_recorded, events_insert

        if again and self._stored_already(batch):
            for job in batch:
                if job.rows:
                    _event_recorded(job.organisation, job.events)
            return
        # Events alone are one statement, which is a transaction of its own in autocommit: no
        # BEGIN and no COMMIT to wait for, two round trips fewer. Anything written beside them
        # (a rule's match counts) makes it one transaction with them, as before.
        alone = all(job.also is None for job in batch)
        with contextlib.nullcontext() if alone else transaction.atomic():
            for job in batch:
                if job.also is not None:
                    job.also()
            rows = [row for job in batch for row in job.rows]
            stored = events_insert(rows) if rows else []
            at = 0
            for job in batch:
                job.events, at = stored[at : at + len(job.rows)], at + len(job.rows)
                if job.events:
                    _event_recorded(job.organisation, job.events)

    @staticmethod
    def _stored_already(batch: list[Job]) -> bool:
        """Whether `batch` was committed by a try whose answer was lost: a batch is one statement
        or one transaction, so its rows are stored all or none (found by their record ids, each
        event's own). Where they are, each job's events are its rows, with the ids they got."""
        from console.models import Event

        rows = [row for job in batch for row in job.rows]
        if not rows:
            return False  # nothing to find it by: written again (its `also` alone, at worst)
        found = {
            (organisation, record): number
            for organisation, record, number in Event.objects.filter(
                record_id__in=[row.record_id for row in rows]
            ).values_list("organisation_id", "record_id", "pk")
        }
        if not found:
            return False
        for row in rows:
            row.pk = found.get((row.organisation_id, row.record_id))
            row._state.adding, row._state.db = False, connection.alias
        for job in batch:
            job.events = list(job.rows)
        return True

    def _one_by_one(self, batch: list[Job], *, again: bool = False) -> None:
        for job in batch:
            # After an error other than a refused row, the connection is replaced, not trusted.
            if connection.connection is not None and connection.errors_occurred:
                connection.close()
            try:
                self._commit([job], again=again)
            except BaseException as exc:  # noqa: BLE001 - this decision fails closed, alone
                job.error = exc
            job.done.set()


_writer: EventWriter | None = None
_writer_pid = 0
_writer_lock = threading.Lock()


def writer() -> EventWriter | None:
    """This process's writer, when a decision made here and now may be written through it."""
    global _writer, _writer_pid
    if not settings.STALWART_EVENT_GROUP_COMMIT or connection.vendor != "postgresql":
        return None
    if connection.in_atomic_block:
        return None
    if _writer is None or _writer_pid != os.getpid():
        with _writer_lock:
            if _writer is None or _writer_pid != os.getpid():
                _writer = EventWriter(int(settings.STALWART_EVENT_GROUP_COMMIT_MOST))
                _writer_pid = os.getpid()
    return _writer


def stop() -> None:
    """End this process's writer, if one runs (the next decision starts another)."""
    global _writer
    with _writer_lock:
        current, _writer = _writer, None
    if current is not None and _writer_pid == os.getpid():
        current.stop()


def store(job: Job) -> list[Any]:
    """Write `job` through this process's writer and return its events once committed."""
    current = writer()
    if current is None:
        raise RuntimeError("no event writer here: write in the caller's transaction")
    return current.write(job, float(settings.STALWART_EVENT_WRITE_TIMEOUT))


def record(
    organisation: Any, event: dict[str, Any] | None, also: Callable[[], None] | None = None
) -> list[Any]:
    """One decision's event (`console.services.event_record`'s fields; None: no event) and what
    it writes beside it (`also`), through this process's writer: its events once committed."""
    from console.services import _event_row

    rows = [] if event is None else [_event_row(organisation=organisation, **event)]
    return store(Job(organisation=organisation, rows=rows, also=also))
