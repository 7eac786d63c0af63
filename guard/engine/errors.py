"""The exceptions of the tool-check engine, all under one root, `GuardError`.

The check itself never raises on a malformed call (it refuses with a reason); these are raised where
a program, not a model, made the mistake: a catalogue or settings that do not load, a history that
does not verify when it is loaded on its own, a key that is too short, an unknown check name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


class GuardError(Exception):
    """The root of every error the tool-check engine raises."""


@dataclass(frozen=True, order=True)
class Issue:
    """One problem found while loading: where it is (`tools[2].parameters`) and what is wrong."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


class CatalogueInvalid(GuardError):
    """A catalogue, agent.yaml, tool-kinds file or settings that do not load, with every issue."""

    def __init__(self, issues: Iterable[Issue]) -> None:
        self.issues: tuple[Issue, ...] = tuple(issues)
        super().__init__("; ".join(str(issue) for issue in self.issues) or "invalid catalogue")


class SettingsInvalid(CatalogueInvalid):
    """Settings of the tool check that do not load, with every issue."""


class HistoryInvalid(GuardError):
    """A session history whose signatures do not verify, naming the first entry that fails."""

    def __init__(self, message: str, *, index: int | None = None) -> None:
        self.index = index
        self.problem = message
        super().__init__(message if index is None else f"entry {index}: {message}")


class KeyTooShort(GuardError):
    """A signing key shorter than the engine accepts."""


class UnknownCheck(GuardError):
    """A `checks=[...]` list naming a check the engine does not have."""
