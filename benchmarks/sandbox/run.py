"""The calculation sandbox: what starting one calculation costs, against a bare interpreter.

Three things are timed, each as many times as `--runs` says, in the same session:

- **bare**: `python -I -S -c pass` started and waited for -- the floor any process costs here;
- **calculation**: `Sandbox()(source, [orders, credits])` end to end -- the source checked, a
  private folder made, the child started with its limits, network namespace and chroot, the
  inputs sent as JSON, the function run, the answer read back, the folder removed -- for a function
  that sums two reads' results (no imports);
- **with imports**: the same with `statistics` and `decimal` imported by the function.

Wall-clock figures (`time.perf_counter`): p50, p90 and the best run, in milliseconds, and the CPU
time one run costs (this process and the child together). The target is
a calculation under 100 ms. The machine is shared, so read the calculation against the bare
interpreter measured beside it. Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

from stalwart_agents.sandbox import Sandbox

PLAIN = (
    "def net(orders, credits):\n"
    "    return sum(o['amount'] for o in orders) - sum(c['amount'] for c in credits)\n"
)
IMPORTS = (
    "import statistics\nfrom decimal import Decimal\n"
    "def net(orders, credits):\n"
    "    total = sum(Decimal(str(o['amount'])) for o in orders)\n"
    "    return float(total) - statistics.fsum(c['amount'] for c in credits)\n"
)
ORDERS = [{"order_id": str(4400 + n), "amount": 10.0 + n} for n in range(50)]
CREDITS = [{"order_id": "4401", "amount": 11.0}]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(run, runs: int) -> tuple[list[float], float]:
    """Wall-clock milliseconds of each run, and the CPU milliseconds one run costs (this process
    and its child together, averaged: what the shared machine's load does not inflate)."""
    run()  # warm the caches once
    out = []
    cpu = time.process_time() + _children_cpu()
    for _ in range(runs):
        started = time.perf_counter()
        run()
        out.append((time.perf_counter() - started) * 1000)
    cpu = time.process_time() + _children_cpu() - cpu
    return out, cpu * 1000 / runs


def _row(name: str, times: list[float], cpu: float) -> str:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return (
        f"| {name} | {statistics.median(times):.1f} ms | {p90:.1f} ms | {ordered[0]:.1f} ms "
        f"| {cpu:.1f} ms |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sandbox")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="10 runs of each")
    args = parser.parse_args(argv)
    runs = 10 if args.quick else args.runs
    sandbox = Sandbox()
    if not sandbox:
        print(sandbox.compute_off)
        return 2
    expected = sum(o["amount"] for o in ORDERS) - 11.0

    def bare() -> None:
        subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)

    def plain() -> None:
        assert sandbox(PLAIN, [ORDERS, CREDITS]) == expected

    def imports() -> None:
        assert abs(sandbox(IMPORTS, [ORDERS, CREDITS]) - expected) < 1e-9

    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()}")
    print(f"isolation: {sandbox.isolation()}")
    print(f"{runs} runs each\n")
    print("| what | p50 | p90 | best | CPU per run |\n|---|---|---|---|---|")
    for name, run in (
        ("bare interpreter", bare),
        ("calculation", plain),
        ("with imports", imports),
    ):
        print(_row(name, *_time(run, runs)))
    return 0
