"""The report of `stalwart verify`: one diagnostic model that the three renderers print.

A `Report` holds everything the chapter's output shows -- the rulebook's state, the runtime's
lints, the code checks, the findings, the rules with nothing to read, the gate -- and what the
findings document must name besides: the depth and turns the proof holds to, the graph's digest,
the questions' answers and the two engines' work. The gate fails when any finding's rule fails
the gate; `stops_agent` says whether `Agent(..., verify=True)` would refuse to run.

`step_limit` is the run's own step limit (agent.yaml's `budget.run`, else the framework's
recursion limit): a proof to a smaller depth does not search every route the run can take, so
the report warns of it (`below_step_limit`), and under `strict` the gate fails on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from guard.engine import Lint

from .codechecks import CodeReport
from .findings import Finding


@dataclass(frozen=True)
class RulebookState:
    """The rulebook an agent runs under, as the report's first line tells it."""

    file: str
    compiled: bool
    enforced: bool
    format: str | None = None


@dataclass
class Report:
    file: str
    rulebook: RulebookState | None
    lints: list[Lint]
    code: CodeReport
    findings: list[Finding]
    nothing_to_read: list[tuple[str, str]]
    depth: int
    turns: int
    graph_digest: str
    nodes: int
    edges: int
    answers: dict[str, int] = field(default_factory=dict)
    engines: dict[str, Any] = field(default_factory=dict)
    step_limit: int = 60
    strict: bool = False

    @property
    def failing(self) -> list[Finding]:
        return [f for f in self.findings if f.fails_gate]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if not f.fails_gate]

    @property
    def undecided(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "undecided"]

    @property
    def below_step_limit(self) -> bool:
        """The proof stopped short of the run's step limit: a longer route was not searched."""
        return self.depth < self.step_limit

    @property
    def fails_on_depth(self) -> bool:
        """`--strict` and a depth below the run's step limit: the gate fails on the depth."""
        return self.strict and self.below_step_limit

    @property
    def passed(self) -> bool:
        return not self.failing and not self.fails_on_depth

    @property
    def stops_agent(self) -> bool:
        return any(f.stops_agent for f in self.findings)

    @property
    def exit_code(self) -> int:
        """0 when the gate passes, 1 when it fails (usage and internal errors are the CLI's)."""
        return 0 if self.passed else 1
