"""The default hostname resolver: `getaddrinfo` in a worker thread, with a timeout and a cache.

This is the engine's only module that touches the network, and only when an egress rule lists
IPs or CIDRs and a call names a host. Evaluators take any `resolver(host) -> iterable of IP
strings` instead (tests inject a fake one); a resolver may raise, which counts as "could not
resolve" and never as an answer. Results are cached for `ttl` seconds, failures for
`negative_ttl`, and the cache holds at most `max_entries` names (oldest dropped first).
"""

from __future__ import annotations

import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

Resolver = Callable[[str], Iterable[str]]


class ResolutionFailed(OSError):
    """The name could not be resolved in time (or at all)."""


class SystemResolver:
    """Resolve through the operating system, bounded in time, cached with a TTL."""

    def __init__(
        self,
        *,
        timeout: float = 0.5,
        ttl: float = 60.0,
        negative_ttl: float = 5.0,
        max_entries: int = 4096,
        workers: int = 4,
        clock: Callable[[], float] = time.monotonic,
        lookup: Callable[[str], Iterable[str]] | None = None,
    ) -> None:
        self.timeout = timeout
        self.ttl = ttl
        self.negative_ttl = negative_ttl
        self.max_entries = max_entries
        self._clock = clock
        self._lookup = lookup or _getaddrinfo
        self._cache: OrderedDict[str, tuple[float, tuple[str, ...] | None]] = OrderedDict()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="firewall-dns")

    def __call__(self, host: str) -> tuple[str, ...]:
        now = self._clock()
        with self._lock:
            cached = self._cache.get(host)
            if cached is not None and cached[0] > now:
                if cached[1] is None:
                    raise ResolutionFailed(f"hostname `{host}` did not resolve")
                return cached[1]
        try:
            addresses: tuple[str, ...] | None = tuple(
                self._pool.submit(self._lookup, host).result(timeout=self.timeout)
            )
        except (OSError, UnicodeError, FutureTimeout):
            addresses = None
        expires = now + (self.ttl if addresses is not None else self.negative_ttl)
        with self._lock:
            self._cache[host] = (expires, addresses)
            self._cache.move_to_end(host)
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        if addresses is None:
            raise ResolutionFailed(f"hostname `{host}` did not resolve")
        return addresses


def _getaddrinfo(host: str) -> list[str]:
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in infos]


_default: SystemResolver | None = None
_default_lock = threading.Lock()


def default_resolver() -> SystemResolver:
    """The process-wide system resolver, created on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = SystemResolver()
        return _default
