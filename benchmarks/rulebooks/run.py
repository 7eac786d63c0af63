"""Compile time of 5,000-line rulebooks and the latency of the gate against 100 flows.

- Compile: a Colang 1.0 and a Colang 2.x rulebook of about 5,000 lines and a 5,000-row rule
  sheet (`workload.py`), each compiled several times; the best and the median are printed.
  Target: under 1 s for 5,000 lines.
- Gate: a Colang 1.0 record of 100 flows (each looks an order up, refuses unpaid or cancelled
  orders, checks a subflow guard, sends large refunds to a manager, confirms), and a rule sheet
  of 100 tools with five rows each; one call is decided many times per scenario, each timed with
  `perf_counter_ns`, after a first call that compiles the record (timed on its own). Target:
  p99 under 10 us; the stress scenario (the gate reads back through 50 results of the same
  tool in the session) is printed for information and not held to the target.

Usage: `python -m benchmarks.rulebooks [--quick] [--json FILE]`.
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
from typing import Any

from rulebooks.compiler import compile_colang, compile_rule_sheet, gate

from .workload import colang_v1, colang_v1_flows, colang_v2, rule_sheet

COMPILE_TARGET_S = 1.0
GATE_P99_TARGET_US = 10.0


def _pin_to_one_core() -> str:
    try:
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[0]})
        return f"pinned to CPU {cores[0]}"
    except (AttributeError, OSError):
        return "not pinned (no sched_setaffinity)"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _time(fn: Callable[[], Any], rounds: int) -> tuple[float, float]:
    runs = []
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return min(runs), statistics.median(runs)


def bench_compile(lines: int, rounds: int) -> list[dict[str, Any]]:
    out = []
    v1, v1_flows = colang_v1(lines)
    v2, v2_flows = colang_v2(lines)
    sheet, tools = rule_sheet(lines)
    cases = [
        ("Colang 1.0", v1, v1_flows, lambda: compile_colang(v1)),
        ("Colang 2.x", v2, v2_flows, lambda: compile_colang(v2)),
        (
            "rule sheet (CSV)",
            sheet.decode(),
            tools,
            lambda: compile_rule_sheet(sheet, filename="r.csv"),
        ),
    ]
    for name, text, units, fn in cases:
        best, median = _time(fn, rounds)
        count = text.count("\n")
        out.append(
            {
                "source": name,
                "lines": count,
                "units": units,
                "best_s": best,
                "median_s": median,
                "lines_per_s": count / best,
            }
        )
    return out


def _percentile(sorted_ns: list[int], q: float) -> float:
    index = min(len(sorted_ns) - 1, int(q * len(sorted_ns)))
    return sorted_ns[index] / 1000


def _latency(decide: Callable[[], Any], calls: int) -> dict[str, float]:
    for _ in range(min(calls, 2000)):
        decide()
    clock = time.perf_counter_ns
    samples = []
    gc.disable()
    try:
        for _ in range(calls):
            start = clock()
            decide()
            samples.append(clock() - start)
    finally:
        gc.enable()
    samples.sort()
    return {
        "p50_us": _percentile(samples, 0.50),
        "p99_us": _percentile(samples, 0.99),
        "p999_us": _percentile(samples, 0.999),
        "max_us": samples[-1] / 1000,
        "mean_us": sum(samples) / len(samples) / 1000,
    }


def bench_gate(calls: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    flows = 100
    record = compile_colang(colang_v1_flows(flows))
    assert len([f for f in record["flows"] if f["kind"] == "flow"]) == flows
    sheet_bytes, _tools = rule_sheet(500)
    sheet = compile_rule_sheet(sheet_bytes, filename="r.csv")
    order = {"order_id": "4411", "amount": 40.0}
    looked_up = [
        {"tool": "get_order_50", "arguments": {"order_id": "4411"}, "result": {"status": "paid"}}
    ]
    # The order looked up first, then 49 other lookups: the gate reads back through all of them.
    results = looked_up + [
        {"tool": "get_order_50", "arguments": {"order_id": str(i)}, "result": {"status": "paid"}}
        for i in range(49)
    ]
    usage = {"count": {"day": 1}, "spend": {"day": 120.0}}
    start = time.perf_counter()
    gate(
        record,
        tool="refund_card_50",
        arguments=order,
        facts={"order_paid": True},
        results=looked_up,
    )
    first_colang = time.perf_counter() - start
    start = time.perf_counter()
    gate(sheet, tool="refund_card_50", arguments=order, facts={}, usage=usage)
    first_sheet = time.perf_counter() - start
    facts_pass = {"order_paid": True}
    facts_refuse = {"order_paid": False}
    scenarios: list[tuple[str, Callable[[], Any], str]] = [
        (
            "Colang, conditions hold (pass)",
            lambda: gate(
                record, tool="refund_card_50", arguments=order, facts=facts_pass, results=looked_up
            ),
            "pass",
        ),
        (
            "Colang, unpaid order (refuse)",
            lambda: gate(record, tool="refund_card_50", arguments=order, facts=facts_refuse),
            "refuse",
        ),
        (
            "Colang, 50 results in the session (stress)",
            lambda: gate(
                record,
                tool="refund_card_50",
                arguments=order,
                facts=facts_pass,
                results=results,
            ),
            "pass",
        ),
        (
            "Colang, a tool no flow governs (None)",
            lambda: gate(record, tool="send_receipt", arguments=order, facts=facts_pass),
            "none",
        ),
        (
            "rule sheet, 5 rows with limits (pass)",
            lambda: gate(
                sheet,
                tool="refund_card_50",
                arguments=order,
                facts=facts_pass,
                usage=usage,
            ),
            "pass",
        ),
    ]
    out = []
    for name, decide, want in scenarios:
        answer = decide()
        got = "none" if answer is None else answer.decision
        assert got == want, (name, answer)
        out.append({"scenario": name, "decision": got, **_latency(decide, calls)})
    compile_info = {
        "flows": flows,
        "routes": sum(len(t["routes"]) for t in record["tools"].values()),
        "first_call_colang_ms": first_colang * 1000,
        "first_call_sheet_ms": first_sheet * 1000,
    }
    return compile_info, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rulebooks")
    parser.add_argument("--quick", action="store_true", help="fewer rounds and calls")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    pinned = _pin_to_one_core()
    rounds, calls = (3, 20_000) if args.quick else (10, 200_000)
    print(f"machine: {_cpu_model()}, {os.cpu_count()} CPUs, {pinned}")
    print(f"python {platform.python_version()} ({sys.implementation.name})")
    print()
    compiled = bench_compile(5000, rounds)
    print(f"compile ({rounds} rounds; target under {COMPILE_TARGET_S:.0f} s for 5,000 lines)")
    print(f"  {'source':<18} {'lines':>6} {'best':>9} {'median':>9} {'lines/s':>10}")
    for row in compiled:
        print(
            f"  {row['source']:<18} {row['lines']:>6} {row['best_s'] * 1000:>7.0f}ms"
            f" {row['median_s'] * 1000:>7.0f}ms {row['lines_per_s']:>10,.0f}"
        )
    print()
    info, latencies = bench_gate(calls)
    print(
        f"gate (record of {info['flows']} flows, {info['routes']} routes; {calls:,} calls per "
        f"scenario; target p99 under {GATE_P99_TARGET_US:.0f} us)"
    )
    print(
        f"  first call, compiling the record: Colang {info['first_call_colang_ms']:.1f} ms, "
        f"rule sheet {info['first_call_sheet_ms']:.1f} ms"
    )
    print(f"  {'scenario':<44} {'p50':>7} {'p99':>7} {'p99.9':>7} {'max':>8}")
    for row in latencies:
        print(
            f"  {row['scenario']:<44} {row['p50_us']:>5.2f}us {row['p99_us']:>5.2f}us"
            f" {row['p999_us']:>5.2f}us {row['max_us']:>6.1f}us"
        )
    compile_ok = all(row["best_s"] < COMPILE_TARGET_S for row in compiled)
    gate_ok = all(
        row["p99_us"] < GATE_P99_TARGET_US for row in latencies if "stress" not in row["scenario"]
    )
    print()
    print(
        f"targets: compile {'met' if compile_ok else 'MISSED'}, gate p99 {'met' if gate_ok else 'MISSED'}"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(
                {"compile": compiled, "gate": {**info, "scenarios": latencies}}, handle, indent=2
            )
    return 0 if compile_ok and gate_ok else 1
