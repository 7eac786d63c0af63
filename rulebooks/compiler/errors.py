"""Errors of the rulebook compiler: located compile errors, their rendering, and the exceptions.

Every refusal is a `CompileError` with a stable code, a one-sentence message and a location
(file, line, column; for a rule sheet, row and column name). The compiler collects all of them
and raises one `RulebookUnsupported` carrying the sorted list, so an author sees every problem
at once. `RulebookError` is the root of every exception this package raises.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: A construct the compiler does not support, or text it cannot parse (Colang or rule sheet).
UNSUPPORTED = "rulebook_unsupported"
#: A rulebook larger than the compiler reads (bytes, lines, flows, rows, an XLSX's inflated size),
#: or a compile that went over the server's time or memory budget.
TOO_LARGE = "rulebook_too_large"
#: An organisation that accepts compiled records only was given a rulebook source.
POLICY_INPUT_REFUSED = "policy_input_refused"
#: A record that is not a record this compiler wrote, or a folder whose manifest does not match.
RECORD_INVALID = "rulebook_record_invalid"
#: An agent whose rulebook could not be held (compiled, read or accepted) does not run.
NOT_HELD = "rulebook_not_held"
#: A `facts:` specification that is malformed.
FACTS_INVALID = "facts_invalid"
#: The code that reports facts (`context=`) failed or returned something that is not a mapping.
FACTS_UNAVAILABLE = "facts_unavailable"


@dataclass(frozen=True, slots=True)
class CompileError:
    """One located compile error.

    `line` and `column` are 1-based. For a rule sheet `line` is the spreadsheet row,
    `column` the 1-based column index and `field` the column's name from the header.
    `construct` names what was refused (`goto`, `define action`, ...), when there is one.
    """

    code: str
    message: str
    filename: str
    line: int | None = None
    column: int | None = None
    construct: str | None = None
    field: str | None = None

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.filename, self.line or 0, self.column or 0, self.code, self.message)

    @property
    def location(self) -> str:
        if self.field is not None:
            if self.line is None:
                return self.filename
            if not self.field:
                return f"{self.filename}: row {self.line}"
            return f"{self.filename}: row {self.line}, column {self.field}"
        if self.line is None:
            return self.filename
        if self.column is None:
            return f"{self.filename}:{self.line}"
        return f"{self.filename}:{self.line}:{self.column}"

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "file": self.filename,
            "line": self.line,
            "column": self.column,
            "construct": self.construct,
            "field": self.field,
        }

    def render(self, source: str | bytes | None = None) -> str:
        """The error, then the source line it names with a caret under its column."""
        head = str(self)
        if source is None or self.line is None or self.field is not None:
            return head
        text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
        lines = text.splitlines()
        if not 1 <= self.line <= len(lines):
            return head
        shown = lines[self.line - 1].replace("\t", " ")
        gutter = f"{self.line} | "
        out = [head, f"{gutter}{shown}"]
        if self.column is not None:
            out.append(" " * (len(gutter) + max(self.column - 1, 0)) + "^")
        return "\n".join(out)


def sort_errors(errors: Iterable[CompileError]) -> tuple[CompileError, ...]:
    """Errors in file, line, column order, each reported once."""
    unique = {(e.sort_key(), e.construct, e.field): e for e in errors}
    return tuple(sorted(unique.values(), key=CompileError.sort_key))


class RulebookError(Exception):
    """Root of every error the rulebook compiler, the gate and the facts raise."""

    code = "rulebook_error"


class RulebookUnsupported(RulebookError):
    """The rulebook cannot be compiled: every error, sorted, each with its location."""

    code = UNSUPPORTED

    def __init__(self, errors: Iterable[CompileError]) -> None:
        self.errors = sort_errors(errors)
        if not self.errors:
            raise ValueError("a refusal needs at least one error")
        first = str(self.errors[0])
        more = len(self.errors) - 1
        suffix = f" (and {more} more error{'s' if more > 1 else ''})" if more else ""
        super().__init__(first + suffix)

    def render(self, source: str | bytes | None = None) -> str:
        """Every error with its source line and caret, separated by blank lines."""
        return "\n\n".join(error.render(source) for error in self.errors)

    def to_list(self) -> list[dict[str, Any]]:
        return [error.to_dict() for error in self.errors]


class RulebookRecordInvalid(RulebookError):
    """A record (or a record folder) that this compiler did not write as it is now."""

    code = RECORD_INVALID

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class RulebookNotHeld(RulebookError):
    """An agent whose rulebook cannot be held does not run; `reason` says why.

    `reason` is the code of the cause (`rulebook_unsupported`, `policy_input_refused`,
    `rulebook_record_invalid`, ...) and `errors` the located compile errors, if any.
    """

    code = NOT_HELD

    def __init__(
        self,
        message: str,
        *,
        reason: str = NOT_HELD,
        errors: Iterable[CompileError] = (),
    ) -> None:
        self.reason = reason
        self.errors = sort_errors(errors)
        super().__init__(message)

    @classmethod
    def from_error(cls, error: RulebookError) -> RulebookNotHeld:
        """Wrap a compile or record error into the reason an agent does not run."""
        errors = getattr(error, "errors", ())
        errors = errors if errors and isinstance(errors[0], CompileError) else ()
        return cls(f"the rulebook cannot be held: {error}", reason=error.code, errors=errors)


class PolicyInputRefused(RulebookNotHeld):
    """An organisation that accepts compiled records only was given a rulebook source."""

    code = POLICY_INPUT_REFUSED

    def __init__(self, message: str) -> None:
        super().__init__(message, reason=POLICY_INPUT_REFUSED)


class FactsInvalid(RulebookError):
    """A `facts:` specification with errors; `issues` lists each with its path."""

    code = FACTS_INVALID

    def __init__(self, issues: Iterable[Any]) -> None:
        self.issues = tuple(issues)
        first = str(self.issues[0]) if self.issues else "the facts are invalid"
        super().__init__(first)


class FactsUnavailable(RulebookError):
    """The code that reports facts failed, so no fact can be trusted for this check."""

    code = FACTS_UNAVAILABLE
