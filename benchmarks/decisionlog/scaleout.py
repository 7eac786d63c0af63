"""Sequence matching scaled out: one backlog of pending events in PostgreSQL matched by 1, then 2
`celery worker` processes (concurrency 1 each), timed from the drains being sent to the last
event matched; the ratio is the speed-up.

    DATABASE_URL=postgres://... REDIS_URL=redis://... python -m benchmarks.decisionlog.scaleout

The backlog is the sequence benchmark's (`benchmarks.sequences.run`: 100 sequence rules, events
over 400 sessions in the 8 shards), written before the workers are sent anything, with the
workers already started and idle, so that neither the writing nor a worker's start is timed.
Each worker is started in a session of its own: with the kernel's autogroup scheduling (on here),
the processes of one session share one share of the CPU, so two workers started from one shell on
a busy machine get no more CPU than one. Runs alternate (1, 2, 1, 2...), best of each.

Beside the ratio, what does not move with the machine's load: the CPU each event costs the
workers (their pool processes, from /proc) and PostgreSQL (the workers' backends, found in
`pg_stat_activity`, from /proc: the server runs on this machine), and the SQL statements per
batch and per event, counted by a drain of a smaller backlog in this process
(`connection.execute_wrapper`, plus the BEGIN and COMMIT it does not see). One worker and its
backend take turns, so together they keep about one core busy, and two workers can be up to 2x
one where two cores are free for them. (PostgreSQL's backends each start a session of their own,
so each is a scheduling group of its own, like each worker.) The load of others takes its share
of the cores, and the 8 shards are the unit of work: the last shard may run alone.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from django.db import connection  # noqa: E402

from benchmarks.sequences.run import ROOT, make_events, setup  # sets Django up
from console.celery import app  # noqa: E402
from console.models import SHARDS, Event, MatchState  # noqa: E402
from firewall import matching  # noqa: E402
from firewall.models import SequenceState  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def _workers(count: int, log: Path) -> list[subprocess.Popen]:
    started = []
    for i in range(count):
        out = (log.parent / f"{log.stem}-{count}-{i}.log").open("w")
        started.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "console",
                    "worker",
                    "--concurrency=1",
                    "--prefetch-multiplier=1",
                    "--without-mingle",
                    "--without-gossip",
                    "--loglevel=INFO",
                    "--hostname",
                    f"scaleout-{count}-{i}-{os.getpid()}@%h",
                ],
                cwd=ROOT,
                env=os.environ.copy(),
                stdout=out,
                stderr=subprocess.STDOUT,
                # Each worker its own session, so its own scheduling group (Linux's autogroup):
                # as separate services would be; in one group, two workers share one worker's CPU.
                start_new_session=True,
            )
        )
    deadline = time.monotonic() + 120
    for i in range(count):
        path = log.parent / f"{log.stem}-{count}-{i}.log"
        while "ready." not in path.read_text():
            if time.monotonic() > deadline:
                raise SystemExit(f"worker {i} did not start: {path}")
            time.sleep(0.2)
    return started


def _cpu_of(pid: int) -> float:
    """CPU seconds (user and system) process `pid` has used so far; 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def _cpu(workers: list[subprocess.Popen]) -> float:
    """CPU seconds used so far by the workers' pool processes (where the matching runs)."""
    total = 0.0
    for worker in workers:
        try:
            children = Path(f"/proc/{worker.pid}/task/{worker.pid}/children").read_text().split()
        except OSError:
            continue
        total += sum(_cpu_of(int(child)) for child in children)
    return total


def _backends() -> dict[int, float]:
    """CPU seconds so far of every other backend of this database (the workers' connections)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
        return {pid: _cpu_of(pid) for (pid,) in cursor.fetchall()}


CPU: list[float] = []
BACKEND_CPU: list[float] = []


def run(actor, events: int, workers: int, log: Path, timeout: float = 900) -> float:  # noqa: ANN001
    """Seconds for `workers` processes to match a backlog of `events` events."""
    import redis

    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    Event.objects.filter(organisation=actor.organisation).delete()
    SequenceState.objects.filter(organisation=actor.organisation).delete()
    started = _workers(workers, log)
    try:
        Event.objects.bulk_create(make_events(actor, events, sessions=400), batch_size=5000)
        begin, cpu, backends = time.perf_counter(), _cpu(started), _backends()
        # A worker closes its connection after each task, and a backend's CPU goes with it:
        # sampled every poll, the highest seen per backend (so at least what they used).
        seen: dict[int, float] = {}
        for shard in range(SHARDS):
            app.send_task("firewall.match_shard", args=[shard])
        while Event.objects.filter(
            organisation=actor.organisation, match_state=MatchState.PENDING
        ).exists():
            if time.perf_counter() - begin > timeout:
                # No sweeper runs here (it would send drains of its own): a lost task, say from
                # a flush of this Redis database by someone else, leaves events pending.
                raise SystemExit(f"events still pending after {timeout:g} s (drains lost?)")
            for pid, used in _backends().items():
                seen[pid] = max(used, seen.get(pid, 0.0))
            time.sleep(0.02)
        elapsed = time.perf_counter() - begin
        CPU.append(_cpu(started) - cpu)
        # Backends opened during the run count whole (a worker connects at its first task).
        BACKEND_CPU.append(sum(used - backends.get(pid, 0.0) for pid, used in seen.items()))
        return elapsed
    finally:
        for process in started:
            process.terminate()
        for process in started:
            process.wait(timeout=30)


class Statements:
    """Counts the statements a connection sends (an `execute_wrapper`)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):  # noqa: ANN001, ANN204
        self.count += 1
        return execute(sql, params, many, context)


def profile(actor, events: int) -> dict[str, float]:  # noqa: ANN001
    """Drain a backlog of `events` in this process: statements per batch and per event, and the
    CPU per event of the matcher (this process) and of its PostgreSQL backend."""
    Event.objects.filter(organisation=actor.organisation).delete()
    SequenceState.objects.filter(organisation=actor.organisation).delete()
    Event.objects.bulk_create(make_events(actor, events, sessions=400), batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    statements = Statements()
    batches = done = 0
    begin, cpu, backend_cpu = time.perf_counter(), time.process_time(), _cpu_of(backend)
    sent = 0
    with connection.execute_wrapper(statements):
        for shard in range(SHARDS):
            while True:
                before = statements.count
                if not (taken := matching.drain_shard(shard)):
                    break  # the empty drain that ends a shard is not a batch
                # BEGIN and COMMIT go round the wrapper: two more round trips per batch.
                sent += statements.count - before + 2
                done, batches = done + taken, batches + 1
    wall, cpu = time.perf_counter() - begin, time.process_time() - cpu
    backend_cpu = _cpu_of(backend) - backend_cpu
    assert done == events, (done, events)
    return {
        "events": done,
        "batches": batches,
        "per_batch": sent / batches,
        "per_event": sent / done,
        "worker_us": cpu / done * 1e6,
        "backend_us": backend_cpu / done * 1e6,
        "wall_us": wall / done * 1e6,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--rules", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2, help="1 and 2 workers, alternately")
    parser.add_argument(
        "--profile-events", type=int, default=10_000, help="the in-process drain's backlog"
    )
    args = parser.parse_args(argv)
    actor = setup(args.rules)
    log = Path(os.environ.get("STALWART_VAR_DIR", "/tmp")) / "scaleout.log"
    run(actor, min(args.events, 4_000), 1, log)  # warm the database's caches
    CPU.clear()
    BACKEND_CPU.clear()
    found = profile(actor, args.profile_events)
    print(
        f"one drain in process, {found['events']:,} events in {found['batches']} batches "
        f"(STALWART_MATCH_BATCH): {found['per_batch']:.1f} SQL statements per batch "
        f"({found['per_event']:.3f} per event, BEGIN and COMMIT counted); CPU per event: matcher "
        f"{found['worker_us']:.0f} us, its PostgreSQL backend {found['backend_us']:.0f} us "
        f"({found['backend_us'] / (found['worker_us'] + found['backend_us']):.0%} of the two); "
        f"wall {found['wall_us']:.0f} us per event; load average {_load()}",
        flush=True,
    )
    # Alternately, best of each: the machine is shared, and its load moves between runs.
    ones, twos = [], []
    for _ in range(args.repeat):
        ones.append(run(actor, args.events, 1, log))
        twos.append(run(actor, args.events, 2, log))
    one, two = min(ones), min(twos)
    print(
        "CPU per event, the workers' pool processes | their PostgreSQL backends (at least), per "
        "run "
        "(1, 2, 1, 2... workers): "
        + ", ".join(
            f"{c / args.events * 1e6:.0f} | {b / args.events * 1e6:.0f} us"
            for c, b in zip(CPU, BACKEND_CPU, strict=True)
        )
    )
    print(
        f"runs: 1 worker {', '.join(f'{t:.1f}' for t in ones)} s; "
        f"2 workers {', '.join(f'{t:.1f}' for t in twos)} s"
    )
    load = _load()
    print(
        f"scale-out, {args.events:,} pending events, {args.rules} sequence rules, PostgreSQL: "
        f"1 worker {one:.1f} s ({args.events / one:,.0f} events/s), 2 workers {two:.1f} s "
        f"({args.events / two:,.0f} events/s), best of {args.repeat}: {one / two:.2f}x; "
        f"pairwise {', '.join(f'{a / b:.2f}x' for a, b in zip(ones, twos, strict=True))}; "
        f"load average {load}",
        flush=True,
    )
    return 0


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    raise SystemExit(main())
