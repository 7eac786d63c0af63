"""The decision endpoints' steady path: its statements written by hand, read as the ORM reads them.

Each decision reads what it needs with one statement written out by hand: the ORM took longer to
build those statements than the database took to answer them, and a raw queryset works out its
columns and converters again on every call. `ModelRows` names the fields a statement selects,
writes their column list, and turns a row's leading values into an instance with the backend's
and the fields' own converters (worked out once per database vendor), through `Model.from_db` as
a queryset would; fields not named are deferred, as with `.only()`.

`cursor()` is where those statements run. On PostgreSQL it binds their parameters on the server,
so the server prepares a statement it has seen `prepare_threshold` times on a connection (the
database setting, 5 unless `STALWART_DB_PREPARED=0`) and from then on neither parses nor plans it
again: that was most of the server's time on each, and a third of the console's. Django's own
cursors keep binding on the client, so every other query is as Django makes it. Statements go
through Django's cursor wrapper all the same: its errors, its execute wrappers, its query log.

`unchecked` runs a request's reads (or its whole transaction) without Django's connection health
check, a round trip of its own (`SELECT 1`) before the first statement of every request: the
work's first statement is its own check. On a kept connection the server has dropped (a restart,
an idle timeout), that statement fails before anything is read or written, and the work runs once
more on a new connection, so the request is answered as the health check would have let it be.
Only then: once any statement of the work has been answered, a failure is the work's own.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from django.db import InterfaceError, OperationalError, connection
from django.db.models import Model

T = TypeVar("T")


def unchecked(work: Callable[[], T]) -> T:
    """`work()` on this request's connection, its first statement standing for the health check.

    `work` reads, or is one transaction (nothing of it is kept if it fails). It runs once more
    only when its first statement failed because the server had dropped the kept connection.
    """
    pending = (
        connection.connection is not None
        and not connection.in_atomic_block
        and connection.health_check_enabled
        and not connection.health_check_done
    )
    if not pending:
        return work()
    connection.health_check_done = True
    kept = connection.connection
    answered: list[bool] = []

    def noted(execute: Callable, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        answered.append(True)
        return result

    try:
        with connection.execute_wrapper(noted):
            return work()
    except (OperationalError, InterfaceError):
        if answered or (not kept.closed and not getattr(kept, "broken", False)):
            # A statement was answered (what failed may have been written, a COMMIT whose answer
            # was lost), or the connection works and the statement itself failed: not again.
            raise
        if connection.connection is kept:
            connection.close()
        # (A transaction's rollback may have connected again already: that connection is new.)
    return work()


@contextlib.contextmanager
def cursor() -> Iterator[Any]:
    """A cursor for the steady path's statements: on PostgreSQL one that binds on the server (so
    that a statement run often is prepared once per connection), elsewhere Django's own."""
    if connection.vendor != "postgresql":
        with connection.cursor() as found:
            yield found
        return
    import psycopg

    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        raw = psycopg.Cursor(connection.connection)
    wrapped = connection._prepare_cursor(raw)
    with wrapped:
        yield wrapped


def fetch_one(sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    """The first row of a read-only statement, without a health check round trip before it."""

    def read() -> tuple[Any, ...] | None:
        with cursor() as cursor_:
            cursor_.execute(sql, params)
            return cursor_.fetchone()

    return unchecked(read)


class ModelRows:
    """The named fields of `model`, as the leading columns of a hand-written statement's rows."""

    def __init__(self, model: type[Model], names: tuple[str, ...]) -> None:
        self.model = model
        self.fields = tuple(model._meta.get_field(name) for name in names)
        self.attnames = [field.attname for field in self.fields]
        self._converters: dict[str, list[tuple[Any, list[Any]]]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.fields)

    def columns(self, connection: Any, alias: str) -> str:
        """The select list of these fields, from the table known as `alias` in the statement."""
        quote = connection.ops.quote_name
        return ", ".join(f"{alias}.{quote(field.column)}" for field in self.fields)

    def _of(self, connection: Any) -> list[tuple[Any, list[Any]]]:
        vendor = connection.vendor
        found = self._converters.get(vendor)
        if found is None:
            table = self.model._meta.db_table
            found = []
            for field in self.fields:
                column = field.get_col(table)
                found.append(
                    (
                        column,
                        [
                            *connection.ops.get_db_converters(column),
                            *column.get_db_converters(connection),
                        ],
                    )
                )
            with self._lock:
                self._converters[vendor] = found
        return found

    def instance(self, values: Any, connection: Any) -> Model:
        """The instance of `values` (one per field, in order), as a queryset would build it."""
        converted = []
        for value, (column, converters) in zip(values, self._of(connection), strict=True):
            for converter in converters:
                value = converter(value, column, connection)
            converted.append(value)
        return self.model.from_db(connection.alias, self.attnames, converted)
