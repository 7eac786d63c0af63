"""Shared helpers for the firewall engine tests: a fake resolver and policy builders."""

from __future__ import annotations

from typing import Any

import pytest


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
