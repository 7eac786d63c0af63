"""A real `celery worker` process for integration tests, reading the test database and the real Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def flush_broker() -> None:
    """Empty the test Redis database so no stale task from an earlier run is taken."""
    import redis
    from django.conf import settings

    redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()


@contextmanager
def running_worker(
    *,
    concurrency: int = 1,
    beat: bool = False,
    env: dict[str, str] | None = None,
    log: Path | None = None,
) -> Iterator[subprocess.Popen]:
    from django.conf import settings
    from django.db import connection

    env = {**os.environ, **(env or {})}
    env["DJANGO_SETTINGS_MODULE"] = "console.settings.test"
    env["STALWART_DATABASE_NAME"] = str(connection.settings_dict["NAME"])
    env.setdefault("REDIS_URL", settings.CELERY_BROKER_URL)
    log = log or (ROOT / "var" / f"worker-{os.getpid()}.log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "console",
                "worker",
                "--loglevel=INFO",
                f"--concurrency={concurrency}",
                "--without-mingle",
                "--without-gossip",
                "--hostname",
                f"test-{os.getpid()}-{time.monotonic_ns()}@%h",
                *(["--beat", "--schedule", str(log.with_suffix(".beat"))] if beat else []),
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def use_broker(url: str) -> str:
    """Point this process's Celery app at another broker; returns the one it used before."""
    from kombu import pools

    from console import services
    from console.celery import app

    before = app.conf.broker_url
    pools.reset()  # kombu keeps pools per broker URL globally: drop them all
    app._pool = None
    app.amqp._producer_pool = None
    app.conf.broker_url = url
    services._redis = None
    services._covered_until.clear()
    return before
