"""The firewall engine's exceptions, all under one root, `FirewallError`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from firewall.engine.validator import ValidationIssue


class FirewallError(Exception):
    """Root of every error the firewall engine raises on purpose."""


class PolicyInvalid(FirewallError):
    """A policy failed validation; `issues` holds every problem found, in document order."""

    def __init__(self, issues: list[ValidationIssue]) -> None:
        self.issues = list(issues)
        count = len(self.issues)
        first = str(self.issues[0]) if self.issues else "no issue recorded"
        more = f" (and {count - 1} more)" if count > 1 else ""
        super().__init__(f"policy is invalid: {first}{more}")


class UnknownPreset(FirewallError):
    """A preset or autonomy level name that the engine does not ship."""


class OperandInvalid(FirewallError):
    """A part of a rule (a clause value, an egress entry, a sanitize pattern) cannot be used.

    `field` is the path of the part inside its container (e.g. `value`, `deny[2]`), so that the
    validator and the evaluators' diagnostics name the same place.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)


class SequenceError(FirewallError):
    """A sequence rule or an event given to the sequence matcher is malformed."""
