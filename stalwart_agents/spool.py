"""Decision logs on the agent's machine: a durable local spool and the shipper that drains it.

A runtime session given a sink (`RuntimeSession(sink=...)`) hands it one record per decision and
per call that ran. `Spool` is that sink: each record is one row of a SQLite file in WAL mode,
committed before the sink returns, so a record handed over survives the process being killed.
(With `synchronous="NORMAL"`, the default, a power cut may lose the last commits; `"FULL"` syncs
every record to disk, at a few milliseconds each on an ordinary disk.)

`Shipper` runs background threads (`lanes`, default 2, each the sessions whose id hashes to it)
that send the oldest records to the console's `POST /v1/decisions` in batches (a batch that is not
full waits `linger` seconds, by default the `interval`, 0.2, for the records that follow it), and
deletes them from the spool only once the console has answered 200 (stored, already stored, or
kept as unreadable: the console has them either way).
The console down, slow or failing (a network error, a timeout, 429, 5xx, 401/403) costs nothing
but time: the same batch is sent again after a backoff that doubles from `backoff[0]` to
`backoff[1]` seconds, with jitter. A lane's records leave in the order they were written, and a
session is in one lane, so each session's records reach the console in order; the console stores each record id once, so a
batch sent again after a lost answer is not stored twice. A batch the console refuses as a
whole (400 or 413) is halved until the one record at fault is found; that record is moved to the
spool's `parked` table and reported (logged, `status()["parked"]`), never sent again and never
deleted.

**A full spool** (`max_records` rows or `max_bytes` of records waiting) refuses new records:
`SpoolFull` is raised to the sink's caller and an error is logged once per spell of refusals,
with the count in `status()["refused"]`. Nothing already waiting is dropped. A `RuntimeSession`
whose sink raises keeps the record in memory and hands it again before its next one (see
`stalwart_agents.runtime`), so a spool that empties again loses nothing; a decision is never
changed by the decision log. That is our choice over refusing the calls themselves: the log
records what the runtime decided, and the runtime keeps deciding (and failing closed) on its own.

**A key rotated strands nothing.** A spool is one console's and key's (`Spool.claim`, a digest
of both), so a process started with a new key writes to a new spool. Its shipper asks the console
which organisation the key is of (`GET /v1/whoami`, in a thread of its own, never on a decision's
path) and records it beside the owner (`tenant_of`: a digest of the console's url and the
organisation's lasting id); then it adopts the spools beside its own whose owner is another key
of the same console and organisation, and ships them with its own key (`Shipper.adopt_waiting`).
A spool whose organisation was never recorded (written before this, or by a key the console never
answered) is not adopted: `stalwart spool adopt` ships it on an operator's word. Only the holder
of a spool's lock (`SpoolLock`, a `flock` the OS lets go with the process) ships it.
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
import random
import sqlite3
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: no flock (see `SpoolLock`)
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

# An hour of the console away at 1,000 decisions/s is 3.6 million records of about 470 bytes:
# the default caps hold that, with room.
DEFAULT_MAX_RECORDS = 5_000_000
DEFAULT_MAX_BYTES = 4 * 1024 * 1024 * 1024
DEFAULT_BATCH = 500
#: Records deleted per statement when the console has a batch (`Spool.ack`).
ACK_CHUNK = 32
#: The WAL's pages past which an append checkpoints it itself (the shipper does it before).
WAL_PAGES = 10_000

# A record's position is its rowid: one more than the highest waiting, so the waiting records are
# in the order they were written. A position left free (the records above it shipped) may be
# given again, which is why `parked` keeps rows of its own. No AUTOINCREMENT: its counter
# (`sqlite_sequence`) is one more page written by every append's commit, a fifth of its cost.
# (Spools made before keep their AUTOINCREMENT table, and work the same.)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    position INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    session TEXT NOT NULL,
    hash INTEGER NOT NULL,
    body TEXT NOT NULL,
    size INTEGER NOT NULL,
    written REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS parked (
    number INTEGER PRIMARY KEY,
    position INTEGER NOT NULL,
    id TEXT NOT NULL,
    body TEXT NOT NULL,
    reason TEXT NOT NULL,
    parked REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS owner (
    only INTEGER PRIMARY KEY CHECK (only = 1),
    digest TEXT NOT NULL,
    tenant TEXT
);
"""
#: The first bytes of every SQLite file: what is not one is never opened as a spool to adopt.
SQLITE_HEADER = b"SQLite format 3\x00"
#: Files beside a spool that are its own (its WAL, its lock), never spools of their own.
SIDECARS = ("-wal", "-shm", "-journal", ".lock")
#: Seconds between two looks for spools to adopt, once the shipper knows its organisation.
ADOPT_EVERY = 30.0


class Record(dict):
    """A decision-log record as `runtime.decision_record` makes it, with `text`, the compact JSON
    it was measured by, which the spool writes as it is rather than writing the record out a
    second time (None: written out here). A session hands a Record only to a `Spool` sink, as it
    is; every other sink gets a plain dict, so no text can outlive a change to its record."""

    __slots__ = ("text",)

    def __init__(self, *args: Any, **fields: Any) -> None:
        super().__init__(*args, **fields)
        self.text: str | None = None


class SpoolError(Exception):
    """Base of the spool's own errors."""


class SpoolFull(SpoolError):
    """The spool holds its cap of records waiting: this record was not written."""


class SpoolTaken(SpoolError):
    """The spool is another console's or API key's: its records are not this shipper's to send."""


def owner_of(url: str, api_key: str) -> str:
    """Who a spool's records are for: a digest of the console's url and the API key."""
    return hashlib.sha256(f"{url}\n{api_key}".encode()).hexdigest()


def tenant_of(url: str, organisation_id: str) -> str:
    """Whose records a spool holds, whatever the key: a digest of the console's url and the
    organisation's lasting id (`GET /v1/whoami`'s `organisation_id`). Any key of the same console
    and organisation may ship them; no other may."""
    return hashlib.sha256(
        f"{url.rstrip('/')}\norganisation\n{organisation_id}".encode()
    ).hexdigest()


class SpoolLock:
    """The right to ship one spool: an exclusive `flock` on the sidecar file `<spool>.lock`,
    taken without waiting and held while shipping. The OS lets it go when the process ends, even
    killed, so a spool is never stranded by a lock. Two opens of the file are two holders even in
    one process (`flock` locks an open file, not a process). Where there is no `flock` (Windows)
    it is always granted: one shipper per file is then the operator's care, as it was before."""

    def __init__(self, path: Path) -> None:
        self.path = path.with_name(path.name + ".lock")
        self._fd: int | None = None
        self._guard = threading.Lock()

    def acquire(self) -> bool:
        """Take the lock if no one holds it (True, also when this one does already)."""
        with self._guard:
            if self._fd is not None or fcntl is None:
                return True
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return False
            self._fd = fd
            return True

    def release(self) -> None:
        with self._guard:
            if self._fd is not None:
                os.close(self._fd)  # closing the file lets the lock go
                self._fd = None


def survey(path: Path) -> dict[str, Any] | None:
    """What a spool file holds, read without writing to it: its owner's `digest` and `tenant`
    (None: not recorded, or no owner yet), the records `waiting`, their `sessions`, the `oldest`
    and `newest` written (epoch seconds) and how many are `parked`; None when the file is not a
    spool (not SQLite, no records table, unreadable)."""
    try:
        with path.open("rb") as handle:
            if handle.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
                return None
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    except (OSError, sqlite3.Error):
        return None
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(owner)")}
        tenant = "tenant" if "tenant" in columns else "NULL"
        owner = None
        if columns:
            owner = db.execute(f"SELECT digest, {tenant} FROM owner").fetchone()  # noqa: S608
        waiting, sessions, oldest, newest = db.execute(
            "SELECT count(*), count(DISTINCT session), min(written), max(written) FROM records"
        ).fetchone()
        (parked,) = db.execute("SELECT count(*) FROM parked").fetchone()
    except sqlite3.Error:
        return None
    finally:
        db.close()
    return {
        "digest": owner[0] if owner else None,
        "tenant": owner[1] if owner else None,
        "waiting": int(waiting),
        "sessions": int(sessions),
        "oldest": oldest,
        "newest": newest,
        "parked": int(parked),
    }


def siblings(given: str | None) -> list[Path]:
    """The spools another key of this console may have left where this process looks for its
    own: with `$STALWART_SPOOL` (`given`), that file and the `<stem>-<digest><suffix>` beside it;
    else the `decisions-<digest>.sqlite3` of the state folder. Their sidecars are not spools."""
    if given:
        taken = Path(given)
        found = [
            taken,
            *taken.parent.glob(f"{glob.escape(taken.stem)}-*{glob.escape(taken.suffix)}"),
        ]
    else:
        found = list(default_path().parent.glob("decisions-*.sqlite3"))
    return sorted(path for path in found if not path.name.endswith(SIDECARS) and path.is_file())


def default_path() -> Path:
    """Where the spool lives unless told: `$STALWART_SPOOL`, else the user's state folder."""
    given = os.environ.get("STALWART_SPOOL")
    if given:
        return Path(given)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "stalwart" / "decisions.sqlite3"


class Spool:
    """A durable queue of decision-log records in one SQLite file (see the module docstring).

    Call it with a record (it is a sink); `peek`, `ack` and `park` are the shipper's.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        max_records: int = DEFAULT_MAX_RECORDS,
        max_bytes: int = DEFAULT_MAX_BYTES,
        synchronous: str = "NORMAL",
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError("synchronous: is NORMAL or FULL")
        if max_records < 1 or max_bytes < 1:
            raise ValueError("max_records and max_bytes: at least 1")
        self.path = Path(path) if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.max_records = max_records
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self.arrived = threading.Event()
        self._db = sqlite3.connect(
            str(self.path), check_same_thread=False, isolation_level=None, timeout=30
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._db.executescript(_SCHEMA)
        self._migrate()
        # The WAL is copied back into the database by the shipper (`checkpoint`, after each batch
        # and each failed try): left to SQLite, the append that takes the WAL past 1,000 pages
        # does it, and a decision waits for its fsync (about 5 ms, one append in 300). Past
        # `WAL_PAGES` (a spool with no shipper) the appends do it again.
        self._db.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
        # The shipper reads through a connection of its own, under a lock of its own: in WAL mode
        # a read never blocks the writer, so a decision's append never waits while a batch of
        # 500 records is read out (1-9 ms), nor while the WAL is checkpointed.
        self._reading = threading.Lock()
        self._reader = sqlite3.connect(
            str(self.path), check_same_thread=False, isolation_level=None, timeout=30
        )
        count, size = self._db.execute(
            "SELECT count(*), coalesce(sum(size), 0) FROM records"
        ).fetchone()
        self._count, self._bytes = int(count), int(size)
        self.refused = 0
        self._refusing = False

    def _migrate(self) -> None:
        """A spool made before organisations were recorded gains the owner's `tenant` column, in
        place (NULL: not known, so not adopted on its own); two processes opening it at once add
        it once."""
        if "tenant" in {row[1] for row in self._db.execute("PRAGMA table_info(owner)")}:
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if "tenant" not in {row[1] for row in self._db.execute("PRAGMA table_info(owner)")}:
                self._db.execute("ALTER TABLE owner ADD COLUMN tenant TEXT")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    # -- the sink --------------------------------------------------------------------------------

    def __call__(self, record: Mapping[str, Any]) -> None:
        self.append(record)

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record, committed before this returns; `SpoolFull` when at the cap."""
        body = record.text if type(record) is Record else None
        if body is None:
            body = json.dumps(record, separators=(",", ":"), default=str)
        size = len(body)  # JSON written ASCII (as `decision_record` writes it too): bytes
        with self._lock:
            if self._count + 1 > self.max_records or self._bytes + size > self.max_bytes:
                self.refused += 1
                if not self._refusing:
                    self._refusing = True
                    log.error(
                        "the decision-log spool %s is full (%d records, %d bytes waiting): "
                        "new records are refused until the console takes some",
                        self.path,
                        self._count,
                        self._bytes,
                    )
                raise SpoolFull(f"the decision-log spool {self.path} is full")
            session = str(record.get("session") or "")
            self._db.execute(
                "INSERT INTO records (id, session, hash, body, size, written) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    str(record.get("id") or ""),
                    session,
                    zlib.crc32(session.encode()),
                    body,
                    size,
                    time.time(),
                ),
            )
            self._count += 1
            self._bytes += size
        self.arrived.set()

    # -- the shipper's side ----------------------------------------------------------------------

    def peek(self, limit: int, lane: int = 0, lanes: int = 1) -> list[tuple[int, str]]:
        """The oldest `limit` records waiting in one lane, as (position, JSON text), oldest first.

        A session's records are all in one lane (by a hash of its id), so shipping lanes side by
        side keeps each session's records in order."""
        with self._reading:
            return self._reader.execute(
                "SELECT position, body FROM records WHERE hash % ? = ? ORDER BY position LIMIT ?",
                (lanes, lane, limit),
            ).fetchall()

    def ack(self, positions: list[int], lane: int = 0, lanes: int = 1) -> None:
        """The console has these records (a `peek` of this lane): they leave the spool.

        They are deleted `ACK_CHUNK` at a time, each chunk its own statement and commit under the
        writer's lock: a decision's append waits for one chunk (about 0.1 ms), never for a whole
        batch's delete (about 3 ms for 500 records). A process killed between two chunks leaves
        the rest to be sent again, which the console stores once."""
        ordered = sorted(positions)
        for start in range(0, len(ordered), ACK_CHUNK):
            chunk = ordered[start : start + ACK_CHUNK]
            marks = ",".join("?" * len(chunk))
            with self._lock:
                sizes = self._db.execute(
                    f"DELETE FROM records WHERE position IN ({marks}) "  # noqa: S608 - marks only
                    "AND hash % ? = ? RETURNING size",
                    (*chunk, lanes, lane),
                ).fetchall()
                self._count -= len(sizes)
                self._bytes -= sum(int(size) for (size,) in sizes)
                if self._refusing and self._count < self.max_records:
                    self._refusing = False
                    log.warning("the decision-log spool %s takes records again", self.path)

    def checkpoint(self) -> tuple[int, int]:
        """Copy the WAL back into the database from the shipper's side, without waiting for the
        writer or blocking it (`PASSIVE`); the WAL's pages and how many of them are copied."""
        with self._reading:
            _, pages, copied = self._reader.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return int(pages), int(copied)

    def park(self, position: int, reason: str) -> None:
        """Move a record the console refuses on its own out of the way, kept and reported."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(
                    "SELECT id, body, size FROM records WHERE position = ?", (position,)
                ).fetchone()
                if row is not None:
                    self._db.execute(
                        # OR REPLACE for a spool made before, whose key is `position`.
                        "INSERT OR REPLACE INTO parked (position, id, body, reason, parked) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (position, row[0], row[1], reason[:2000], time.time()),
                    )
                    self._db.execute("DELETE FROM records WHERE position = ?", (position,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            if row is not None:
                self._count -= 1
                self._bytes -= int(row[2])
        log.error("a decision-log record the console refuses was parked: %s", reason[:500])

    def claim(self, owner: str) -> None:
        """Make the spool `owner`'s (`owner_of`), the first time; `SpoolTaken` when it is
        another's already: a shipper sends what waits in the spool with its own key, so two keys
        sharing one file would send each other's records to each other's organisation."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute("SELECT digest FROM owner").fetchone()
                if row is None:
                    self._db.execute("INSERT INTO owner (only, digest) VALUES (1, ?)", (owner,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        if row is not None and row[0] != owner:
            raise SpoolTaken(
                f"the decision-log spool {self.path} holds the records of another console or "
                "API key: give each its own"
            )

    def settle(self, owner: str, tenant: str) -> None:
        """Record whose records the spool holds (`tenant_of`), once its owner's key has learned
        its organisation from the console; a spool another owner claimed is left as it is."""
        with self._lock:
            self._db.execute(
                "UPDATE owner SET tenant = ? WHERE only = 1 AND digest = ?", (tenant, owner)
            )

    def waiting(self) -> int:
        """How many records wait in the file, whoever wrote them (`pending` counts this
        process's view)."""
        with self._reading:
            return int(self._reader.execute("SELECT count(*) FROM records").fetchone()[0])

    def pending(self) -> int:
        """How many records wait to be shipped."""
        with self._lock:
            return self._count

    def status(self) -> dict[str, Any]:
        """What the spool holds: records and bytes waiting, the oldest's age, parked, refused."""
        with self._reading:
            oldest = self._reader.execute("SELECT min(written) FROM records").fetchone()[0]
            parked = self._reader.execute("SELECT count(*) FROM parked").fetchone()[0]
        with self._lock:
            return {
                "path": str(self.path),
                "pending": self._count,
                "bytes": self._bytes,
                "oldest_seconds": (time.time() - oldest) if oldest is not None else None,
                "parked": int(parked),
                "refused": self.refused,
                "full": self._refusing,
            }

    def close(self) -> None:
        with self._reading:
            self._reader.close()
        with self._lock:
            self._db.close()


class ShipRefused(SpoolError):
    """The console refused a batch as a whole (400 or 413): it is split to find the record."""

    def __init__(self, status: int, answer: Any) -> None:
        super().__init__(f"the console refused the batch ({status}): {answer}")
        self.status = status
        self.answer = answer


class ShipFailed(SpoolError):
    """The batch did not reach the console, or the console could not take it now: sent again."""


class Shipper:
    """Sends a spool's records to the console in batches from background threads.

    `lanes` threads each ship the sessions of one lane (a hash of the session id), so that as
    many batches are in flight while each session's records still leave in order. `start()`
    begins, `flush(timeout)` waits until the spool is empty, `stop()` ends the threads (records
    not yet shipped stay in the spool for the next run). The lanes ship only while this shipper
    holds the spool's lock (`SpoolLock`): another process shipping the same file, they wait.

    Given `siblings` (a function listing the spool files beside this one), a thread of its own
    learns the key's organisation once the console answers `GET /v1/whoami`, records it in the
    spool (`Spool.settle`), and then, every `adopt_every` seconds, adopts each sibling whose
    owner is another key of the same console and organisation (`tenant_of`) and which no other
    process ships (its lock is free): a shipper of the same kind, one lane, sends its records
    with this shipper's key, in the order they were written, until it is empty. The file is left
    in place, empty (a process still running with the old key may yet write to it: a file
    removed under it would lose those records; the next look ships them).
    """

    def __init__(
        self,
        spool: Spool,
        *,
        url: str,
        api_key: str,
        batch: int = DEFAULT_BATCH,
        interval: float = 0.2,
        linger: float | None = None,
        timeout: float = 10.0,
        backoff: tuple[float, float] = (0.5, 30.0),
        organisation: str | None = None,
        lanes: int = 2,
        siblings: Callable[[], list[Path]] | None = None,
        adopt_every: float | None = None,
    ) -> None:
        if batch < 1 or lanes < 1:
            raise ValueError("batch and lanes: at least 1")
        if linger is None:  # a batch that is not full waits one interval (0.2 s by default)
            linger = interval
        if not 0 <= linger <= interval:
            raise ValueError("linger: from 0 to the interval")
        self.spool = spool
        self.base = url.rstrip("/")
        self.url = self.base + "/v1/decisions"
        self.api_key = api_key
        self.owner = owner_of(url, api_key)  # as `decision_log` claims the spool: a digest only
        self.batch = batch
        self.interval = interval
        self.linger = linger
        self.timeout = timeout
        self.backoff = backoff
        self.organisation = organisation
        self.lanes = lanes
        self._limits = [batch] * lanes
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._counting = threading.Lock()
        self.shipped = 0
        self.duplicates = 0
        self.unreadable = 0
        self.failures = 0
        self.last_error: str | None = None
        self._held = SpoolLock(spool.path)
        self.siblings = siblings
        self.adopt_every = ADOPT_EVERY if adopt_every is None else adopt_every
        self.tenant: str | None = None  # whose records, once the console has said (`learn`)
        self.adopted: list[Path] = []  # the spools of another key this shipper has shipped
        self.looked = 0  # how many times it looked for them
        self._look = threading.Event()

    # -- one batch -------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Authorization": f"Bearer {self.api_key}",
            "User-Agent": "stalwart-agents/1 decision-log",
        }
        if self.organisation:
            headers["X-Stalwart-Organisation"] = self.organisation
        return headers

    def whoami(self) -> dict[str, Any]:
        """The console's `GET /v1/whoami` for this key; `ShipFailed` when it does not answer."""
        request = urllib.request.Request(self.base + "/v1/whoami", headers=self._headers())
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise ShipFailed(f"the console answered {exc.code} to who this key is") from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ShipFailed(f"the console at {self.base} cannot be reached: {exc}") from exc
        if not isinstance(answer, dict):
            raise ShipFailed("the console's answer to who this key is is not an object")
        return answer

    def _post(self, bodies: list[str]) -> dict[str, Any]:
        data = ('{"records":[' + ",".join(bodies) + "]}").encode()
        request = urllib.request.Request(
            self.url, data=data, method="POST", headers=self._headers()
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            try:
                answer: Any = json.loads(exc.read())
            except ValueError:
                answer = exc.reason
            if exc.code in (400, 413):
                raise ShipRefused(exc.code, answer) from exc
            raise ShipFailed(f"the console answered {exc.code}: {answer}") from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ShipFailed(f"the console at {self.url} cannot be reached: {exc}") from exc

    def ship_once(self, lane: int | None = None) -> int:
        """Send the oldest batch of a lane (of each lane, when None); returns how many records
        left the spool (0: nothing waiting).

        `ShipFailed` when the console could not take it (the records stay, in order)."""
        if lane is None:
            return sum(self.ship_once(each) for each in range(self.lanes))
        limit = self._limits[lane]
        rows = self.spool.peek(limit, lane, self.lanes)
        if not rows:
            return 0
        try:
            answer = self._post([body for _, body in rows])
        except ShipRefused as exc:
            if len(rows) == 1:
                self.spool.park(rows[0][0], str(exc))
                self._limits[lane] = self.batch
                return 1
            self._limits[lane] = max(1, len(rows) // 2)
            log.warning("the console refused a batch of %d records; sending halves", len(rows))
            return 0
        self.spool.ack([position for position, _ in rows], lane, self.lanes)
        self._checkpoint()
        if len(rows) == limit and limit < self.batch:
            self._limits[lane] = min(self.batch, limit * 2)
        answer = answer if isinstance(answer, dict) else {}
        unread = answer.get("unreadable") or []
        with self._counting:
            self.shipped += int(answer.get("stored") or 0)
            self.duplicates += int(answer.get("duplicates") or 0)
            self.unreadable += len(unread)
        for item in unread[:10]:
            log.warning("the console could not read a decision-log record: %s", item)
        return len(rows)

    # -- the threads -----------------------------------------------------------------------------

    def hold(self) -> bool:
        """Take the spool's lock if no other process (or shipper) holds it: only its holder
        ships the spool."""
        return self._held.acquire()

    def run(self, lane: int = 0) -> None:
        delay = self.backoff[0]
        while not self._stop.is_set():
            if not self.hold():  # another process ships this file: ours wait, and go out with it
                self._stop.wait(self.interval)
                continue
            try:
                moved = self.ship_once(lane)
            except ShipFailed as exc:
                with self._counting:
                    self.failures += 1
                    failures = self.failures
                self.last_error = str(exc)
                if failures == 1 or failures % 20 == 0:
                    log.warning("decision logs not shipped (%d tries): %s", failures, exc)
                self._checkpoint()  # the console away: the appends go on filling the WAL
                self._stop.wait(delay * (0.5 + random.random() / 2))  # noqa: S311 - jitter
                delay = min(self.backoff[1], delay * 2)
                continue
            except Exception:  # noqa: BLE001 - the thread must not die: the records stay
                with self._counting:
                    self.failures += 1
                log.exception("the decision-log shipper failed; it tries again")
                self._stop.wait(delay)
                delay = min(self.backoff[1], delay * 2)
                continue
            delay = self.backoff[0]
            if moved == 0:
                self.spool.arrived.wait(self.interval)
                self.spool.arrived.clear()
            if moved < self._limits[lane]:
                # Not a full batch: the records of the next `linger` seconds go with it. Each
                # post costs this process CPU (and the GIL) beside the decisions it logs, so a
                # stream of decisions is shipped in a few larger batches, not a post each. At
                # 0.2 s a lane posts about five times a second: at 1,000 decisions a second, under
                # one decision in a hundred meets a post (and waits for the GIL behind it).
                self._stop.wait(self.linger)

    # -- spools of another key -------------------------------------------------------------------

    def learn(self) -> str | None:
        """Ask the console which organisation this key is of, and record it in the spool: the
        spool's tenant (`tenant_of`); None when the console names no lasting id (an older one).
        `ShipFailed` when it does not answer."""
        organisation_id = self.whoami().get("organisation_id")
        if not organisation_id:
            return None
        self.tenant = tenant_of(self.base, str(organisation_id))
        self.spool.settle(self.owner, self.tenant)
        return self.tenant

    def look(self) -> None:
        """Look for spools to adopt now rather than at the next `adopt_every`."""
        self._look.set()

    def adopt_waiting(self) -> None:
        """Ship every sibling spool of this console and organisation that another key left."""
        mine = self.spool.path.resolve()
        for path in self.siblings() if self.siblings is not None else []:
            if self._stop.is_set():
                return
            found = survey(path)
            if found is None or path.resolve() == mine:
                continue
            ours = found["tenant"] is not None and found["tenant"] == self.tenant
            if ours and found["digest"] != self.owner and found["waiting"]:
                self._adopt(path)
        self.looked += 1

    def alike(self, spool: Spool) -> Shipper:
        """A shipper of `spool` to this console with this key and options, in one lane (the
        file's records leave in the order they were written), adopting nothing itself."""
        return Shipper(
            spool,
            url=self.base,
            api_key=self.api_key,
            batch=self.batch,
            interval=self.interval,
            linger=self.linger,
            timeout=self.timeout,
            backoff=self.backoff,
            organisation=self.organisation,
            lanes=1,
        )

    def _adopt(self, path: Path) -> None:
        spool = Spool(path)
        child = self.alike(spool)
        try:
            if not child.hold():  # its owner, or another adopter, ships it
                return
            count = spool.waiting()  # another adopter may have shipped them since they were seen
            if not count:
                return
            log.warning(
                "shipping %d decision-log records another API key of this organisation left in %s",
                count,
                path,
            )
            self.adopted.append(path)
            child.start()
            while not self._stop.is_set() and spool.waiting() > 0:
                self._stop.wait(self.interval)
        finally:
            child.stop()
            if not child.running:
                spool.close()

    def _adopting(self) -> None:
        delay = self.backoff[0]
        while not self._stop.is_set():
            if self.tenant is None:
                try:
                    if self.learn() is None:
                        log.info("the console names no lasting organisation id: no adoption")
                        return
                except ShipFailed:  # the console away: decisions go on, it is asked again
                    self._stop.wait(delay * (0.5 + random.random() / 2))  # noqa: S311 - jitter
                    delay = min(self.backoff[1], delay * 2)
                    continue
            try:
                self.adopt_waiting()
            except Exception:  # noqa: BLE001 - the thread must not die: it looks again later
                log.exception("looking for decision-log spools of another key failed")
            self._look.wait(self.adopt_every)
            self._look.clear()

    def _checkpoint(self) -> None:
        try:
            self.spool.checkpoint()
        except sqlite3.Error:  # the next append past `WAL_PAGES` does it; the lane goes on
            log.warning("the decision-log spool's WAL could not be checkpointed", exc_info=True)

    def start(self) -> Shipper:
        if not any(thread.is_alive() for thread in self._threads):
            self._stop.clear()
            self._look.clear()
            self._threads = [
                threading.Thread(
                    target=self.run, args=(lane,), name=f"stalwart-decision-log-{lane}", daemon=True
                )
                for lane in range(self.lanes)
            ]
            if self.siblings is not None:
                self._threads.append(
                    threading.Thread(
                        target=self._adopting, name="stalwart-decision-log-adopt", daemon=True
                    )
                )
            for thread in self._threads:
                thread.start()
        return self

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every record waiting has been shipped; False if the time ran out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.spool.pending() == 0:
                return True
            self.spool.arrived.set()
            time.sleep(0.05)
        return self.spool.pending() == 0

    def stop(self, timeout: float = 10.0) -> None:
        """End the threads; the spool's lock goes with the last of them."""
        self._stop.set()
        self.spool.arrived.set()
        self._look.set()
        for thread in self._threads:
            thread.join(timeout)
        if not self.running:
            self._held.release()

    @property
    def running(self) -> bool:
        """Whether a lane is still at work (after `stop`, one still inside a request)."""
        return any(thread.is_alive() for thread in self._threads)


def decision_log(
    *,
    url: str,
    api_key: str,
    path: str | os.PathLike[str] | None = None,
    **options: Any,
) -> tuple[Spool, Shipper]:
    """A spool at `path` (or `default_path()`) and its shipper to the console at `url`, started:
    give the spool to a session as its `sink`. `options` are `Spool`'s caps and `Shipper`'s
    batch, interval, linger, timeout, backoff, organisation, siblings and adopt_every. The spool
    is this console's and key's from its first use on (`Spool.claim`): `SpoolTaken` when it is
    another's."""
    spool_options = {
        k: options.pop(k) for k in ("max_records", "max_bytes", "synchronous") if k in options
    }
    spool = Spool(path, **spool_options)
    try:
        spool.claim(owner_of(url, api_key))
    except SpoolTaken:
        spool.close()
        raise
    return spool, Shipper(spool, url=url, api_key=api_key, **options).start()
