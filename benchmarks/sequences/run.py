"""Sequence matching, measured: events matched per second by one worker process with 100
sequence rules, beside a baseline that re-scans each session's history at every event (the
quadratic way), and the delay from an event's write to its alert at a sustained write rate.

    python -m benchmarks.sequences [--quick] [--events N] [--rate R] [--seconds S]

It runs on its own database: a SQLite file under var/bench/ unless DATABASE_URL is set, and the
Redis at REDIS_URL (default redis://127.0.0.1:6379/8) for the delay part, with a real worker.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("STALWART_VAR_DIR", str(ROOT / "var" / "bench"))
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/8")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings.dev")
sys.path.insert(0, str(ROOT))

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, connections  # noqa: E402
from django.utils import timezone  # noqa: E402

from console import services as console_services  # noqa: E402
from console.access import Actor  # noqa: E402
from console.models import SHARDS, Event, MatchState  # noqa: E402
from firewall import engine, matching  # noqa: E402
from firewall import services as firewall_services  # noqa: E402
from firewall.models import SequenceAlert  # noqa: E402

VERBS = ["read", "list", "export", "post", "send", "delete", "update", "fetch", "search", "sync"]
SYSTEMS = [f"sys{i}" for i in range(20)]


def rules_spec(count: int) -> list[dict]:
    """`count` sequence rules over 20 systems and 10 verbs, of 2 to 4 steps each."""
    rules = []
    for i in range(count):
        system = SYSTEMS[i % len(SYSTEMS)]
        steps = [
            {"tool_glob": f"{system}.{VERBS[i % 3]}", "min_count": 1 + i % 5},
            {"tool_glob": f"*.{VERBS[3 + i % 4]}"},
        ]
        if i % 2:
            steps.append({"tool_glob": "*", "egress": True})
        rules.append(
            {
                "name": f"chain {i}",
                "priority": 1000 + i,
                "verdict": "audit",
                "sequence": {"steps": steps, "window_seconds": 600},
            }
        )
    return rules


def setup(rules: int) -> Actor:
    call_command("migrate", verbosity=0)
    slug = f"bench-{time.time_ns()}"
    organisation = console_services.organisation_create(name="Bench", slug=slug)
    actor = Actor(organisation=organisation, role="admin", label="bench")
    policy = firewall_services.policy_create(actor=actor, name="bench")
    for spec in rules_spec(rules):
        firewall_services.rule_create(actor=actor, policy=policy, data=spec)
    firewall_services.policy_publish(actor=actor, policy=policy)
    return actor


def make_events(actor: Actor, count: int, sessions: int) -> list[Event]:
    """Events over `sessions` sessions: tools drawn from the rules' vocabulary, some egress."""
    now = timezone.now()
    rng = random.Random(count * 31 + sessions)
    events = []
    for _ in range(count):
        session = f"s{rng.randrange(sessions)}"
        tool = f"{rng.choice(SYSTEMS)}.{rng.choice(VERBS)}"
        egress = rng.random() < 0.1
        events.append(
            event_of(
                actor,
                session,
                tool,
                "egress" if egress else "tool_call",
                {"call": {"destination": "https://example.org"}} if egress else {},
                now,
            )
        )
    return events


def event_of(actor: Actor, session: str, tool: str, stage: str, detail: dict, at) -> Event:  # noqa: ANN001
    """One event of the benchmark's agent, in its session's shard."""
    return Event(
        organisation=actor.organisation,
        source="bench",
        decision="allow",
        session=session,
        agent="agent",
        tool=tool,
        stage=stage,
        detail=detail,
        at=at,
        shard=matching.shard_of(actor.organisation.pk, "agent", session),
    )


def throughput(actor: Actor, count: int, sessions: int) -> tuple[float, float]:
    """Events matched per second of wall time, and per second of this process's CPU time.

    On SQLite the database works inside this process, so the CPU figure counts it too, and it
    moves much less than the wall clock when other work shares the machine.
    """
    Event.objects.filter(organisation=actor.organisation).delete()
    Event.objects.bulk_create(make_events(actor, count, sessions), batch_size=2000)
    start, cpu = time.perf_counter(), time.process_time()
    done = 0
    for shard in range(SHARDS):
        while taken := matching.drain_shard(shard):
            done += taken
    elapsed, used = time.perf_counter() - start, time.process_time() - cpu
    assert done == count, (done, count)
    return count / elapsed, count / used


def baseline(actor: Actor, count: int, sessions: int) -> float:
    """Re-match each session's whole history at every event: the cost grows with the history."""
    rules = matching.sequence_rules(actor.organisation.pk)
    history: dict[str, list[dict]] = {}
    start = time.perf_counter()
    for i, event in enumerate(make_events(actor, count, sessions)):
        item = {
            "id": i,
            "tool": event.tool,
            "ts": 0.0,
            "stage": event.stage,
            "destination": (event.detail.get("call") or {}).get("destination"),
        }
        seen = history.setdefault(event.session, [])
        seen.append(item)
        is_egress = event.stage == "egress"
        for rule in rules:
            if rule.touches(event.tool, is_egress):
                engine.match_events(seen, rule.id, rule.steps, rule.window_seconds)
    return count / (time.perf_counter() - start)


def _write(actor: Actor, rate: int, seconds: float, answer) -> None:  # noqa: ANN001
    """Write `rate` events per second for `seconds`, in batches every 50 ms; report the rate."""
    connections.close_all()
    tick, batch = 0.05, max(1, round(rate * 0.05))
    sessions = 400
    template = make_events(actor, batch * 50, sessions)
    started = time.perf_counter()
    written = 0
    while time.perf_counter() - started < seconds:
        pause = started + written / rate - time.perf_counter()
        if pause > 0:
            time.sleep(min(pause, tick))
            continue
        chunk = []
        for j in range(batch):
            proto = template[(written + j) % len(template)]
            session = f"d{(written + j) % sessions}"
            chunk.append(
                event_of(actor, session, proto.tool, proto.stage, proto.detail, timezone.now())
            )
        Event.objects.bulk_create(chunk)
        for shard in {e.shard for e in chunk}:
            console_services.kick_matcher(shard)
        written += batch
    answer.put(written / (time.perf_counter() - started))
    connections.close_all()


def delay(actor: Actor, rate: int, seconds: float) -> dict:
    """Write `rate` events per second for `seconds` with a real worker; alert delays in ms."""
    import redis

    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    Event.objects.filter(organisation=actor.organisation).delete()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": os.environ["DJANGO_SETTINGS_MODULE"]}
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "console",
            "worker",
            "--concurrency=1",
            "--without-mingle",
            "--without-gossip",
            "--loglevel=WARNING",
            "--beat",
            "--schedule",
            str(Path(os.environ["STALWART_VAR_DIR"]) / "bench-beat"),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(3)
        # The writer is a process of its own, as an application writing events would be: in
        # this process it would share one interpreter with the harness's waiting.
        from multiprocessing import get_context

        connections.close_all()
        context = get_context("fork")
        answer = context.Queue()
        writer = context.Process(target=_write, args=(actor, rate, seconds, answer))
        writer.start()
        achieved = answer.get(timeout=seconds + 120)
        writer.join(timeout=30)
        deadline = time.perf_counter() + 60
        while Event.objects.filter(
            match_state=MatchState.PENDING, organisation=actor.organisation
        ).exists():
            if time.perf_counter() > deadline:
                break
            time.sleep(0.1)
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    delays = []
    for alert in SequenceAlert.objects.filter(organisation=actor.organisation):
        last = Event.objects.filter(pk=alert.last_event_id).values_list("at", flat=True).first()
        if last:
            delays.append((alert.created_at - last).total_seconds() * 1000)
    delays.sort()
    if not delays:
        return {"rate": achieved, "alerts": 0}
    return {
        "rate": achieved,
        "alerts": len(delays),
        "p50_ms": statistics.median(delays),
        "p99_ms": delays[min(len(delays) - 1, int(len(delays) * 0.99))],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few-second smoke run")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rate", type=int, default=1_000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rules", type=int, default=100)
    args = parser.parse_args(argv)
    if args.quick:
        args.events, args.seconds = 2_000, 3.0
    actor = setup(args.rules)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()},"
        f" database {connection.vendor}"
    )
    throughput(actor, min(args.events, 2_000), sessions=200)  # warm the caches
    runs = [throughput(actor, args.events, sessions=200) for _ in range(3)]
    rate = max(wall for wall, _ in runs)
    cpu_rate = max(cpu for _, cpu in runs)
    base = baseline(actor, min(args.events, 2_000), sessions=20)
    print(
        f"throughput, {args.rules} sequence rules, one process: {rate:,.0f} events/s "
        f"(best of 3 by the wall clock; {cpu_rate:,.0f} events per CPU-second; "
        f"{args.events:,} events, 200 sessions)"
    )
    print(
        f"baseline, re-scan the session history at each event: {base:,.0f} events/s "
        f"(2,000 events, 20 sessions): streaming is {rate / base:,.1f}x"
    )
    result = delay(actor, args.rate, args.seconds)
    if result.get("alerts"):
        print(
            f"delay at {result['rate']:,.0f} events/s for {args.seconds:g} s, one worker: "
            f"p50 {result['p50_ms']:,.0f} ms, p99 {result['p99_ms']:,.0f} ms "
            f"over {result['alerts']:,} alerts"
        )
    else:
        print(f"delay: no alert was raised at {result['rate']:,.0f} events/s")
        return 1
    return 0
