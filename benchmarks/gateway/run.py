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


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def _measure(direct, through, calls: int, concurrency: int) -> tuple[dict, dict]:  # noqa: ANN001
    """The same read, direct and through the gateway, call by call in turn (both meet the same
    load), then each side's rate with `concurrency` calls in flight on one connection."""
    async with mcp.Client(direct) as plain, mcp.Client(through) as gated:
        sides = ((plain, "get_order"), (gated, "bench.get_order"))
        for client, _ in sides:
            await client.list_tools()
        for _ in range(min(50, calls)):
            for client, name in sides:
                await client.call_tool(name, {"order_id": "A1"})
        times: tuple[list[float], list[float]] = ([], [])
        for index in range(calls):
            for (client, name), kept in zip(sides, times, strict=True):
                began = time.perf_counter()
                result = await client.call_tool(name, {"order_id": f"A{index}"})
                kept.append((time.perf_counter() - began) * 1000)
                if result.is_error:
                    raise SystemExit(f"{name} failed: {result.content}")
        rows = []
        for (client, name), kept in zip(sides, times, strict=True):
            began = time.perf_counter()

            async def worker(count: int, client=client, name=name) -> None:  # noqa: ANN001
                for index in range(count):
                    await client.call_tool(name, {"order_id": f"B{index}"})

            async with anyio.create_task_group() as group:
                for _ in range(concurrency):
                    group.start_soon(worker, calls // concurrency)
            parallel = (calls // concurrency * concurrency) / (time.perf_counter() - began)
            rows.append(
                {
                    "p50": statistics.median(kept),
                    "p99": _pct(kept, 99),
                    "rate": 1000 / statistics.mean(kept),
                    "parallel": parallel,
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
        for index in range(calls):
            for side, kept in zip(sides, times, strict=True):
                began = time.perf_counter()
                result = await side(index)
                kept.append((time.perf_counter() - began) * 1000)
                if result.is_error:
                    raise SystemExit(f"in process: {result.content}")
    return tuple(  # type: ignore[return-value]
        {"p50": statistics.median(kept), "p99": _pct(kept, 99), "rate": 1000 / statistics.mean(kept),
         "parallel": float("nan")}
        for kept in times
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
        up_port, gw_port = _port(), _port()
        upstream = subprocess.Popen(  # noqa: S603
            [python, "-m", "benchmarks.gateway.upstream", str(up_port)],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        gateway = None
        try:
            _wait(up_port, upstream)
            config = _config(folder, f"    url: http://127.0.0.1:{up_port}/mcp\n")
            gateway = subprocess.Popen(  # noqa: S603
                [python, "-m", "stalwart_agents", "gateway", "--config", str(config),
                 "--http", "--port", str(gw_port), "--token-env", "BENCH_GATEWAY_TOKEN"],
                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            _wait(gw_port, gateway)
            loads.append(os.getloadavg()[0])
            rows.append(
                ("HTTP", *anyio.run(_measure, f"http://127.0.0.1:{up_port}/mcp",
                                    _with_token(f"http://127.0.0.1:{gw_port}/mcp", token), calls,
                                    args.concurrency))
            )  # fmt: skip
            loads.append(os.getloadavg()[0])
        finally:
            for process in (gateway, upstream):
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
    return 0
