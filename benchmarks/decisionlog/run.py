"""Decision logs, measured: how soon a runtime's decision is in the console's feed at 1,000
decisions/s, the console's sustained ingest rate, and sequence matching with 1 and 2 workers.

    python -m benchmarks.decisionlog [--quick] [--rate R [R...]] [--seconds S] [--backlog N]
    python -m benchmarks.decisionlog --scaleout-only [--events N] [--repeat K]

Setup: its own PostgreSQL database (`BENCH_DATABASE_URL`, dropped and created again) and Redis
database (`BENCH_REDIS_URL`, flushed), seeded by `benchmarks.http.seed`; the console under
gunicorn (production settings, 2 worker processes) on a port the OS gave.

1. **Delay**: runtime sessions in this process decide `R` calls per second for `S` seconds (real
   checks through `RuntimeSession`, 20 sessions in turn), their sink a `Spool` on local disk,
   shipped by a `Shipper` with its defaults (as a runtime starts it) to `POST /v1/decisions`.
   A poller reads the events table every 20 ms; a record's delay is from its decision (`at`) to
   the poll that first sees its event.
2. **Ingest rate**: `N` records written into a spool while nothing ships (the console down),
   then the shipper started: records stored per second until the spool is empty.
3. **Scale-out** (`benchmarks.decisionlog.scaleout`, a process of its own): the same backlog of
   pending events in PostgreSQL matched by 1, then 2 `celery worker` processes, and the CPU and
   SQL statements each event costs. `--scaleout-only` runs only this part (no gunicorn, no seed):
   a few minutes.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.http.run import (
    DatabaseCpu,
    _free_port,
    _wait_ready,
    fresh_console,
    prepare,
    serve,
    server_cpu,
)

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/stalwart_bench_decisionlog"
DEFAULT_REDIS = "redis://127.0.0.1:6379/14"
KEY = b"b" * 32


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def _sessions(sink, count: int):  # noqa: ANN001, ANN202
    from stalwart_agents import runtime
    from tests.guard.engine.conftest import lab_catalogue

    catalogue = runtime.seal(lab_catalogue())
    return [
        runtime.open_session("assistant", catalogue=catalogue, key=KEY, sink=sink)
        for _ in range(count)
    ]


class Poller(threading.Thread):
    """Reads the new runtime events every `tick` seconds: (decided at, first seen at) per event."""

    BACK = 5_000

    def __init__(self, database: str, tick: float = 0.02) -> None:
        super().__init__(daemon=True)
        import psycopg

        self.db = psycopg.connect(database, autocommit=True)
        self.tick = tick
        self.seen: list[tuple[float, float]] = []
        self.stopping = threading.Event()
        # Only what is decided from now on (not an earlier run's events).
        self.last = self.db.execute("SELECT coalesce(max(id), 0) FROM console_event").fetchone()[0]

    def run(self) -> None:
        # Batches commit side by side, so a later commit may hold lower ids: each poll looks back
        # `BACK` ids behind the highest seen, and counts an event once.
        found: set[int] = set()
        start = self.last
        while not self.stopping.is_set():
            rows = self.db.execute(
                "SELECT id, extract(epoch from at) FROM console_event "
                "WHERE id > %s AND source = 'runtime' ORDER BY id",
                (max(start, self.last - self.BACK),),
            ).fetchall()
            now = time.time()
            for ident, at in rows:
                if ident in found:
                    continue
                found.add(ident)
                self.seen.append((float(at), now))
                self.last = max(self.last, ident)
            time.sleep(self.tick)


def delay(url: str, key: str, database: str, rate: int, seconds: float, var: Path) -> dict:
    from stalwart_agents.spool import Shipper, Spool

    spool = Spool(var / "delay-spool.sqlite3")
    shipper = Shipper(spool, url=url, api_key=key).start()
    sessions = _sessions(spool, 20)
    poller = Poller(database)
    poller.start()
    started = time.perf_counter()
    made = 0
    while (elapsed := time.perf_counter() - started) < seconds:
        due = int(elapsed * rate)
        while made < due:
            sessions[made % len(sessions)].check("get_order", {"order_id": f"A{made % 997}"})
            made += 1
        time.sleep(0.001)
    achieved = made / (time.perf_counter() - started)
    assert shipper.flush(120), "the spool did not drain"
    deadline = time.monotonic() + 30
    while len(poller.seen) < made and time.monotonic() < deadline:
        time.sleep(0.05)
    poller.stopping.set()
    poller.join()
    shipper.stop()
    delays = [(seen - at) * 1000 for at, seen in poller.seen]
    return {
        "made": made,
        "rate": achieved,
        "in_feed": len(delays),
        "p50": statistics.median(delays),
        "p99": _percentile(delays, 0.99),
        "max": max(delays),
        "within_2s": sum(1 for d in delays if d <= 2000) / len(delays),
        "failures": shipper.failures,
    }


def ingest(url: str, key: str, backlog: int, var: Path, master: int, database: str) -> dict:
    from stalwart_agents.spool import Shipper, Spool

    spool = Spool(var / "ingest-spool.sqlite3")
    sessions = _sessions(spool, 50)
    made_start = time.perf_counter()
    for i in range(backlog):
        sessions[i % len(sessions)].check("get_order", {"order_id": f"B{i % 997}"})
    spooled = backlog / (time.perf_counter() - made_start)
    shipper = Shipper(spool, url=url, api_key=key, batch=500, interval=0.05)
    backends = DatabaseCpu(database)
    server_before, _ = server_cpu(master)
    database_before = backends.seconds()
    started = time.perf_counter()
    shipper.start()
    assert shipper.flush(600), "the spool did not drain"
    elapsed = time.perf_counter() - started
    server_after, _ = server_cpu(master)
    database_after = backends.seconds()
    backends.close()
    shipper.stop()
    used = None
    if database_before is not None and database_after is not None:
        used = sum(t - database_before.get(pid, 0.0) for pid, t in database_after.items())
    return {
        "backlog": backlog,
        "rate": backlog / elapsed,
        "spooled": spooled,
        "server_ms": (server_after - server_before) * 1000 / backlog,
        "database_ms": None if used is None else used * 1000 / backlog,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE)
    )
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS))
    parser.add_argument("--rate", type=int, nargs="+", default=[1000])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--backlog", type=int, default=30_000)
    parser.add_argument("--events", type=int, default=60_000, help="scale-out backlog")
    parser.add_argument("--no-scaleout", action="store_true", help="skip part 3")
    parser.add_argument("--scaleout-only", action="store_true", help="only part 3")
    parser.add_argument("--repeat", type=int, default=2, help="scale-out runs of 1 and 2 workers")
    parser.add_argument("--quick", action="store_true", help="a few-second smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.backlog, args.events = 5.0, 3_000, 6_000
    var = Path(tempfile.mkdtemp(prefix="stalwart-bench-decisionlog-"))
    print(
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, "
        f"load average {_load()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        flush=True,
    )
    if args.scaleout_only:
        return _scaleout(fresh_console(args.database_url, args.redis_url, str(var)), args)
    env, seeded = prepare(args.database_url, args.redis_url, str(var), 1)
    port = _free_port()
    log = var / "gunicorn.log"
    # The console in a scheduling group of its own (see scaleout.py): it runs on another machine.
    server = serve(env, port, 2, log, own_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(port, server)
        delay(url, seeded["key"], args.database_url, args.rate[0], 2.0, var)  # warm-up
        for rate in args.rate:
            result = delay(url, seeded["key"], args.database_url, rate, args.seconds, var)
            print(
                f"delay, {result['rate']:,.0f} decisions/s for {args.seconds:g} s (gunicorn, 2 "
                f"workers): p50 {result['p50']:,.0f} ms, p99 {result['p99']:,.0f} ms, max "
                f"{result['max']:,.0f} ms; {result['in_feed']:,} of {result['made']:,} in the "
                f"feed, {result['within_2s']:.1%} within 2 s; load average {_load()}",
                flush=True,
            )
        rate = ingest(url, seeded["key"], args.backlog, var, server.pid, args.database_url)
        database_ms = (
            "n/a" if rate["database_ms"] is None else f"{rate['database_ms'] * 1000:,.0f} µs"
        )
        print(
            f"ingest, a spool of {rate['backlog']:,} records drained: {rate['rate']:,.0f} records/s "
            f"(batches of 500; the runtime spooled {rate['spooled']:,.0f} decisions/s); CPU per "
            f"record: console (gunicorn) {rate['server_ms'] * 1000:,.0f} µs, database "
            f"{database_ms}; load average {_load()}",
            flush=True,
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    if args.no_scaleout:
        return 0
    return _scaleout(env, args)


def _scaleout(env: dict[str, str], args: argparse.Namespace) -> int:
    subprocess.run(
        [sys.executable, "-m", "benchmarks.decisionlog.scaleout"]
        + ["--events", str(args.events), "--repeat", str(args.repeat)],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "console.settings.dev"},
        check=True,
    )
    return 0
