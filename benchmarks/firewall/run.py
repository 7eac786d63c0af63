"""Decisions per second and p50/p99 latency of the firewall engines, at 10 to 10,000 rules.

Workloads (`workload.py`): `mixed`, rules that nearly all name their tool (4 global rules);
`broad1`, `broad10`, `broad50`, the same with 1%, 10% or 50% of the rules broad (glob `*` and one
argument clause: `eq` on a top-level or nested path, a regex, `in`, a CIDR), with calls that
mostly match nothing. For each workload and policy size, on one core and in one process, the
same calls go through:

- `indexed`: `CompiledPolicy.evaluate` (the engine the product runs);
- `reference`: `reference_evaluate`, the plain first-match scan (it reads the policy as stored
  on every call, as its contract says, so its cost includes reading the rules);
- `cedar`: `cedarpy.is_authorized` on an equivalent Cedar policy set (see `cedar.py`), with the
  policy set and entities parsed once.

Latency is measured per decision with `perf_counter_ns`; throughput is decisions divided by the
summed latencies. The indexed engine goes through the calls in several rounds and its p50 and
p99 are the median of the rounds' (the worst round's p99 is kept too); the slow engines run on a
time budget (at least 30 calls). Targets checked at
the end, on `mixed`: p99 <= 20 us at 1,000 rules; the 10,000-rule cost at most 3x the 100-rule
cost; at least 20x cedarpy's throughput at 1,000 rules. On `broad10`: p99 <= 10 us at 1,000 rules
and <= 25 us at 10,000; at least 100x the reference scan at 1,000 rules. Every workload: compiling
10,000 rules in under 2 s.

Usage: `python -m benchmarks.firewall [--quick] [--sizes 10,100,1000,10000]
[--workloads mixed,broad1,broad10,broad50] [--json FILE]`.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from importlib import metadata
from typing import Any

from firewall.engine import compile_policy, reference_evaluate

from .cedar import CedarEngine
from .workload import Workload, build, build_broad

#: Workload name -> share of broad rules (None: `build`'s mixed policy).
WORKLOADS: dict[str, float | None] = {
    "mixed": None,
    "broad1": 0.01,
    "broad10": 0.10,
    "broad50": 0.50,
}


def _pin_to_one_core(cpu: int | None) -> str:
    try:
        cores = sorted(os.sched_getaffinity(0))
        chosen = cpu if cpu is not None else cores[-1]
        os.sched_setaffinity(0, {chosen})
        return f"pinned to CPU {chosen}"
    except (AttributeError, OSError, ValueError):
        return "not pinned (sched_setaffinity refused)"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _load() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


def _measure(
    decide: Callable[[Any], Any], items: list[Any], *, budget: float | None, minimum: int = 30
) -> list[int]:
    """Per-decision latencies in ns, over `items` (cycled), within `budget` seconds if given."""
    latencies: list[int] = []
    clock = time.perf_counter_ns
    deadline = clock() + int(budget * 1e9) if budget is not None else None
    index = 0
    count = len(items)
    while True:
        item = items[index % count]
        started = clock()
        decide(item)
        latencies.append(clock() - started)
        index += 1
        if deadline is None:
            if index >= count:
                break
        elif index >= minimum and clock() >= deadline:
            break
    return latencies


def _summary(latencies: list[int]) -> dict[str, float]:
    ordered = sorted(latencies)
    total = sum(ordered)
    return {
        "n": len(ordered),
        "per_second": len(ordered) / (total / 1e9),
        "mean_us": total / len(ordered) / 1000,
        "p50_us": ordered[len(ordered) // 2] / 1000,
        "p99_us": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] / 1000,
    }


def _summary_rounds(rounds: list[list[int]]) -> dict[str, float]:
    """Throughput over every round; p50 and p99 as the median of the rounds' own (so that one
    round disturbed by another process on the machine does not set the figure)."""
    summary = _summary([t for times in rounds for t in times])
    per_round = [_summary(times) for times in rounds]
    summary["p50_us"] = statistics.median(s["p50_us"] for s in per_round)
    summary["p99_us"] = statistics.median(s["p99_us"] for s in per_round)
    summary["p99_worst_round_us"] = max(s["p99_us"] for s in per_round)
    return summary


def _workload(name: str, size: int, calls: int) -> Workload:
    share = WORKLOADS[name]
    return build(size, calls=calls) if share is None else build_broad(size, share, calls=calls)


def run_size(size: int, *, quick: bool, workload_name: str = "mixed") -> dict[str, Any]:
    workload = _workload(workload_name, size, 1500 if quick else 6000)
    started = time.perf_counter()
    cpu_started = time.process_time()
    compiled = compile_policy(workload.policy)
    compile_ms = (time.perf_counter() - started) * 1000
    # the CPU this process spent: on a shared machine the wall-clock time also holds the time
    # other processes had the core
    compile_cpu_ms = (time.process_time() - cpu_started) * 1000
    cedar = CedarEngine(workload.policy)
    cedar_requests = [cedar.request(call) for call in workload.calls]
    gc.collect()
    gc.freeze()  # the policy is long-lived: keep it out of the young generations' scans

    evaluate = compiled.evaluate
    _measure(evaluate, workload.calls[:500], budget=None)
    rounds = [_measure(evaluate, workload.calls, budget=None) for _ in range(3 if quick else 7)]
    by_kind: dict[str, list[int]] = {}
    by_verdict: dict[str, list[int]] = {}
    for call, kind in zip(workload.calls, workload.kinds, strict=True):
        times = _measure(evaluate, [call] * 3, budget=None)
        by_kind.setdefault(kind, []).append(min(times))
        by_verdict.setdefault(evaluate(call).verdict, []).append(min(times))

    policy = workload.policy
    reference = _measure(
        lambda call: reference_evaluate(policy, call), workload.calls, budget=0.3 if quick else 2.0
    )
    cedar_times = _measure(cedar.decide, cedar_requests, budget=0.3 if quick else 2.0)

    # the answers are the same engine's, whichever path: check a sample
    for call in workload.calls[:200]:
        assert evaluate(call).to_dict() == reference_evaluate(policy, call).to_dict()
    gc.unfreeze()
    return {
        "workload": workload_name,
        "rules": size,
        "shapes": workload.shapes,
        "clauses": workload.clauses,
        "compile_ms": compile_ms,
        "compile_cpu_ms": compile_cpu_ms,
        "indexed": _summary_rounds(rounds),
        "indexed_p50_by_kind_us": {
            kind: statistics.median(times) / 1000 for kind, times in sorted(by_kind.items())
        },
        "indexed_by_verdict": {
            verdict: {
                "share": len(times) / len(workload.calls),
                "p50_us": statistics.median(times) / 1000,
                "p99_us": sorted(times)[min(len(times) - 1, int(len(times) * 0.99))] / 1000,
            }
            for verdict, times in sorted(by_verdict.items())
        },
        "reference": _summary(reference),
        "cedar": _summary(cedar_times),
        "cedar_errors": cedar.errors,
    }


def _print_table(results: list[dict[str, Any]]) -> None:
    header = (
        f"{'workload':>8} {'rules':>6} | {'indexed/s':>10} {'p50 us':>7} {'p99 us':>7} | "
        f"{'reference/s':>11} {'p50 us':>9} {'p99 us':>9} | {'cedar/s':>8} {'p50 us':>8} "
        f"{'p99 us':>8} | {'x ref':>7} {'x cedar':>7}"
    )
    print(header)
    print("-" * len(header))
    for row in results:
        i, r, c = row["indexed"], row["reference"], row["cedar"]
        print(
            f"{row['workload']:>8} {row['rules']:>6} | {i['per_second']:>10,.0f} {i['p50_us']:>7.1f} {i['p99_us']:>7.1f} | "
            f"{r['per_second']:>11,.0f} {r['p50_us']:>9.1f} {r['p99_us']:>9.1f} | "
            f"{c['per_second']:>8,.0f} {c['p50_us']:>8.1f} {c['p99_us']:>8.1f} | "
            f"{i['per_second'] / r['per_second']:>7.1f} {i['per_second'] / c['per_second']:>7.1f}"
        )
    print()
    for row in results:
        kinds = ", ".join(f"{k} {v:.1f} us" for k, v in row["indexed_p50_by_kind_us"].items())
        verdicts = ", ".join(
            f"{verdict} {v['share']:.1%} p50 {v['p50_us']:.1f} p99 {v['p99_us']:.1f}"
            for verdict, v in row["indexed_by_verdict"].items()
        )
        print(
            f"{row['workload']:>8} {row['rules']:>6} rules: compile {row['compile_ms']:.0f} ms "
            f"({row['compile_cpu_ms']:.0f} ms of CPU), "
            f"cedar errors "
            f"{row['cedar_errors']}\n         indexed p50 by call kind: {kinds}\n"
            f"         indexed by verdict (best of 3 per call, us): {verdicts}"
        )


def _targets(results: list[dict[str, Any]]) -> list[tuple[str, bool, str]]:
    by_size = {row["rules"]: row for row in results if row["workload"] == "mixed"}
    broad = {row["rules"]: row for row in results if row["workload"] == "broad10"}
    checks: list[tuple[str, bool, str]] = []
    for row in results:
        if row["rules"] == 10000:
            compile_s = row["compile_ms"] / 1000
            checks.append(
                (
                    f"{row['workload']}: compile 10,000 rules < 2 s",
                    compile_s < 2,
                    f"{compile_s:.2f} s ({row['compile_cpu_ms'] / 1000:.2f} s of CPU)",
                )
            )
    if 1000 in broad:
        p99 = broad[1000]["indexed"]["p99_us"]
        checks.append(("broad10: p99 <= 10 us at 1,000 rules", p99 <= 10, f"{p99:.1f} us"))
        ratio = broad[1000]["indexed"]["per_second"] / broad[1000]["reference"]["per_second"]
        checks.append(
            ("broad10: >= 100x the reference scan at 1,000 rules", ratio >= 100, f"{ratio:.0f}x")
        )
    if 10000 in broad:
        p99 = broad[10000]["indexed"]["p99_us"]
        checks.append(("broad10: p99 <= 25 us at 10,000 rules", p99 <= 25, f"{p99:.1f} us"))
    if 1000 in by_size:
        p99 = by_size[1000]["indexed"]["p99_us"]
        checks.append(("p99 <= 20 us at 1,000 rules", p99 <= 20, f"{p99:.1f} us"))
        ratio = by_size[1000]["indexed"]["per_second"] / by_size[1000]["cedar"]["per_second"]
        checks.append((">= 20x cedarpy throughput at 1,000 rules", ratio >= 20, f"{ratio:.1f}x"))
    if 100 in by_size and 10000 in by_size:
        ratio = by_size[10000]["indexed"]["mean_us"] / by_size[100]["indexed"]["mean_us"]
        checks.append(("10,000-rule cost <= 3x the 100-rule cost", ratio <= 3, f"{ratio:.2f}x"))
    return checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.firewall", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a few-second smoke run")
    parser.add_argument("--sizes", help="comma-separated rule counts (default 10,100,1000,10000)")
    parser.add_argument(
        "--workloads",
        help=f"comma-separated workloads (default all: {','.join(WORKLOADS)})",
    )
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--cpu", type=int, help="the CPU to pin to (default: the last one)")
    parser.add_argument(
        "--no-pin",
        action="store_true",
        help="do not pin the process to one CPU (it stays single-threaded)",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [10, 100, 1000, 10000]
    if args.quick and not args.sizes:
        sizes = [10, 100, 1000]
    names = args.workloads.split(",") if args.workloads else list(WORKLOADS)
    unknown = [name for name in names if name not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload `{unknown[0]}` (known: {', '.join(WORKLOADS)})")
    pinning = "not pinned, single thread" if args.no_pin else _pin_to_one_core(args.cpu)
    print(
        f"firewall benchmark - {_cpu_model()}, {os.cpu_count()} CPUs ({pinning}), "
        f"Python {platform.python_version()}, google-re2 {_version('google-re2')}, "
        f"cedarpy {_version('cedarpy')}{' - quick' if args.quick else ''}"
    )
    print(f"load average before: {_load()}")
    results = [
        run_size(size, quick=args.quick, workload_name=name) for name in names for size in sizes
    ]
    print(f"load average after: {_load()}")
    print()
    _print_table(results)
    checks = _targets(results)
    if checks:
        print()
        for name, ok, value in checks:
            print(f"  [{'met' if ok else 'MISSED'}] {name}: {value}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"results": results, "targets": checks}, handle, indent=2)
    sys.stdout.flush()
    return 0
