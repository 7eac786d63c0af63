"""Exact behaviour of the reference evaluator: each clause operator's truth table (the compiled
clauses' table of test_clauses.py, and edges of its own: numbers on both sides of the operand,
values of the wrong type, IPs of the other version), and the default resolver it falls back to.
"""

from __future__ import annotations

from typing import Any

import pytest

import firewall.engine.reference as reference_module
from firewall.engine import reference_evaluate

from .test_clauses import OPERATOR_CASES


def verdict_for(op: str, value: Any, actual: Any) -> str:
    """The verdict of a policy whose one rule denies when `$.v` passes the clause."""
    clause: dict[str, Any] = {"path": "$.v", "op": op, "value": value}
    data = {
        "name": "p",
        "default_verdict": "allow",
        "rules": [{"name": "r", "priority": 1, "verdict": "deny", "args_match": [clause]}],
    }
    decision = reference_evaluate(data, {"tool": "t", "arguments": {"v": actual}})
    assert decision.errors == []
    return decision.verdict


#: Edges the clause table of test_clauses.py does not hold: numbers on both sides of the operand,
#: values of the wrong type, IPs of the other version.
REFERENCE_CASES: list[tuple[str, Any, Any, bool]] = [
    ("neq", 1, 1, False),
    ("neq", 1, 2, True),
    ("not_in", [1, 2], 1, False),
    ("not_in", [1, 2], 3, True),
    ("not_in", [None], None, False),
    ("not_in", [], 3, True),
    ("ends_with", "bc", "abc", True),
    ("ends_with", "bc", "abd", False),
    ("ends_with", "bc", 5, False),
    ("starts_with", "ab", 5, False),
    ("contains", "a", 5, False),
    ("contains", 5, [4, 5], True),
    ("contains", 5, "5", False),
    ("regex", "a", 5, False),
    ("cidr", "10.0.0.0/8", "192.168.1.1", False),
    ("cidr", "10.0.0.0/8", "::1", False),
    ("cidr", "::/0", "10.1.2.3", False),
    ("cidr", "10.0.0.0/8", 5, False),
    ("gt", 5, 4, False),
    ("gte", 5, 6, True),
    ("gte", 5, 5, True),
    ("gte", 5, 4, False),
    ("lt", 5, 4, True),
    ("lt", 5, 6, False),
    ("gt", 5, "9", False),
]


@pytest.mark.parametrize(("op", "value", "actual", "holds"), [*OPERATOR_CASES, *REFERENCE_CASES])
def test_each_operator_holds_exactly(op: str, value: Any, actual: Any, holds: bool) -> None:
    assert verdict_for(op, value, actual) == ("deny" if holds else "allow")


def test_without_a_resolver_the_default_resolver_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def fake(host: str) -> list[str]:
        asked.append(host)
        return ["10.0.0.1"]

    monkeypatch.setattr(reference_module, "default_resolver", lambda: fake)
    data = {
        "name": "p",
        "default_verdict": "allow",
        "rules": [
            {
                "name": "r",
                "priority": 1,
                "verdict": "deny",
                "stage": "egress",
                "egress": {"deny": ["10.0.0.0/8"]},
            }
        ],
    }
    call = {"tool": "t", "stage": "egress", "arguments": {"u": ["http://ok.example/"]}}
    decision = reference_evaluate(data, call)
    assert (decision.verdict, decision.rule, decision.errors) == ("deny", "r", [])
    assert asked == ["ok.example"]
