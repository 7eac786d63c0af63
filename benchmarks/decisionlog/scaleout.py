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
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.sequences.run import ROOT, make_events, setup  # sets Django up
from console.celery import app  # noqa: E402
from console.models import SHARDS, Event, MatchState  # noqa: E402
from firewall.models import SequenceState  # noqa: E402


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


def _cpu(workers: list[subprocess.Popen]) -> float:
    """CPU seconds used so far by the workers' pool processes (where the matching runs)."""
    total = 0.0
    for worker in workers:
        try:
            children = Path(f"/proc/{worker.pid}/task/{worker.pid}/children").read_text().split()
            for child in children:
                fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            continue
    return total


CPU: list[float] = []


def run(actor, events: int, workers: int, log: Path, timeout: float = 900) -> float:  # noqa: ANN001
    """Seconds for `workers` processes to match a backlog of `events` events."""
    import redis

    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    Event.objects.filter(organisation=actor.organisation).delete()
    SequenceState.objects.filter(organisation=actor.organisation).delete()
    started = _workers(workers, log)
    try:
        Event.objects.bulk_create(make_events(actor, events, sessions=400), batch_size=5000)
        begin, cpu = time.perf_counter(), _cpu(started)
        for shard in range(SHARDS):
            app.send_task("firewall.match_shard", args=[shard])
        while Event.objects.filter(
            organisation=actor.organisation, match_state=MatchState.PENDING
        ).exists():
            if time.perf_counter() - begin > timeout:
                # No sweeper runs here (it would send drains of its own): a lost task, say from
                # a flush of this Redis database by someone else, leaves events pending.
                raise SystemExit(f"events still pending after {timeout:g} s (drains lost?)")
            time.sleep(0.05)
        elapsed = time.perf_counter() - begin
        CPU.append(_cpu(started) - cpu)
        return elapsed
    finally:
        for process in started:
            process.terminate()
        for process in started:
            process.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--rules", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2, help="1 and 2 workers, alternately")
    args = parser.parse_args(argv)
    actor = setup(args.rules)
    log = Path(os.environ.get("STALWART_VAR_DIR", "/tmp")) / "scaleout.log"
    run(actor, min(args.events, 4_000), 1, log)  # warm the database's caches
    # Alternately, best of each: the machine is shared, and its load moves between runs.
    ones, twos = [], []
    for _ in range(args.repeat):
        ones.append(run(actor, args.events, 1, log))
        twos.append(run(actor, args.events, 2, log))
    one, two = min(ones), min(twos)
    print(
        "the workers' CPU seconds per run (1, 2, 1, 2... workers): "
        + ", ".join(f"{c:.1f}" for c in CPU[1:])
    )
    print(
        f"runs: 1 worker {', '.join(f'{t:.1f}' for t in ones)} s; "
        f"2 workers {', '.join(f'{t:.1f}' for t in twos)} s"
    )
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"scale-out, {args.events:,} pending events, {args.rules} sequence rules, PostgreSQL: "
        f"1 worker {one:.1f} s ({args.events / one:,.0f} events/s), 2 workers {two:.1f} s "
        f"({args.events / two:,.0f} events/s), best of {args.repeat}: {one / two:.2f}x; "
        f"load average {load}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
