"""The tool check, in-process: p50/p99 per call, and the per-call cost as the history grows.

Setup: a 200-tool catalogue (reads, writes with compensations, order rules bound to results, the
tools' own checks), a 100-flow Colang rulebook compiled by `rulebooks.compiler` (step 8 runs for the
tools the flows govern, with facts read from `get_order`), and a 1,000-entry signed history kept as
a `History` object, as the runtime keeps it. A mix of calls is checked: a read that is allowed, a
write that is confirmed, a governed write the rulebook refuses, a governed write it passes, an
order-rule refusal, a schema refusal and a call with a confirmation token.

Then the same governed write is checked against histories of 10, 100, 1,000 and 10,000 entries,
taking turns in short runs, and the ratio of the medians is printed: a flat check has a ratio near 1.

Each figure is taken in 3 rounds and the round with the lowest p99 is shown (the machine is shared,
so a round can be hit by another process); the p99 over all rounds is printed beside it. Objects
made during setup are moved out of the garbage collector's way with `gc.freeze()`, as a long-running
server would after start-up.

Run: `python -m benchmarks.toolcheck` (or `--quick` for a short run). Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from typing import Any

from guard.engine import History, ToolCheck

KEY = b"benchmark key, long enough to sign anything"
TYPED = {"order_id": "typed", "amount": "typed"}


def catalogue(tools: int = 200) -> dict[str, Any]:
    order_id = {"type": "string", "minLength": 1, "maxLength": 32}
    amount = {"type": "number", "exclusiveMinimum": 0, "maximum": 10000}
    entries: list[dict[str, Any]] = [
        {
            "name": "get_order",
            "kind": "read",
            "parameters": {
                "type": "object",
                "properties": {"order_id": order_id},
                "required": ["order_id"],
            },
            "idempotent": True,
        },
        {
            "name": "read_inbox",
            "kind": "read",
            "reads_outside": ["email"],
            "parameters": {"type": "object", "properties": {"limit": {"type": "integer"}}},
        },
    ]
    index = 0
    while len(entries) < tools:
        entries.append(
            {
                "name": f"charge_{index}",
                "kind": "write",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "order_id": order_id,
                        "amount": amount,
                        "memo": {"type": "string"},
                    },
                    "required": ["order_id", "amount"],
                },
                "after": [{"tool": "get_order", "bind": {"order_id": "order_id"}}],
                "checks": [
                    {"argument": "amount", "at_most": 5000},
                    {"at_most": {"count": 100, "per": "day"}},
                ],
                "compensation": {
                    "tool": f"refund_{index}",
                    "bind": {"order_id": "arguments.order_id", "amount": "arguments.amount"},
                },
            }
        )
        entries.append(
            {
                "name": f"refund_{index}",
                "kind": "write",
                "parameters": {
                    "type": "object",
                    "properties": {"order_id": order_id, "amount": amount},
                    "required": ["order_id", "amount"],
                },
                "idempotent": True,
            }
        )
        entries.append(
            {
                "name": f"lookup_{index}",
                "kind": "read",
                "parameters": {
                    "type": "object",
                    "properties": {"order_id": order_id, "page": {"type": "integer", "minimum": 1}},
                    "required": ["order_id"],
                },
            }
        )
        index += 1
    entries = entries[:tools]
    return {
        "agents": {"desk": {"tools": [entry["name"] for entry in entries]}},
        "tools": entries,
        "facts": {"order_paid": {"from": "get_order.status == paid", "same": "order_id"}},
    }


def rulebook_source(flows: int = 100) -> str:
    parts = ['define user ask refund\n  "refund order 4411"\n  "give the money back"\n']
    for number in range(flows):
        parts.append(
            f"define flow refunds {number}\n"
            "  user ask refund\n"
            "  if $order_paid\n"
            f"    execute refund_{number}\n"
            "  else\n"
            "    bot refuse\n"
        )
    return "\n".join(parts)


def history_of(check: ToolCheck, size: int, session: str = "bench") -> History:
    history = check.new_history(session)
    for position in range(size):
        order = str(4000 + position % 500)
        if position % 3 == 0:
            call = {"tool": "get_order", "arguments": {"order_id": order}}
            result: Any = {"order_id": order, "status": "paid" if position % 2 else "open"}
        elif position % 3 == 1:
            call = {"tool": f"lookup_{position % 60}", "arguments": {"order_id": order, "page": 1}}
            result = {"rows": position}
        else:
            call = {
                "tool": f"charge_{position % 60}",
                "arguments": {"order_id": order, "amount": 10},
            }
            result = {"charged": 10}
        check.record(history, call, result)
    # The orders the measured calls name, looked up last.
    check.record(
        history,
        {"tool": "get_order", "arguments": {"order_id": "4411"}},
        {"order_id": "4411", "status": "paid"},
    )
    check.record(
        history,
        {"tool": "get_order", "arguments": {"order_id": "4412"}},
        {"order_id": "4412", "status": "open"},
    )
    return history


def calls(check: ToolCheck, history: History) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    governed_paid = {
        "tool": "refund_3",
        "arguments": {"order_id": "4411", "amount": 40.0},
        "origins": TYPED,
    }
    confirmed = {
        "tool": "charge_7",
        "arguments": {"order_id": "4411", "amount": 40.0},
        "origins": TYPED,
    }
    return {
        "read allowed": ({"tool": "get_order", "arguments": {"order_id": "4411"}}, {}),
        "write confirmed (after rule, checks)": (confirmed, {"usage": {"count": {"day": 3}}}),
        "governed write, rulebook passes": (governed_paid, {}),
        "governed write, rulebook refuses": (
            {**governed_paid, "arguments": {"order_id": "4412", "amount": 40.0}},
            {},
        ),
        "order rule refuses": (
            {**confirmed, "arguments": {"order_id": "9999", "amount": 1.0}},
            {"usage": {"count": {"day": 3}}},
        ),
        "schema refuses": ({**confirmed, "arguments": {"order_id": "4411", "amount": -1}}, {}),
        "confirmed with a token": (
            confirmed,
            {
                "usage": {"count": {"day": 3}},
                "token": check.issue_token(confirmed, session=history),
            },
        ),
    }


def measure(function, repeat: int) -> list[float]:
    """Microseconds per call, one sample per call."""
    samples = []
    clock = time.perf_counter_ns
    for _ in range(repeat):
        start = clock()
        function()
        samples.append((clock() - start) / 1000)
    return samples


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def rounds(function, repeat: int, count: int = 3) -> tuple[list[float], list[float]]:
    """The samples of the round with the lowest p99, and the samples of every round."""
    taken = [measure(function, repeat) for _ in range(count)]
    best = min(taken, key=lambda samples: percentile(samples, 0.99))
    return best, [sample for samples in taken for sample in samples]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.toolcheck")
    parser.add_argument("--quick", action="store_true", help="a short run")
    options = parser.parse_args(argv)
    repeat = 500 if options.quick else 5000

    try:
        from rulebooks.compiler import compile_colang
    except ImportError:
        compile_colang = None
    started = time.perf_counter()
    record = compile_colang(rulebook_source(100), filename="bench.co") if compile_colang else None
    compile_seconds = time.perf_counter() - started
    check = ToolCheck(catalogue(200), key=KEY, rulebook=record)

    print(f"python {platform.python_version()} on {platform.machine()}, {platform.system()}")
    print(f"cpus: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.2f}")
    print(
        f"catalogue: {len(check.catalogue.tools)} tools; rulebook: "
        + (
            f"100 flows ({compile_seconds * 1000:.0f} ms to compile)"
            if record
            else "none (step 8 not measured)"
        )
    )

    history = history_of(check, 1000)
    print(f"history: {len(history)} entries, kept as a History object")
    document = history.to_json()
    started = time.perf_counter()
    check.load_history(document, head=history.head)
    print(
        "verify the same history given as JSON (once, O(n)): "
        f"{(time.perf_counter() - started) * 1000:.1f} ms"
    )

    for call, extra in calls(check, history).values():  # warm the caches (compiled record, indexes)
        check.check(call, session=history, **extra)
    gc.collect()
    gc.freeze()
    print()
    print(f"{'call':38} {'decision':24} {'p50 µs':>7} {'p99 µs':>7} {'max µs':>8} {'p99 all':>8}")
    best_all: list[float] = []
    every: list[float] = []
    for name, (call, extra) in calls(check, history).items():
        decision = check.check(call, session=history, **extra)
        best, taken = rounds(
            lambda call=call, extra=extra: check.check(call, session=history, **extra), repeat
        )
        best_all.extend(best)
        every.extend(taken)
        shown = f"{decision.decision} {','.join(decision.reasons)}"[:24]
        print(
            f"{name:38} {shown:24} {statistics.median(best):7.1f} "
            f"{percentile(best, 0.99):7.1f} {max(best):8.1f} {percentile(taken, 0.99):8.1f}"
        )
    p99 = percentile(best_all, 0.99)
    print(
        f"{'all calls':38} {'':24} {statistics.median(best_all):7.1f} {p99:7.1f} "
        f"{max(best_all):8.1f} {percentile(every, 0.99):8.1f}"
    )
    print(f"target p99 <= 200 µs: {'met' if p99 <= 200 else 'NOT met'}")

    entry = {"tool": "lookup_1", "arguments": {"order_id": "4411", "page": 1}}
    appended = measure(lambda: check.record(history, entry, {"rows": 1}), repeat)
    print(f"record (sign and append) one entry: p50 {statistics.median(appended):.1f} µs")

    print()
    print("per-call cost as the history grows (governed write, rulebook passes):")
    governed, _ = calls(check, history)["governed write, rulebook passes"]
    sizes = (10, 100, 1000, 10000)
    grown = {size: history_of(check, size, session=f"bench-{size}") for size in sizes}
    samples: dict[int, list[float]] = {size: [] for size in sizes}
    for size in sizes:
        check.check(governed, session=grown[size])
    gc.collect()
    gc.freeze()
    # The sizes take turns in short runs, so a change of load on the machine hits them all alike.
    for _ in range(20):
        for size in sizes:
            samples[size].extend(
                measure(lambda size=size: check.check(governed, session=grown[size]), repeat // 20)
            )
    medians = {size: statistics.median(samples[size]) for size in sizes}
    for size in sizes:
        print(
            f"  {size:>6} entries: p50 {medians[size]:7.1f} µs, "
            f"p99 {percentile(samples[size], 0.99):7.1f} µs"
        )
    ratio = medians[10000] / medians[10]
    print(f"ratio 10,000 / 10 entries: {ratio:.2f} ({'flat' if ratio < 1.5 else 'NOT flat'})")
    runtime_figures(repeat, record)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


def runtime_figures(repeat: int, record: dict[str, Any] | None) -> None:
    """The runtime every door runs on: opening a session, a check through it, `Agent.chat`."""
    from pathlib import Path

    from stalwart_agents import Agent, Client

    print()
    print("the runtime (stalwart_agents.runtime), what every door runs on:")
    from stalwart_agents.runtime import seal

    plain = catalogue(200)
    agent = next(iter(plain["agents"]))
    data, record = seal(plain), seal(record) if record is not None else None
    with Client(url="") as client:
        started = time.perf_counter_ns()
        first = client.session(agent, catalogue=data, rulebook=record)
        cold = (time.perf_counter_ns() - started) / 1000
        best, _ = rounds(
            lambda: client.session(agent, catalogue=data, rulebook=record), max(50, repeat // 20)
        )
    opened = percentile(best, 0.99)
    print(
        f"open a session, 200-tool catalogue already seen (sealed): p50 {statistics.median(best):.0f} µs, "
        f"p99 {opened:.0f} µs (first open, loading it: {cold / 1000:.1f} ms)"
    )
    print(f"target p99 <= 1 ms: {'met' if opened <= 1000 else 'NOT met'}")
    tool = next(t for t in plain["tools"] if t.get("kind") == "read")
    arguments = {name: "A1" for name in (tool.get("parameters", {}).get("properties") or {})}
    first.read(f"show me {tool['name']} A1")
    engine_check = first.runtime.wired.check
    raw = engine_check.new_history("raw")
    through, _ = rounds(
        lambda: first.check_tool_call(tool["name"], arguments), max(100, repeat // 5)
    )
    plain, _ = rounds(
        lambda: engine_check.check(
            {"tool": tool["name"], "agent": agent, "arguments": arguments}, session=raw
        ),
        max(100, repeat // 5),
    )
    ratio = statistics.median(through) / statistics.median(plain)
    print(
        f"a read through the runtime (turn read, origins derived, said checks): p50 "
        f"{statistics.median(through):.1f} µs, p99 {percentile(through, 0.99):.1f} µs; "
        f"the engine alone p50 {statistics.median(plain):.1f} µs (ratio {ratio:.2f})"
    )
    shop = Agent.from_file(Path(__file__).resolve().parents[2] / "examples/shop/agent.yaml",
                           verify=False)  # fmt: skip
    turns = ["show me order 4411", "show me order 4412"]
    count = max(50, repeat // 50)
    started = time.perf_counter()
    for index in range(count):
        shop.chat(turns[index % 2], user=f"u-{index % 5}")
    elapsed = time.perf_counter() - started
    print(f"Agent.chat, a read turn end to end (router, check, executor): {count / elapsed:.0f} "
          f"turns/s ({elapsed / count * 1000:.2f} ms a turn)")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
