"""The default resolver: bounded in time, cached with a TTL, failures cached briefly."""

from __future__ import annotations

import threading
import time

import pytest

from firewall.engine.resolver import ResolutionFailed, SystemResolver

from .conftest import Clock


def test_answers_are_cached_until_their_ttl_runs_out() -> None:
    calls: list[str] = []
    clock = Clock()

    def lookup(host: str) -> list[str]:
        calls.append(host)
        return ["10.0.0.1", "10.0.0.1"]

    resolver = SystemResolver(ttl=60, clock=clock, lookup=lookup)
    assert resolver("a.example") == ("10.0.0.1", "10.0.0.1")
    resolver("a.example")
    assert calls == ["a.example"]
    clock.now += 61
    resolver("a.example")
    assert calls == ["a.example", "a.example"]


def test_failures_raise_and_are_cached_for_the_negative_ttl() -> None:
    calls: list[str] = []
    clock = Clock()

    def lookup(host: str) -> list[str]:
        calls.append(host)
        raise OSError("nxdomain")

    resolver = SystemResolver(negative_ttl=5, clock=clock, lookup=lookup)
    for _ in range(2):
        with pytest.raises(ResolutionFailed):
            resolver("gone.example")
    assert len(calls) == 1
    clock.now += 6
    with pytest.raises(ResolutionFailed):
        resolver("gone.example")
    assert len(calls) == 2


def test_a_slow_lookup_is_abandoned_after_the_timeout() -> None:
    release = threading.Event()

    def lookup(host: str) -> list[str]:
        release.wait(5)
        return ["10.0.0.1"]

    resolver = SystemResolver(timeout=0.05, lookup=lookup)
    started = time.monotonic()
    with pytest.raises(ResolutionFailed):
        resolver("slow.example")
    assert time.monotonic() - started < 1
    release.set()


def test_the_cache_is_bounded() -> None:
    resolver = SystemResolver(max_entries=3, lookup=lambda host: ["10.0.0.1"])
    for index in range(10):
        resolver(f"h{index}.example")
    assert len(resolver._cache) == 3
