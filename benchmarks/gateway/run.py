"""Latency the gateway adds to a `tools/call`, against the same call made directly, and calls/s.

For each transport (stdio, streamable HTTP) the same MCP client calls the same read tool of the
same upstream server directly and through `stalwart gateway` (a process of its own: in-process tool
check, approved pins), the two taken call by call in turn so both meet the same load: the added
latency is the difference of the percentiles. A read is measured, so nobody is asked; the gateway
still runs the whole path (tool check, executor, recording in the signed history). Calls/s is
sequential (one call at a time) and with `--concurrency` calls in flight on one connection.

A third row, "in process", is what the gateway's own code adds without its MCP hop: a `Gateway`
in this process calls the stdio upstream through `gateway.call_tool` (check, executor, record)
and, in turn, through the upstream's own client; the difference is the check's cost at the door.

Beside the wall-clock figures (which a loaded machine inflates), the CPU each process spends per
call (user + system, from /proc): the gateway process's, with one call in flight and with
`--concurrency`, and each side's upstream's (each side has an upstream of its own, the same
server started the same way). The in-process row's CPU (this process's) splits the gateway's:
its own path (check, firewall, executor, record), the MCP client call to the upstream, and the
rest, the MCP server side (reading, validating, dispatching and serialising the client's request).
The SDK's floor is what one bare SDK client (this process's CPU per direct call) and one bare SDK
server (the direct upstream's) cost: the gateway is one of each plus its own path, so its CPU
cannot fall below that floor while both its hops are the SDK's.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import mcp
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait(port: int, process: subprocess.Popen, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"a server exited: {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"nothing listened on {port} within {seconds:g} s")


def _cpu(pid: int | None) -> float:
    """CPU seconds (user + system) a process has used so far, from /proc (NaN elsewhere): the
    cost per call that does not depend on the machine's load, unlike wall-clock latency."""
    if pid is None:
        return float("nan")
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> set[int]:
    """The processes whose parent is `pid` (the servers a stdio client started)."""
    found = set()
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii") as stat:
                if int(stat.read().rpartition(")")[2].split()[1]) == pid:
                    found.add(int(name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _only(pids: set[int]) -> int | None:
    return next(iter(pids)) if len(pids) == 1 else None


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def _measure(  # noqa: ANN001
    direct, through, calls: int, concurrency: int, pids: dict[str, int | None] | None = None
) -> tuple[dict, dict]:
    """The same read, direct and through the gateway, call by call in turn (both meet the same
    load), then each side's rate with `concurrency` calls in flight on one connection.

    With the processes' ids (`pids`: the gateway, the upstream; over stdio they are found as
    the servers the clients started) each side's row also holds CPU microseconds per call: the
    gateway's with one call in flight and with `concurrency`, and the upstream's."""
    pids = dict(pids or {})
    before = _children(os.getpid())
    async with mcp.Client(direct) as plain:
        if "direct" not in pids:  # stdio: the server this client started
            pids["direct"] = _only(_children(os.getpid()) - before)
        started = _children(os.getpid())
        async with mcp.Client(through) as gated:
            if "gateway" not in pids:
                pids["gateway"] = _only(_children(os.getpid()) - started)
            if "upstream" not in pids:  # the server the gateway started
                gateway = pids["gateway"]
                pids["upstream"] = _only(_children(gateway)) if gateway else None
            return await _sides(plain, gated, calls, concurrency, pids)


async def _sides(plain, gated, calls: int, concurrency: int, pids: dict) -> tuple[dict, dict]:  # noqa: ANN001
    sides = ((plain, "get_order"), (gated, "bench.get_order"))
    # Each side has an upstream of its own (the same server, started the same way).
    upstreams = (pids.get("direct"), pids.get("upstream"))
    for client, _ in sides:
        await client.list_tools()
    for _ in range(min(50, calls)):
        for client, name in sides:
            await client.call_tool(name, {"order_id": "A1"})
    times: tuple[list[float], list[float]] = ([], [])
    client_cpu = [0.0, 0.0]  # this process's CPU seconds: the SDK's client, each side
    gateway_cpu = _cpu(pids.get("gateway"))
    upstream_cpu = [_cpu(pid) for pid in upstreams]
    for index in range(calls):
        for number, ((client, name), kept) in enumerate(zip(sides, times, strict=True)):
            used, began = time.process_time(), time.perf_counter()
            result = await client.call_tool(name, {"order_id": f"A{index}"})
            kept.append((time.perf_counter() - began) * 1000)
            client_cpu[number] += time.process_time() - used
            if result.is_error:
                raise SystemExit(f"{name} failed: {result.content}")
    gateway_cpu = (_cpu(pids.get("gateway")) - gateway_cpu) / calls * 1e6
    upstream_cpu = [
        (_cpu(pid) - used) / calls * 1e6 for pid, used in zip(upstreams, upstream_cpu, strict=True)
    ]
    rows = []
    for (client, name), kept, upstream, own in zip(
        sides, times, upstream_cpu, client_cpu, strict=True
    ):

        async def worker(count: int, client=client, name=name) -> None:  # noqa: ANN001
            for index in range(count):
                await client.call_tool(name, {"order_id": f"B{index}"})

        count = calls // concurrency * concurrency
        cpu = _cpu(pids.get("gateway"))
        began = time.perf_counter()
        async with anyio.create_task_group() as group:
            for _ in range(concurrency):
                group.start_soon(worker, calls // concurrency)
        parallel = count / (time.perf_counter() - began)
        rows.append(
            {
                "p50": statistics.median(kept),
                "p99": _pct(kept, 99),
                "rate": 1000 / statistics.mean(kept),
                "parallel": parallel,
                # CPU microseconds per call: the upstream's and, on the gateway's side, the
                # gateway process's, one call in flight and `concurrency`
                "upstream_cpu": upstream,
                # the calling client's (the SDK's `Client`, in this process)
                "client_cpu": own / calls * 1e6,
                "gateway_cpu": gateway_cpu,
                "gateway_cpu_parallel": (_cpu(pids.get("gateway")) - cpu) / count * 1e6,
            }
        )
    return rows[0], rows[1]


async def _in_process(config: Path, calls: int) -> tuple[dict, dict]:
    from stalwart_agents.gateway import Gateway, load_config

    async with Gateway(load_config(config)) as gateway:
        upstream = gateway.upstreams["bench"]
        sides = (
            lambda i: upstream.call_tool("get_order", {"order_id": f"A{i}"}),
            lambda i: gateway.call_tool("bench.get_order", {"order_id": f"A{i}"}),
        )
        for index in range(min(50, calls)):
            for side in sides:
                await side(index)
        times: tuple[list[float], list[float]] = ([], [])
        cpu = [0.0, 0.0]  # this process's CPU seconds on each side
        for index in range(calls):
            for number, (side, kept) in enumerate(zip(sides, times, strict=True)):
                used, began = time.process_time(), time.perf_counter()
                result = await side(index)
                kept.append((time.perf_counter() - began) * 1000)
                cpu[number] += time.process_time() - used
                if result.is_error:
                    raise SystemExit(f"in process: {result.content}")
    return tuple(  # type: ignore[return-value]
        {"p50": statistics.median(kept), "p99": _pct(kept, 99), "rate": 1000 / statistics.mean(kept),
         "parallel": float("nan"), "cpu": used / calls * 1e6}
        for kept, used in zip(times, cpu, strict=True)
    )  # fmt: skip


def _with_token(url: str, token: str):  # noqa: ANN202
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return streamable_http_client(url, http_client=http)


def _config(folder: Path, upstream: str) -> Path:
    path = folder / "gateway.yaml"
    path.write_text(f"agent: bench\nservers:\n  bench:\n{upstream}", encoding="utf-8")
    from stalwart_agents import cli

    if cli.main(["gateway", "approve", "--config", str(path)]) != 0:
        raise SystemExit("the benchmark's upstream could not be approved")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gateway")
    parser.add_argument("--quick", action="store_true", help="200 calls instead of 1,000")
    parser.add_argument("--calls", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args(argv)
    calls = args.calls or (200 if args.quick else 1000)
    token = secrets.token_urlsafe(24)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_GATEWAY_TOKEN": token}
    python = sys.executable
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        # stdio: the client starts the upstream, or the gateway that starts it.
        stdio = (
            f"    command: {python}\n    args: [-m, benchmarks.gateway.upstream]\n    cwd: {ROOT}\n"
        )
        config = _config(folder, stdio)
        direct = StdioServerParameters(
            command=python, args=["-m", "benchmarks.gateway.upstream"], cwd=str(ROOT), env=env
        )
        through = StdioServerParameters(
            command=python,
            args=["-m", "stalwart_agents", "gateway", "--config", str(config)],
            cwd=str(ROOT),
            env=env,
        )
        loads = [os.getloadavg()[0]]
        rows.append(("stdio", *anyio.run(_measure, direct, through, calls, args.concurrency)))
        rows.append(("in process (stdio upstream)", *anyio.run(_in_process, config, calls)))
        # HTTP: the upstream listens; the gateway listens in front of it.
        # Two upstreams, the same server started the same way: one called directly, one behind
        # the gateway, so each one's CPU per call is its own side's.
        up_port, own_port, gw_port = _port(), _port(), _port()
        upstream, own = (
            subprocess.Popen(  # noqa: S603
                [python, "-m", "benchmarks.gateway.upstream", str(port)],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            for port in (up_port, own_port)
        )
        gateway = None
        try:
            _wait(up_port, upstream)
            _wait(own_port, own)
            config = _config(folder, f"    url: http://127.0.0.1:{up_port}/mcp\n")
            gateway = subprocess.Popen(  # noqa: S603
                [python, "-m", "stalwart_agents", "gateway", "--config", str(config),
                 "--http", "--port", str(gw_port), "--token-env", "BENCH_GATEWAY_TOKEN"],
                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            _wait(gw_port, gateway)
            loads.append(os.getloadavg()[0])
            rows.append(
                ("HTTP", *anyio.run(_measure, f"http://127.0.0.1:{own_port}/mcp",
                                    _with_token(f"http://127.0.0.1:{gw_port}/mcp", token), calls,
                                    args.concurrency,
                                    {"gateway": gateway.pid, "upstream": upstream.pid,
                                     "direct": own.pid}))
            )  # fmt: skip
            loads.append(os.getloadavg()[0])
        finally:
            for process in (gateway, upstream, own):
                if process is not None:
                    process.terminate()
                    process.wait(timeout=10)
    print(
        f"gateway benchmark: {calls} sequential calls per run, {args.concurrency} in flight for the parallel rate"
    )
    print(
        f"load average (1 min) {min(loads):.1f}-{max(loads):.1f} during the run, on "
        f"{os.cpu_count()} cores; direct and gateway calls taken in turn"
    )
    print(
        f"| transport | direct p50 ms | direct p99 ms | gateway p50 ms | gateway p99 ms | added p50 ms | added p99 ms | direct calls/s (1 / {args.concurrency} in flight) | gateway calls/s (1 / {args.concurrency} in flight) |"
    )  # noqa: E501
    print("|---|---|---|---|---|---|---|---|---|")

    def rate(row: dict) -> str:
        parallel = row["parallel"]
        return f"{row['rate']:.0f}" + ("" if parallel != parallel else f" / {parallel:.0f}")

    for name, direct_row, gateway_row in rows:
        print(
            f"| {name} | {direct_row['p50']:.2f} | {direct_row['p99']:.2f} | {gateway_row['p50']:.2f} | "
            f"{gateway_row['p99']:.2f} | {gateway_row['p50'] - direct_row['p50']:.2f} | "
            f"{gateway_row['p99'] - direct_row['p99']:.2f} | {rate(direct_row)} | "
            f"{rate(gateway_row)} |"
        )
    print()
    print(
        "CPU per call (user + system, microseconds; far less load-bound than wall-clock "
        "latency, and the last column, in units of the bare upstream's own cost, least of all):"
    )
    print(
        f"| transport | gateway process, 1 in flight | gateway process, {args.concurrency} in "
        "flight | upstream, called directly | upstream, through the gateway | gateway / direct "
        "upstream | SDK client, direct call | SDK floor (client + upstream) | gateway / floor |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, direct_row, gateway_row in rows:
        if "gateway_cpu" not in gateway_row:
            continue
        # The gateway is an SDK server to its client and an SDK client to its upstream: one
        # bare server and one bare client (the direct side's) are what the SDK costs it at least.
        floor = direct_row["client_cpu"] + direct_row["upstream_cpu"]
        print(
            f"| {name} | {gateway_row['gateway_cpu']:.0f} | "
            f"{gateway_row['gateway_cpu_parallel']:.0f} | {direct_row['upstream_cpu']:.0f} | "
            f"{gateway_row['upstream_cpu']:.0f} | "
            f"{gateway_row['gateway_cpu'] / (direct_row['upstream_cpu'] or float('nan')):.2f} | "
            f"{direct_row['client_cpu']:.0f} | {floor:.0f} | "
            f"{gateway_row['gateway_cpu'] / (floor or float('nan')):.2f} |"
        )
    stdio = next(row for row in rows if row[0] == "stdio")[2]
    here = next(row for row in rows if row[0].startswith("in process"))
    client, own = here[1]["cpu"], here[2]["cpu"] - here[1]["cpu"]
    print()
    print(
        f"stdio, where the gateway's {stdio['gateway_cpu']:.0f} us a call go (the in-process "
        "row's own CPU split it):"
    )
    print(
        f"- the gateway's own path (tool check, firewall, executor, recording in the signed "
        f"history): {own:.0f} us"
    )
    print(
        f"- the MCP client call to the upstream (the SDK's ClientSession, stdio): {client:.0f} us"
    )
    print(
        "- the MCP server side (the SDK's reading, validation, dispatch and serialisation of the "
        f"client's request and the result, stdio): {stdio['gateway_cpu'] - own - client:.0f} us"
    )
    print(
        "- events, reports, decision-log writes: none on this path without a console "
        "(STALWART_URL, not measured here); with one, a SQLite commit per decision (the spool: "
        "WAL, no fsync) and the report queued for a task of its own"
    )
    return 0
