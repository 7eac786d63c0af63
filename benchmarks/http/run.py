"""The decision endpoints over HTTP: req/s and p50/p99 under gunicorn, beside a no-op of the stack.

Setup: its own PostgreSQL database (dropped and created again) and its own Redis database
(flushed), migrated and seeded by `benchmarks.http.seed`; gunicorn with the console's own config
(`console/gunicorn.py`, gthread workers) and production settings on a port the OS gave, with 2 and
then 4 worker processes. For each, three endpoints are driven by 8 client processes (HTTP/1.1
keep-alive, one request at a time each) for a fixed time after a warm-up, then by one client:

- `GET /v1/whoami`, the authenticated no-op: middleware, API-key authentication, DRF, JSON;
- `POST /v1/firewall/evaluate`, a call the policy allows and records (its sequence rule reads it);
- `POST /v1/sessions/{id}/check`, a refund the rulebook refuses, in a session with a 30-tool
  catalogue (one session per client, as each agent's calls come one at a time; a check with a
  token, or one put to a person, locks its session's row).

Two ratios to the no-op, both from the same run: "cost × no-op" is the endpoint's wall cost per
request (1/throughput) over the no-op's, which moves with whatever else the machine runs; "CPU ×
no-op" is the server's CPU time per request over the no-op's, which does not. The server's CPU is
read from /proc before and after each phase: every gunicorn process's user and system time (the
master, its live workers, and the workers it reaped meanwhile, through the master's children's
times, so a worker replaced after `max_requests` is still counted), divided by the requests
answered in the phase; beside it the same for the database's backends serving the console's
connections (`pg_stat_activity` of the benchmark's database, when /proc shows them: PostgreSQL on
this machine) and for the harness's own client processes. Run: `python -m benchmarks.http [--quick]`.

This machine's speed moves by a third from minute to minute, and a ratio taken between an
endpoint measured in one minute and the no-op in another moved with it. So each endpoint's time is
cut in `--slices` slices (5), taken in turn with the other endpoints' (the order turning each
round), and each figure is its slices pooled: latencies together, CPU seconds and requests summed.
"""

from __future__ import annotations

import argparse
import functools
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


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command (field 3, the state, first), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _cpu_of(pid: int, *, reaped: bool = False) -> float:
    """A process's user and system seconds (with `reaped`, those of its waited-for children too)."""
    fields = _stat(pid)
    if fields is None:
        return 0.0
    # utime, stime, cutime, cstime are fields 14-17 of stat: 11-14 counted from the state.
    ticks = int(fields[11]) + int(fields[12])
    if reaped:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / CLOCK_TICKS


def _children(parent: int) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and int(fields[1]) == parent:
                pids.append(int(entry.name))
    return pids


def server_cpu(master: int) -> tuple[float, list[int]]:
    """CPU seconds of gunicorn so far: the master with every worker it reaped, and the live
    workers; and the live workers' pids (a phase that replaced one says so)."""
    workers = _children(master)
    return _cpu_of(master, reaped=True) + sum(_cpu_of(pid) for pid in workers), workers


class DatabaseCpu:
    """CPU seconds of the PostgreSQL backends connected to the benchmark's database (not this
    reader's own), read from /proc; None where /proc does not show them (a server elsewhere).
    None connected (the no-op's workers, once replaced, open none) is no time at all."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.connection = psycopg.connect(url, autocommit=True)
        self.name = urlsplit(url).path.lstrip("/")

    def pids(self) -> list[int]:
        rows = self.connection.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (self.name,),
        ).fetchall()
        return [pid for (pid,) in rows]

    def seconds(self) -> dict[int, float] | None:
        pids = self.pids()
        if pids and all(_stat(pid) is None for pid in pids):
            return None
        return {pid: _cpu_of(pid) for pid in pids}

    def close(self) -> None:
        self.connection.close()


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


def _client(args: tuple) -> tuple[list[float], int, int]:
    """One client: requests one after another on one connection; latencies in the window, the
    errors among them, and every request it made (the window's start included)."""
    port, method, path, body, key, start_at, stop_at = args
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    payload = json.dumps(body).encode() if body is not None else None
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    latencies: list[float] = []
    errors = made = 0
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
        made += 1
        if began >= start_at:
            latencies.append(ended - began)
            errors += not ok
    connection.close()
    return latencies, errors, made


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
    latencies = sorted(x for lat, _, _ in results for x in lat)
    errors = sum(e for _, e, _ in results)
    made = sum(m for _, _, m in results)
    if not latencies:
        return {
            "rps": 0.0,
            "p50": float("nan"),
            "p99": float("nan"),
            "errors": errors,
            "n": 0,
            "made": made,
            "latencies": [],
            "seconds": seconds,
        }
    return {
        "made": made,
        "rps": len(latencies) / seconds,
        "p50": statistics.median(latencies) * 1000,
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "errors": errors,
        "n": len(latencies),
        "latencies": latencies,
        "seconds": seconds,
    }


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _times(value: float, baseline: float) -> str:
    return f"{value / baseline:.2f}" if baseline else "n/a"


def _measured(
    drive: Any, master: int, database: DatabaseCpu, clients: list[int]
) -> tuple[dict[str, float], dict[str, Any]]:
    """`drive()`'s figures, and the CPU milliseconds per answered request it cost the server
    (gunicorn), the database's backends and the harness's clients, from /proc before and after.

    The CPU is read across the whole phase (its unmeasured first half-second included), so it
    is divided by every request the clients made in the phase.
    """
    server_before, workers_before = server_cpu(master)
    database_before = database.seconds()
    clients_before = sum(_cpu_of(pid) for pid in clients)
    figures = drive()
    server_after, workers_after = server_cpu(master)
    database_after = database.seconds()
    clients_after = sum(_cpu_of(pid) for pid in clients)
    answered = max(1, figures["made"])
    used = None
    if database_before is not None and database_after is not None:
        used = sum(t - database_before.get(pid, 0.0) for pid, t in database_after.items())
    replaced = len(set(workers_before) - set(workers_after))
    return figures, {
        "server": (server_after - server_before) * 1000 / answered,
        "database": None if used is None else used * 1000 / answered,
        "clients": (clients_after - clients_before) * 1000 / answered,
        "note": f" ({replaced} worker(s) replaced)" if replaced else "",
        "replaced": replaced,
        "totals": {
            "made": figures["made"],
            "server": server_after - server_before,
            "database": used,
            "clients": clients_after - clients_before,
        },
    }


def _merged(slices: list[tuple[dict[str, Any], dict[str, Any]]]) -> tuple[dict, dict]:
    """The figures and the CPU per request of one endpoint over all its slices, as if measured
    in one piece: the latencies pooled, the CPU seconds and the requests summed."""
    latencies = sorted(x for figures, _ in slices for x in figures["latencies"])
    seconds = sum(figures["seconds"] for figures, _ in slices)
    made = max(1, sum(cpu["totals"]["made"] for _, cpu in slices))
    databases = [cpu["totals"]["database"] for _, cpu in slices]
    replaced = sum(cpu["replaced"] for _, cpu in slices)
    figures = {
        "rps": len(latencies) / seconds if seconds else 0.0,
        "p50": statistics.median(latencies) * 1000 if latencies else float("nan"),
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
        if latencies
        else float("nan"),
        "errors": sum(figures["errors"] for figures, _ in slices),
    }
    cpu = {
        "server": sum(cpu["totals"]["server"] for _, cpu in slices) * 1000 / made,
        "database": None if None in databases else sum(databases) * 1000 / made,
        "clients": sum(cpu["totals"]["clients"] for _, cpu in slices) * 1000 / made,
        "note": f" ({replaced} worker(s) replaced)" if replaced else "",
    }
    return figures, cpu


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
    parser.add_argument(
        "--slices",
        type=int,
        default=5,
        help="each figure's time in this many slices, taken in turn with the other endpoints' "
        "(1: each endpoint in one piece, one after the other)",
    )
    parser.add_argument(
        "--max-requests",
        type=int,
        default=None,
        help="gunicorn's max_requests for the run (STALWART_WEB_MAX_REQUESTS; 0: never replace "
        "a worker); default: the console's config (50,000), so a fast endpoint's phase may "
        "replace workers, whose start-up CPU then counts in its figures (the table says so)",
    )
    args = parser.parse_args(argv)
    seconds = 3.0 if args.quick else args.seconds
    warm = 3.0 if args.quick else 5.0
    slices = max(1, args.slices)

    var = tempfile.mkdtemp(prefix="stalwart-bench-http-")
    env, seeded = prepare(args.database_url, args.redis_url, var, args.clients)
    if args.max_requests is not None:
        env["STALWART_WEB_MAX_REQUESTS"] = str(args.max_requests)
    endpoints = _endpoints(seeded["sessions"], args.clients)

    print(
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, "
        f"load average {_load()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print(
        f"{args.clients} clients, {seconds:g} s per figure in {slices} slice(s) taken in turn "
        f"with the other endpoints', after {warm:g} s of warm-up per endpoint; gunicorn max_requests {env.get('STALWART_WEB_MAX_REQUESTS') or 'as configured'}; "
        f"group commit {'off' if env.get('STALWART_EVENT_GROUP_COMMIT') == '0' else 'on'}"
    )
    print()
    print(
        "| workers | endpoint | req/s | p50 ms | p99 ms | cost × no-op | server CPU ms/req "
        "| CPU × no-op | database CPU ms/req | (server + database) × no-op | client CPU ms/req "
        "| 1 client p50 ms | 1 client server CPU ms/req | errors | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    log = Path(var) / "gunicorn.log"
    database_cpu = DatabaseCpu(args.database_url)
    with multiprocessing.get_context("spawn").Pool(args.clients) as pool:
        clients = [process.pid for process in pool._pool]
        for workers in args.workers:
            port = _free_port()
            server = serve(env, port, workers, log)
            try:
                _wait_ready(port, server)
                # Every worker thread's first requests import the URLconf and the views and
                # fill the caches: seconds on a loaded machine, and not what is measured.
                for requests in endpoints.values():
                    _drive(pool, port, seeded["key"], requests, 0.0, warm)
                # Each endpoint's time is cut in slices, taken in turn with the other endpoints'
                # (the order turning each round), so that all of them meet the machine as it is
                # minute to minute; a figure is its slices taken together.
                sliced: dict[str, list] = {name: [] for name in endpoints}
                single: dict[str, list] = {name: [] for name in endpoints}
                names = list(endpoints)

                def take(
                    requests: list, length: float, port: int = port, master: int = server.pid
                ) -> tuple[dict, dict]:
                    drive = functools.partial(
                        _drive, pool, port, seeded["key"], requests, 0.5, length
                    )
                    return _measured(drive, master, database_cpu, clients)

                for round_ in range(slices):
                    for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                        requests = endpoints[name]
                        sliced[name].append(take(requests, seconds / slices))
                        single[name].append(take(requests[:1], seconds / 3 / slices))
                baseline: dict[str, float] = {}
                for name in names:
                    many, cpu = _merged(sliced[name])
                    one, one_cpu = _merged(single[name])
                    baseline = baseline or {"rps": many["rps"], **cpu}
                    ratio = baseline["rps"] / many["rps"] if many["rps"] else float("inf")
                    print(
                        f"| {workers} | {name} | {many['rps']:,.0f} | {many['p50']:.1f} | "
                        f"{many['p99']:.1f} | {ratio:.2f} | {cpu['server']:.2f} | "
                        f"{_times(cpu['server'], baseline['server'])} | "
                        f"{_ms(cpu['database'])} | "
                        f"{_times(cpu['server'] + (cpu['database'] or 0.0), baseline['server'] + (baseline['database'] or 0.0))} | "
                        f"{cpu['clients']:.2f} | {one['p50']:.1f} | {one_cpu['server']:.2f} | "
                        f"{many['errors'] + one['errors']}{cpu['note']} | {_load()} |",
                        flush=True,
                    )
            finally:
                server.terminate()
                server.wait(timeout=30)
    database_cpu.close()
    print()
    print(f"load average after: {_load()}; gunicorn log: {log}")
    return 0
