"""Exact resolver behaviour: defaults, TTL boundaries, messages, eviction order, `getaddrinfo`.

These tests prove the documented defaults (0.5 s timeout, 60 s TTL, 5 s negative TTL, 4096
names, 4 workers on threads named `firewall-dns`), that a cached entry is used strictly before
its expiry and not at it, that answers use the TTL and failures the negative TTL, the exact
`ResolutionFailed` message for fresh and cached failures, that the oldest name is evicted
first, how `getaddrinfo` is called and read, and that the process-wide resolver is made once.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest

from firewall.engine import resolver as resolver_module
from firewall.engine.resolver import ResolutionFailed, SystemResolver, default_resolver

from .conftest import Clock


class Lookup:
    def __init__(self, answer: list[str] | None = None) -> None:
        self.answer = answer
        self.calls: list[str] = []
        self.threads: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.calls.append(host)
        self.threads.append(threading.current_thread().name)
        if self.answer is None:
            raise OSError("nxdomain")
        return self.answer


def test_the_defaults_are_the_documented_ones() -> None:
    resolver = SystemResolver()
    assert resolver.timeout == 0.5
    assert resolver.ttl == 60.0
    assert resolver.negative_ttl == 5.0
    assert resolver.max_entries == 4096
    assert resolver._pool._max_workers == 4


def test_the_worker_count_is_the_one_given() -> None:
    assert SystemResolver(workers=2)._pool._max_workers == 2


def test_lookups_run_on_threads_named_firewall_dns() -> None:
    lookup = Lookup(["10.0.0.1"])
    SystemResolver(lookup=lookup)("a.example")
    assert len(lookup.threads) == 1
    assert lookup.threads[0].startswith("firewall-dns_")


@pytest.mark.parametrize(
    ("elapsed", "lookups"), [(0.0, 1), (59.0, 1), (59.999, 1), (60.0, 2), (61.0, 2)]
)
def test_the_default_ttl_serves_an_answer_strictly_before_60_seconds(
    elapsed: float, lookups: int
) -> None:
    clock = Clock()
    lookup = Lookup(["10.0.0.1"])
    resolver = SystemResolver(clock=clock, lookup=lookup)
    assert resolver("a.example") == ("10.0.0.1",)
    clock.now += elapsed
    assert resolver("a.example") == ("10.0.0.1",)
    assert len(lookup.calls) == lookups


@pytest.mark.parametrize(("elapsed", "lookups"), [(4.999, 1), (5.0, 2), (5.5, 2), (6.0, 2)])
def test_the_default_negative_ttl_caches_a_failure_strictly_before_5_seconds(
    elapsed: float, lookups: int
) -> None:
    clock = Clock()
    lookup = Lookup(None)
    resolver = SystemResolver(clock=clock, lookup=lookup)
    with pytest.raises(ResolutionFailed):
        resolver("gone.example")
    clock.now += elapsed
    with pytest.raises(ResolutionFailed):
        resolver("gone.example")
    assert len(lookup.calls) == lookups


def test_an_answer_is_cached_for_the_ttl_not_the_negative_ttl() -> None:
    clock = Clock()
    lookup = Lookup(["10.0.0.1"])
    resolver = SystemResolver(ttl=60, negative_ttl=5, clock=clock, lookup=lookup)
    resolver("a.example")
    clock.now += 30
    assert resolver("a.example") == ("10.0.0.1",)
    assert lookup.calls == ["a.example"]


def test_a_failure_says_which_host_did_not_resolve_fresh_and_cached() -> None:
    resolver = SystemResolver(clock=Clock(), lookup=Lookup(None))
    with pytest.raises(ResolutionFailed) as fresh:
        resolver("gone.example")
    assert str(fresh.value) == "hostname `gone.example` did not resolve"
    with pytest.raises(ResolutionFailed) as cached:
        resolver("gone.example")
    assert str(cached.value) == "hostname `gone.example` did not resolve"


def test_the_oldest_name_is_evicted_first() -> None:
    lookup = Lookup(["10.0.0.1"])
    resolver = SystemResolver(max_entries=2, clock=Clock(), lookup=lookup)
    for name in ("h0.example", "h1.example", "h2.example"):
        resolver(name)
    assert list(resolver._cache) == ["h1.example", "h2.example"]
    resolver("h1.example")
    resolver("h2.example")
    assert lookup.calls == ["h0.example", "h1.example", "h2.example"]


def test_the_default_cache_holds_4096_names() -> None:
    resolver = SystemResolver(clock=Clock(), lookup=lambda host: ["10.0.0.1"])
    for index in range(4097):
        resolver(f"h{index}.example")
    assert len(resolver._cache) == 4096
    assert next(iter(resolver._cache)) == "h1.example"


def test_getaddrinfo_asks_for_tcp_and_returns_each_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def fake(*args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        calls.append((args, kwargs))
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.1", 0)),
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("2001:db8::1", 0, 0, 0)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    assert resolver_module._getaddrinfo("a.example") == ["10.0.0.1", "2001:db8::1"]
    assert calls == [(("a.example", None), {"proto": socket.IPPROTO_TCP})]


def test_getaddrinfo_reads_a_numeric_host_without_the_network() -> None:
    assert set(resolver_module._getaddrinfo("127.0.0.1")) == {"127.0.0.1"}


def test_the_default_resolver_is_created_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolver_module, "_default", None)
    first = default_resolver()
    assert isinstance(first, SystemResolver)
    assert default_resolver() is first
    assert resolver_module._default is first
