"""Checks decided in the agent's process: a session connected to a console (`decide="local"`)
against a `LocalSession`, in the same run, p50 and p99 per check.

Setup: the console as `benchmarks.http` runs it (its own PostgreSQL database and Redis database,
production settings, gunicorn on a port the OS gave, 2 workers; in a session of its own, so a
scheduling group of its own, as a server elsewhere, as `benchmarks.decisionlog` runs it), seeded
with the shop's 30-tool billing catalogue and rulebook. This process opens one connected session
(which fetches the signed bundle, verifies it, and keeps following it with a long-poll thread) and
one local session over the same content, and checks the same calls in both, one session after the
other for each call so that both meet the same load:

- `refund_card` that the rulebook refuses (`order_paid` false), with typed origins;
- `lookup_7` of the order the person named, a read the tool check allows.

The target: the connected session's p99 within 2x of the local session's. Run:
`python -m benchmarks.runtime [--quick] [--rate N]`; `make bench-runtime` (`BENCH_ARGS=...`).
The checks go back to back unless `--rate` paces them (N a second for each session, sleeping
between calls as an agent waits for its model).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.http.run import _free_port, _wait_ready, fresh_console, seed_with, serve

DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/stalwart_bench_runtime"
DEFAULT_REDIS = "redis://127.0.0.1:6379/14"
CALLS = {
    "refund (refused by the rulebook)": (
        "refund_card",
        {"order_id": "4411", "amount": 40.0},
        {"order_id": "typed", "amount": "typed"},
        {"order_paid": False},
    ),
    "read (allowed)": ("lookup_7", {"id": "4411", "limit": 5}, {"id": "typed"}, None),
}


def _figures(samples: list[int]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered) / 1000,
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] / 1000,
        "n": len(ordered),
    }


def measure(
    url: str, key: str, public: str, checks: int, env: dict[str, str], rate: float = 0.0
) -> dict[str, dict[str, dict]]:
    """p50/p99 in microseconds per call and per session kind (`local`, `connected`), and how
    long a tool switched off on the console took to reach the connected session. `rate`: the
    checks of each session per second (0: one after another, as fast as they go)."""
    from benchmarks.http.seed import catalogue
    from stalwart_agents import Client, runtime

    data, record = catalogue()
    sealed, sealed_record = runtime.seal(data), runtime.seal(record)
    local = Client(url="").session("billing", catalogue=sealed, rulebook=sealed_record)
    with Client(url=url, api_key=key, decide="local", bundle_key=public) as client:
        connected = client.session("billing", catalogue=sealed, rulebook=sealed_record)
        sessions = {"local": local, "connected": connected}
        for session in sessions.values():
            session.read("estorne 40 do pedido 4411")
        results: dict[str, dict[str, dict]] = {}
        for name, (tool, arguments, origins, context) in CALLS.items():
            samples: dict[str, list[int]] = {kind: [] for kind in sessions}
            answers: dict[str, set] = {kind: set() for kind in sessions}
            gap = 1 / rate if rate else 0.0
            due = time.perf_counter()
            for i in range(checks + checks // 10):
                if gap:  # paced: the agent does other work (waits for its model) between calls
                    due += gap
                    pause = due - time.perf_counter()
                    if pause > 0:
                        time.sleep(pause)
                for kind, session in sessions.items():
                    began = time.perf_counter_ns()
                    check = session.check_tool_call(
                        tool, arguments, origins=origins, context=context
                    )
                    took = time.perf_counter_ns() - began
                    if i >= checks // 10:  # the first tenth warms up
                        samples[kind].append(took)
                    answers[kind].add((check.decision, tuple(check.reasons)))
            if answers["local"] != answers["connected"]:
                raise SystemExit(f"{name}: the sessions disagree: {answers}")
            results[name] = {
                **{kind: _figures(values) for kind, values in samples.items()},
                "answer": sorted(answers["local"]),
            }
        tool, arguments, origins, _ = CALLS["read (allowed)"]
        seen: list[float] = []

        def watch() -> None:  # checks as the agent would, until the switch refuses the call
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                check = connected.check_tool_call(tool, arguments, origins=origins)
                if check.reasons == ["tool_disabled"]:
                    seen.append(time.time())
                    return
                time.sleep(0.001)

        watcher = threading.Thread(target=watch)
        watcher.start()
        committed = seed_with(env, "benchmarks.runtime.seed", "switch", "billing", "lookup_7")
        watcher.join()
        if not seen:
            raise SystemExit("the switch did not reach the runtime within 60 s")
        results["switch"] = {"seconds": seen[0] - committed["committed_at"]}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE),
    )
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS))
    parser.add_argument("--checks", type=int, default=20_000, help="checks per call and session")
    parser.add_argument("--quick", action="store_true", help="2,000 checks per figure")
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="checks per second of each session (default 0: back to back, as fast as they go)",
    )
    args = parser.parse_args(argv)
    if args.rate < 0:
        parser.error("--rate: 0 or more")
    checks = 2_000 if args.quick else args.checks

    var = tempfile.mkdtemp(prefix="stalwart-bench-runtime-")
    env = fresh_console(args.database_url, args.redis_url, var)
    seeded = seed_with(env, "benchmarks.runtime.seed")
    port = _free_port()
    log = Path(var) / "gunicorn.log"
    server = serve(env, port, 2, log, own_session=True)
    try:
        _wait_ready(port, server)
        before = os.getloadavg()
        results = measure(
            f"http://127.0.0.1:{port}", seeded["key"], seeded["public_key"], checks, env, args.rate
        )
        after = os.getloadavg()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, "
        f"load average {'/'.join(f'{x:.1f}' for x in before)} before, "
        f"{'/'.join(f'{x:.1f}' for x in after)} after, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {checks:,} checks per figure, "
        f"{f'{args.rate:,.0f} per second per session' if args.rate else 'back to back'}"
    )
    print()
    print(
        "| call | answer | local p50 µs | local p99 µs | connected p50 µs | connected p99 µs "
        "| p99 × local |"
    )
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    switch = results.pop("switch")
    for name, figures in results.items():
        local, connected = figures["local"], figures["connected"]
        ratio = connected["p99"] / local["p99"]
        worst = max(worst, ratio)
        answer = "; ".join(f"{d} {', '.join(r)}" for d, r in figures["answer"])
        print(
            f"| {name} | {answer} | {local['p50']:.1f} | {local['p99']:.1f} | {connected['p50']:.1f} | "
            f"{connected['p99']:.1f} | {ratio:.2f} |"
        )
    print()
    print(f"target p99 within 2x of the local session's: {'met' if worst <= 2 else 'missed'}")
    print(
        f"a tool switched off on the console refused by the connected session "
        f"{switch['seconds'] * 1000:.0f} ms after it committed (target 2 s)"
    )
    return 0
