"""Shared helpers for the firewall engine tests: a fake resolver and a fake clock, policy builders,
a sanitizer run and a sequence event."""

from __future__ import annotations

from typing import Any

import pytest

from firewall.engine.sanitize import build_sanitizer


class FakeResolver:
    """A resolver that answers from a table and records every name it was asked."""

    def __init__(self, table: dict[str, list[str]] | None = None) -> None:
        self.table = dict(table or {})
        self.asked: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.asked.append(host)
        if host not in self.table:
            raise OSError(f"no such host {host}")
        return self.table[host]


@pytest.fixture
def resolver() -> FakeResolver:
    return FakeResolver(
        {
            "metadata.internal": ["169.254.169.254"],
            "intranet.example": ["10.1.2.3"],
            "mixed.example": ["93.184.216.34", "10.9.9.9"],
            "public.example": ["93.184.216.34"],
            "v6.example": ["::ffff:169.254.169.254"],
        }
    )


def policy(*rules: dict[str, Any], default: str = "allow") -> dict[str, Any]:
    """A policy around the given rules, naming and prioritising them by position if unset."""
    filled = []
    for index, rule in enumerate(rules):
        rule = dict(rule)
        rule.setdefault("name", f"rule {index}")
        rule.setdefault("priority", (index + 1) * 10)
        filled.append(rule)
    return {"name": "test", "default_verdict": default, "rules": filled}


class Clock:
    """A clock that stands still at 1000.0 until a test moves `now`."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def redact(presets: list[str], value: Any, patterns: list[str] | None = None) -> Any:
    """`value` through a sanitizer of these presets and patterns."""
    spec: dict[str, Any] = {"presets": presets}
    if patterns:
        spec["patterns"] = patterns
    return build_sanitizer(spec).redact(value)


def ev(event_id: Any, tool: str, ts: float, **extra: Any) -> dict[str, Any]:
    """An event of the sequence matchers' input."""
    return {"id": event_id, "tool": tool, "ts": ts, **extra}
