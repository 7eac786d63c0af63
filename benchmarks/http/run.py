"""The decision endpoints over HTTP: req/s and p50/p99 under gunicorn, beside a no-op of the stack.

Setup: its own PostgreSQL database (dropped and created again) and its own Redis database
(flushed), migrated and seeded by `benchmarks.http.seed`; gunicorn with the console's own config
(`console/gunicorn.py`, gthread workers) and production settings on a port the OS gave, with 2 and
then 4 worker processes. For each, three endpoints are driven by 8 client processes (HTTP/1.1
keep-alive, one request at a time each) for a fixed time after a warm-up, then by one client:

- `GET /v1/whoami`, the authenticated no-op: middleware, API-key authentication, DRF, JSON;
- `POST /v1/firewall/evaluate`, a call the policy allows and records (its sequence rule reads it);
- `POST /v1/sessions/{id}/check`, a refund the rulebook refuses, in a session with a 30-tool
  catalogue (one session per client: a check locks its session's row, as one agent's calls are
  serialised).

The ratio is the endpoint's cost per request (1/throughput) over the no-op's, in the same run;
the machine is shared, so read the ratios first. Run: `python -m benchmarks.http [--quick]`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import platform
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/stalwart_bench_http"
DEFAULT_REDIS = "redis://127.0.0.1:6379/15"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _recreate_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def _flush_redis(url: str) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


def _environment(database: str, redis_url: str, var: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings.production",
        "STALWART_SECRET_KEY": secrets.token_urlsafe(48),
        "STALWART_ALLOWED_HOSTS": "127.0.0.1",
        "STALWART_SSL_REDIRECT": "0",
        "STALWART_VAR_DIR": var,
        "DATABASE_URL": database,
        "REDIS_URL": redis_url,
        "PYTHONPATH": str(ROOT),
    }


def _client(args: tuple) -> tuple[list[float], int]:
    """One client: requests one after another on one connection; latencies in the window."""
    port, method, path, body, key, start_at, stop_at = args
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    payload = json.dumps(body).encode() if body is not None else None
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    latencies: list[float] = []
    errors = 0
    while True:
        began = time.perf_counter()
        if began >= stop_at:
            break
        try:
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            response.read()
            ok = 200 <= response.status < 300
            if response.getheader("Connection", "").lower() == "close":
                connection.close()
        except (OSError, http.client.HTTPException):
            ok = False
            connection.close()
        ended = time.perf_counter()
        if began >= start_at:
            latencies.append(ended - began)
            errors += not ok
    connection.close()
    return latencies, errors


def _drive(
    pool: Any,
    port: int,
    key: str,
    requests: list[tuple[str, str, Any]],
    warm: float,
    seconds: float,
) -> dict[str, float]:
    start_at = time.perf_counter() + warm
    stop_at = start_at + seconds
    jobs = [(port, method, path, body, key, start_at, stop_at) for method, path, body in requests]
    results = pool.map(_client, jobs)
    latencies = sorted(x for lat, _ in results for x in lat)
    errors = sum(e for _, e in results)
    if not latencies:
        return {"rps": 0.0, "p50": float("nan"), "p99": float("nan"), "errors": errors, "n": 0}
    return {
        "rps": len(latencies) / seconds,
        "p50": statistics.median(latencies) * 1000,
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "errors": errors,
        "n": len(latencies),
    }


def fresh_console(database: str, redis_url: str, var: str) -> dict[str, str]:
    """The benchmark's own database dropped, created and migrated, its Redis database flushed:
    the environment its console and seeds run in."""
    env = _environment(database, redis_url, var)
    _recreate_database(database)
    _flush_redis(redis_url)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    return env


def seed_with(env: dict[str, str], module: str, *args: str) -> dict[str, Any]:
    """Run a seed module in the benchmark's environment; the JSON line it prints last."""
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _wait_ready(port: int, server: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("gunicorn exited before it answered")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/healthz", headers={"Host": "127.0.0.1"})
            if connection.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("gunicorn did not answer /healthz in time")


def prepare(database: str, redis_url: str, var: str, sessions: int) -> tuple[dict[str, str], Any]:
    """The database dropped, created, migrated and seeded with `sessions` sessions, Redis flushed,
    static files collected: the environment of the console's processes and what was seeded."""
    env = fresh_console(database, redis_url, var)
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    return env, seed_with(env, "benchmarks.http.seed", str(sessions))


def serve(
    env: dict[str, str], port: int, workers: int, log: Path, *, own_session: bool = False
) -> subprocess.Popen:
    """gunicorn with the console's own config on `port`, its output appended to `log`;
    `own_session`: in a session (so a scheduling group) of its own, as a server elsewhere."""
    with log.open("a") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "-c",
                "python:console.gunicorn",
                "console.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(workers),
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=own_session,
        )


def _endpoints(sessions: list[str], clients: int) -> dict[str, list[tuple[str, str, Any]]]:
    evaluate = [
        (
            "POST",
            "/v1/firewall/evaluate",
            {"tool": "files.read", "arguments": {"path": f"/srv/{i}"}, "agent": "ops"},
        )
        for i in range(clients)
    ]
    check = {
        "tool": "refund_card",
        "arguments": {"order_id": "4411", "amount": 40.0},
        "origins": {"order_id": "typed", "amount": "typed"},
        "context": {"order_paid": False},
    }
    return {
        "no-op (GET /v1/whoami)": [("GET", "/v1/whoami", None)] * clients,
        "evaluate": evaluate,
        "check": [
            ("POST", f"/v1/sessions/{sessions[i % len(sessions)]}/check", check)
            for i in range(clients)
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE)
    )
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS))
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--quick", action="store_true", help="3 s per figure")
    args = parser.parse_args(argv)
    seconds = 3.0 if args.quick else args.seconds
    warm = 3.0 if args.quick else 5.0

    var = tempfile.mkdtemp(prefix="stalwart-bench-http-")
    env, seeded = prepare(args.database_url, args.redis_url, var, args.clients)
    endpoints = _endpoints(seeded["sessions"], args.clients)

    print(
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, "
        f"load average {'/'.join(f'{x:.1f}' for x in os.getloadavg())}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print(
        f"{args.clients} clients, {seconds:g} s per figure, after {warm:g} s of warm-up per endpoint"
    )
    print()
    print(
        "| workers | endpoint | req/s | p50 ms | p99 ms | cost × no-op | 1 client p50 ms | errors |"
    )
    print("|---|---|---|---|---|---|---|---|")
    log = Path(var) / "gunicorn.log"
    with multiprocessing.get_context("spawn").Pool(args.clients) as pool:
        for workers in args.workers:
            port = _free_port()
            server = serve(env, port, workers, log)
            try:
                _wait_ready(port, server)
                # Every worker thread's first requests import the URLconf and the views and
                # fill the caches: seconds on a loaded machine, and not what is measured.
                for requests in endpoints.values():
                    _drive(pool, port, seeded["key"], requests, 0.0, warm)
                baseline = None
                for name, requests in endpoints.items():
                    many = _drive(pool, port, seeded["key"], requests, 0.5, seconds)
                    one = _drive(pool, port, seeded["key"], requests[:1], 0.5, seconds / 3)
                    baseline = baseline or many["rps"]
                    ratio = baseline / many["rps"] if many["rps"] else float("inf")
                    print(
                        f"| {workers} | {name} | {many['rps']:,.0f} | {many['p50']:.1f} | "
                        f"{many['p99']:.1f} | {ratio:.2f} | {one['p50']:.1f} | "
                        f"{many['errors'] + one['errors']} |",
                        flush=True,
                    )
            finally:
                server.terminate()
                server.wait(timeout=30)
    print()
    print(
        f"load average after: {'/'.join(f'{x:.1f}' for x in os.getloadavg())}; gunicorn log: {log}"
    )
    return 0
