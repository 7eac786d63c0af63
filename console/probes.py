"""Liveness and readiness probes (`/healthz`, `/readyz`): unauthenticated, nothing about organisations.

A load balancer or a supervisor asks them over plain HTTP with whatever `Host` it likes, so the
middleware that answers them runs first, before the host check and the HTTPS redirect, and
answers only these two paths. Liveness says the process serves; readiness says the database, the
broker and a worker answer (`console.health`), as booleans only: no host names, no errors, no
counts. A readiness answer is kept for `CACHE_SECONDS` in each process, so that probing it often
does not send a ping task per probe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

LIVE = "/healthz"
READY = "/readyz"
CACHE_SECONDS = 5.0

_lock = threading.Lock()
_cached: tuple[float, dict] | None = None


def readiness() -> dict:
    """`{"ready": bool, "checks": {"database": bool, "broker": bool, "worker": bool}}`, cached."""
    global _cached
    with _lock:
        now = time.monotonic()
        if _cached is not None and now - _cached[0] < CACHE_SECONDS:
            return _cached[1]
        from console.health import health_report

        report = health_report()
        answer = {
            "ready": report["ok"],
            "checks": {check["name"]: check["ok"] for check in report["checks"]},
        }
        _cached = (time.monotonic(), answer)
        return answer


def forget() -> None:
    """Drop the kept readiness answer (the tests ask again at once)."""
    global _cached
    with _lock:
        _cached = None


class ProbeMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        if path not in (LIVE, READY):
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            response = JsonResponse({"error": "only GET and HEAD"}, status=405)
            response["Allow"] = "GET, HEAD"
            return response
        if path == LIVE:
            response = JsonResponse({"live": True})
        else:
            answer = readiness()
            response = JsonResponse(answer, status=200 if answer["ready"] else 503)
        response["Cache-Control"] = "no-store"
        return response
