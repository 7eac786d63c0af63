"""The exceptions of the proof engine, all under one root, `ProofError`.

A graph document, an overlay or an agent file that cannot be used is refused with every problem
at once, each naming where it is: a JSON path for a document (`$.edges[3].when[0]`), a file and
line or a field path for an agent file (`agent.yaml: agents.desk.tools[0]`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


class ProofError(Exception):
    """The root of every error the proof engine raises."""


@dataclass(frozen=True, order=True)
class Problem:
    """One problem found while reading input: where it is and what is wrong."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


class _WithProblems(ProofError):
    def __init__(self, problems: Iterable[Problem], summary: str) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("; ".join(str(p) for p in self.problems) or summary)


class GraphInvalid(_WithProblems):
    """A `qls-graph/1` document (or an overlay) that does not validate, with every problem."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        super().__init__(problems, "the graph document is not valid")


class ConfigInvalid(_WithProblems):
    """An agent file, or a file it names, that cannot be read into a graph, with every problem."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        super().__init__(problems, "the agent file cannot be read")


class SourceUnreadable(ProofError):
    """A tools module whose `TOOLS` cannot be read without running it."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.problem = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")
