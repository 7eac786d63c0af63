"""Time to prove agent graphs of 10, 100 and 1,000 nodes at depth 60, and how it grows.

Each size is a workload from `workload.desks` (a front desk handing off to specialists with
order rules, undos, limits, outside content and a Colang rulebook). For each, the figures are:

- `verify`: what `stalwart verify` spends in-process -- read agent.yaml, compile the rulebook,
  build and validate the graph, prove it, hunt (files are given as text: no disk);
- `prove`: the proof alone on a validated graph -- the questions, the explicit-state search and
  the fixpoint (both engines run on every proof), with each engine's share.

Then the growth: the 100-node graph at depths 10 to 240, and over 1 to 4 turns; and sizes up to
2,000 nodes (not with `--quick`). Each figure is the best of a few rounds (the machine is shared);
nothing here is a test.

Run: `python -m benchmarks.proof` (or `--quick`).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import time
from collections.abc import Callable
from typing import Any

from proof.engine import ProofCache, build_agent_graph, load_graph, verify_agent_file
from proof.engine.fixpoint import fixpoint
from proof.engine.model import build_model
from proof.engine.questions import ask
from proof.engine.search import search

from .workload import desks

TARGET_S = 5.0


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _best(fn: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    best, value = float("inf"), None
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def measure(nodes: int, *, depth: int = 60, turns: int = 3, rounds: int = 3) -> dict[str, Any]:
    text, files, _ = desks(nodes)
    graph = load_graph(build_agent_graph(text, files=files))
    verify_s, report = _best(
        lambda: verify_agent_file(text, files=files, depth=depth, turns=turns, cache=ProofCache()),
        rounds,
    )

    def questions():
        found = ask(graph)
        return build_model(graph, found.obligations, found.cycles, depth=depth, turns=turns)

    ask_s, model = _best(questions, rounds)
    search_s, found = _best(lambda: search(model), rounds)
    fixpoint_s, fixed = _best(lambda: fixpoint(model), rounds)
    return {
        "nodes": len(graph.nodes),
        "edges": len(graph.edges),
        "questions": len(model.obligations) + len(model.cycles),
        "states": found.states,
        "agree": found.states == fixed.states and report.engines.get("agree") is not False,
        "undecided": report.answers["undecided"],
        "depth": depth,
        "turns": turns,
        "verify_s": verify_s,
        "ask_s": ask_s,
        "search_s": search_s,
        "fixpoint_s": fixpoint_s,
        "prove_s": ask_s + search_s + fixpoint_s,
    }


def _row(r: dict[str, Any]) -> str:
    return (
        f"{r['nodes']:>6} {r['edges']:>6} {r['questions']:>6} {r['states']:>8} "
        f"{r['depth']:>5} {r['turns']:>5} {r['prove_s'] * 1000:>9.0f} {r['search_s'] * 1000:>9.0f} "
        f"{r['fixpoint_s'] * 1000:>9.0f} {r['verify_s'] * 1000:>9.0f}"
    )


HEADER = " nodes  edges  quest   states depth turns  prove ms search ms fixpt ms verify ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.proof")
    parser.add_argument("--quick", action="store_true", help="one round, fewer points")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else 3
    print(f"machine: {os.cpu_count()} CPU(s), {_cpu_model()}, Python {platform.python_version()}")
    print("proof at depth 60 over 3 turns; `prove` = questions + search + fixpoint\n")
    print(HEADER)
    sizes = [10, 100, 1000] if args.quick else [10, 100, 300, 1000, 2000]
    results = [measure(n, rounds=rounds) for n in sizes]
    for r in results:
        print(_row(r))
    thousand = next(r for r in results if 800 <= r["nodes"] <= 1200)
    verdict = "meets" if thousand["prove_s"] < TARGET_S else "MISSES"
    print(
        f"\n{thousand['nodes']} nodes proved in {thousand['prove_s']:.2f} s: {verdict} the "
        f"target of {TARGET_S:.0f} s (stalwart verify end to end: {thousand['verify_s']:.2f} s)"
    )
    growth = [
        (b["nodes"] / a["nodes"], b["prove_s"] / a["prove_s"])
        for a, b in zip(results, results[1:], strict=False)
    ]
    print(
        "growth (nodes x -> prove time x): " + ", ".join(f"{n:.1f}x -> {t:.1f}x" for n, t in growth)
    )
    print("\nthe ~100-node graph by depth, then by turns:")
    print(HEADER)
    depths = [10, 60, 240] if args.quick else [10, 30, 60, 120, 240]
    for depth in depths:
        print(_row(measure(100, depth=depth, rounds=rounds)))
    for turns in [1, 2, 3, 4]:
        print(_row(measure(100, turns=turns, rounds=rounds)))
    bad = [r for r in results if not r["agree"] or r["undecided"]]
    if bad:
        print(
            "\nwarning: engines disagreed or questions were undecided on", [r["nodes"] for r in bad]
        )
    return 0
