"""Whether the database, the broker and at least one worker answer, each with what went wrong."""

from __future__ import annotations

import secrets
import time
from dataclasses import asdict, dataclass

from django.conf import settings
from django.db import connection


@dataclass(frozen=True)
class Probe:
    name: str
    ok: bool
    detail: str


def check_database() -> Probe:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any failure means the database does not answer
        return Probe("database", False, f"the database does not answer: {type(exc).__name__}")
    return Probe("database", True, f"{connection.vendor} answers")


def _broker_name() -> str:
    url = settings.CELERY_BROKER_URL
    return "embedded broker (SQLite)" if url.startswith("sqlite") else "redis"


def check_broker() -> Probe:
    from console.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:  # noqa: BLE001 - any failure means the broker does not answer
        return Probe("broker", False, f"the {_broker_name()} does not answer: {type(exc).__name__}")
    return Probe("broker", True, f"the {_broker_name()} answers")


def check_worker(timeout: float | None = None) -> Probe:
    """Send a ping task and wait for a worker to write its row: proof that one takes tasks."""
    from console.models import WorkerPing
    from console.tasks import health_ping

    timeout = settings.STALWART_HEALTH_WORKER_TIMEOUT if timeout is None else timeout
    nonce = secrets.token_hex(16)
    try:
        health_ping.apply_async(args=[nonce], expires=timeout + 5, retry=False)
    except Exception as exc:  # noqa: BLE001 - the task could not even be sent
        return Probe("worker", False, f"the ping task could not be sent: {type(exc).__name__}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ping = WorkerPing.objects.filter(nonce=nonce).first()
        if ping is not None:
            return Probe("worker", True, f"worker {ping.hostname} answered")
        time.sleep(0.1)
    return Probe("worker", False, f"no worker answered within {timeout:g} s")


#: How long a page that asks "does a worker answer?" keeps the answer (a ping waits for seconds).
PING_CACHE_SECONDS = 15
PING_CACHE_KEY = "stalwart:health:worker-answer"


def worker_answer() -> Probe:
    """The broker, then the health ping to a worker, as one answer kept `PING_CACHE_SECONDS`: what
    a page polling every few seconds asks without pinging each time."""
    from django.core.cache import cache

    kept = cache.get(PING_CACHE_KEY)
    if isinstance(kept, dict):
        return Probe(**kept)
    broker = check_broker()
    found = check_worker() if broker.ok else Probe("worker", False, broker.detail)
    cache.set(PING_CACHE_KEY, asdict(found), PING_CACHE_SECONDS)
    return found


def health_report() -> dict:
    database = check_database()
    broker = check_broker()
    if broker.ok:
        worker = check_worker()
    else:
        worker = Probe("worker", False, "not asked: the broker does not answer")
    probes = [database, broker, worker]
    return {"ok": all(p.ok for p in probes), "checks": [asdict(p) for p in probes]}


@dataclass(frozen=True)
class WorkerStatus:
    """What the dashboard says of the workers: when one last took the beat's heartbeat, and the outbox."""

    alive: bool
    hostname: str
    seconds_since: float | None  # since a worker last took a heartbeat; None: never
    pending: int  # the organisation's events waiting for a worker
    oldest_pending_seconds: float | None

    @property
    def summary(self) -> str:
        if self.seconds_since is None:
            heard = "no worker has taken a task yet"
        else:
            heard = f"a worker last took a task {_ago(self.seconds_since)} ago"
        if not self.pending:
            return f"{heard}; nothing waits in the outbox"
        return (
            f"{heard}; {self.pending} event{'s' if self.pending != 1 else ''} wait in the outbox, "
            f"the oldest for {_ago(self.oldest_pending_seconds or 0)}"
        )


def _ago(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


def worker_status(*, organisation=None) -> WorkerStatus:  # noqa: ANN001
    """Whether a worker took the beat's heartbeat within `STALWART_WORKER_STALE_SECONDS`."""
    from django.utils import timezone

    from console.models import Event, MatchState, WorkerPing
    from console.tasks import HEARTBEAT_PREFIX

    now = timezone.now()
    beat = WorkerPing.objects.filter(nonce__startswith=HEARTBEAT_PREFIX).order_by("-at").first()
    since = (now - beat.at).total_seconds() if beat is not None else None
    pending = Event.objects.filter(match_state=MatchState.PENDING)
    if organisation is not None:
        pending = pending.filter(organisation=organisation)
    oldest = pending.order_by("at").values_list("at", flat=True).first()
    return WorkerStatus(
        alive=since is not None and since <= settings.STALWART_WORKER_STALE_SECONDS,
        hostname=beat.hostname if beat is not None else "",
        seconds_since=since,
        pending=pending.count(),
        oldest_pending_seconds=(now - oldest).total_seconds() if oldest is not None else None,
    )
