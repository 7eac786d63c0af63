"""A finding: one rule raised on one subject, where it was written, why, and how to fix it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .prove import WitnessStep
from .rules import rule


@dataclass(frozen=True)
class Finding:
    """What the report prints for one finding (the `Finding` shape of DESIGN.md)."""

    rule: str
    subject: str
    where: str | None
    message: str
    fix: str
    witness: tuple[WitnessStep, ...] = ()
    status: str = "reachable"

    @property
    def info(self):
        return rule(self.rule)

    @property
    def title(self) -> str:
        return self.info.title

    @property
    def type(self) -> str:
        return self.info.type

    @property
    def severity(self) -> str:
        return self.info.severity

    @property
    def owasp(self) -> tuple[str, ...]:
        return self.info.owasp

    @property
    def fails_gate(self) -> bool:
        return self.info.fails_gate

    @property
    def stops_agent(self) -> bool:
        return self.info.stops_agent

    def sort_key(self) -> tuple[Any, ...]:
        return (not self.fails_gate, self.rule, self.where or "", self.subject, self.message)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "title": self.title,
            "type": self.type,
            "severity": self.severity,
            "on": self.subject,
            "where": self.where,
            "message": self.message,
            "status": self.status,
            "witness": [step.to_dict() for step in self.witness],
            "owasp": list(self.owasp),
            "fix": self.fix,
            "fails_gate": self.fails_gate,
            "stops_agent": self.stops_agent,
        }
