"""The exceptions of the router engine, all under one root, `RouterError`.

Reading a turn never raises: a turn nothing reads becomes an `unread` plan. These are raised where a
program, not a person, made the mistake: a vocabulary file that does not load, a language the
router does not read, a model name that is not `provider:model`, a model that cannot answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


class RouterError(Exception):
    """The root of every error the router engine raises."""


@dataclass(frozen=True, order=True)
class Issue:
    """One problem of a vocabulary file: where it is (`verbs.refund.pt-BR[1]`, line) and what."""

    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.path or "vocabulary"
        if self.line is not None:
            where = f"{where} (line {self.line})"
        return f"{where}: {self.message}"

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "message": self.message}


class VocabularyInvalid(RouterError):
    """A vocabulary file that does not load, with every issue."""

    def __init__(self, issues: Iterable[Issue]) -> None:
        self.issues: tuple[Issue, ...] = tuple(issues)
        super().__init__("; ".join(str(issue) for issue in self.issues) or "invalid vocabulary")


class LanguageNotRead(RouterError):
    """A language the router has no grammar for (only `en` and `pt-BR` are read)."""


class SettingInvalid(RouterError):
    """A router setting with a value it does not take (`on_unread`, modes of the said checks)."""


class ModelNameInvalid(RouterError):
    """A model named otherwise than `provider:model`."""


class ModelUnavailable(RouterError):
    """A model the runner cannot call: no adapter for its provider, or a script that ran out."""


class SelectorUnavailableError(RouterError):
    """The router could not answer; the call is not made (never a fall-back to an unchecked call)."""
