"""Registration lints: what a catalogue leaves to chance, reported as warnings that block nothing.

Per write (`write` or `sends_out`), in this order:
- `write_without_compensation`: neither compensated nor marked irreversible nor `undo: none` (a
  tool that is itself the undo of another is not asked for an undo of its own);
- `write_not_retry_safe`: not idempotent, so an ambiguous failure goes to a person;
- `write_without_result_schema`: no result schema, so its outcome could not be reported;
- `compensation_not_retry_safe`: its undo is not idempotent.
Then, per agent and per tool it can call, `compensation_out_of_reach`: the agent can call a tool but
not the tool that undoes it. Tools are taken by name, agents by name, so the report is stable.

`str(lint)` is the line `stalwart verify` prints, e.g.
`write_not_retry_safe (warning) on charge_card: a write with no idempotency, so an ambiguous failure
goes to a person`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .catalogue import Catalogue


@dataclass(frozen=True)
class Lint:
    """One registration lint."""

    code: str
    tool: str
    message: str
    severity: str = "warning"

    def __str__(self) -> str:
        return f"{self.code} ({self.severity}) on {self.tool}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return {
            "code": self.code,
            "severity": self.severity,
            "tool": self.tool,
            "message": self.message,
        }


def lint_catalogue(catalogue: Catalogue) -> list[Lint]:
    """Every lint of a loaded catalogue, in report order."""
    lints: list[Lint] = []
    for name in sorted(catalogue.tools):
        tool = catalogue.tools[name]
        if not tool.is_write or tool.withdrawn:
            continue
        if (
            tool.compensation is None
            and not tool.irreversible
            and not tool.undo_none
            and name not in catalogue.undo_tools
        ):
            lints.append(
                Lint(
                    "write_without_compensation",
                    name,
                    "a write neither compensated nor marked irreversible",
                )
            )
        if not tool.idempotent:
            lints.append(
                Lint(
                    "write_not_retry_safe",
                    name,
                    "a write with no idempotency, so an ambiguous failure goes to a person",
                )
            )
        if tool.result_schema is None:
            lints.append(
                Lint(
                    "write_without_result_schema",
                    name,
                    "a write with no result schema, so its outcome could not be reported",
                )
            )
        if tool.compensation is not None:
            undo = catalogue.tools[tool.compensation.tool]
            if not undo.idempotent:
                lints.append(
                    Lint(
                        "compensation_not_retry_safe",
                        name,
                        f"'{undo.name}' undoes it and is not retry-safe",
                    )
                )
    for agent_name in sorted(catalogue.agents):
        agent = catalogue.agents[agent_name]
        for name in sorted(agent.tools):
            compensation = catalogue.tools[name].compensation
            if compensation is not None and compensation.tool not in agent.tools:
                lints.append(
                    Lint(
                        "compensation_out_of_reach",
                        name,
                        f"agent '{agent_name}' can call it but not '{compensation.tool}', "
                        "which undoes it, so a run of that agent cannot undo it",
                    )
                )
    return lints


def render_lints(lints: list[Lint]) -> str:
    """The lint section of `stalwart verify`'s report."""
    if not lints:
        return "Lints from the runtime: none.\n"
    lines = ["Lints from the runtime (none of these blocks the agent):"]
    lines.extend(f"  {lint}" for lint in lints)
    return "\n".join(lines) + "\n"
