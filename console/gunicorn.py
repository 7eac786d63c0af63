"""gunicorn's settings for the console: `gunicorn -c python:console.gunicorn console.wsgi`.

`stalwart console serve`, the Procfile and the Dockerfile all serve with these. Every value can be
changed from the environment (README.md, Configuration); gunicorn's own command-line options, given
after them, win. Threads rather than more processes: a request mostly waits on the database, and
`/readyz` waits up to `STALWART_HEALTH_WORKER_TIMEOUT` for a Celery worker.
"""

from __future__ import annotations

import os


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


bind = os.environ.get("STALWART_BIND") or "0.0.0.0:8000"
# gunicorn's own advice is 2-4 processes per core; capped so that a large host is not a surprise.
workers = _int("STALWART_WEB_WORKERS", min(2 * (os.cpu_count() or 1) + 1, 8))
worker_class = "gthread"
threads = _int("STALWART_WEB_THREADS", 4)
# A request that takes longer than this is killed and logged (the worker is replaced).
timeout = _int("STALWART_WEB_TIMEOUT", 60)
# On SIGTERM or a reload (SIGHUP), requests under way get this long to finish.
graceful_timeout = _int("STALWART_WEB_GRACEFUL_TIMEOUT", 30)
keepalive = 5
# Each worker is replaced after about this many requests, so that months of serving stay bounded.
# Not fewer: a new worker imports the console again and rebuilds what it keeps per process (the
# compiled policy versions, the kept active policies, the tool checks, prepared statements, the
# database and Redis connections), 0.4 s of CPU before its first request; at 5,000, a process
# answering 800 decisions a second was replaced every 6 s.
max_requests = _int("STALWART_WEB_MAX_REQUESTS", 50000)
max_requests_jitter = max_requests // 10
# The proxy in front may say the request was HTTPS (X-Forwarded-Proto); only a trusted one.
forwarded_allow_ips = os.environ.get("STALWART_FORWARDED_ALLOW_IPS") or "127.0.0.1,::1"
accesslog = "-"
errorlog = "-"
loglevel = (os.environ.get("STALWART_LOG_LEVEL") or "info").lower()
# The request id (X-Request-ID) beside each access line, so a line can be matched to its logs.
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms id=%({x-request-id}o)s'


def child_exit(server, worker) -> None:  # noqa: ANN001
    """A process that exits leaves its live gauges behind in multiprocess mode: mark it dead."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
