"""The engine's exceptions: exact messages of `PolicyInvalid` and `OperandInvalid`.

They prove the summary line names the first issue, counts the others only when there are
others (`(and N more)` with N the count minus one), and falls back to `no issue recorded`.
"""

from __future__ import annotations

import pytest

from firewall.engine.errors import (
    FirewallError,
    OperandInvalid,
    PolicyInvalid,
    SequenceError,
    UnknownPreset,
)
from firewall.engine.validator import ValidationIssue


def _issues(count: int) -> list[ValidationIssue]:
    return [ValidationIssue(f"rules[{index}]", f"problem {index}") for index in range(count)]


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (0, "policy is invalid: no issue recorded"),
        (1, "policy is invalid: rules[0]: problem 0"),
        (2, "policy is invalid: rules[0]: problem 0 (and 1 more)"),
        (3, "policy is invalid: rules[0]: problem 0 (and 2 more)"),
        (5, "policy is invalid: rules[0]: problem 0 (and 4 more)"),
    ],
)
def test_policy_invalid_message_names_the_first_issue_and_counts_the_rest(
    count: int, expected: str
) -> None:
    issues = _issues(count)
    error = PolicyInvalid(issues)
    assert str(error) == expected
    assert error.args == (expected,)
    assert error.issues == issues


def test_policy_invalid_keeps_its_own_copy_of_the_issues() -> None:
    issues = _issues(2)
    error = PolicyInvalid(issues)
    issues.clear()
    assert len(error.issues) == 2


def test_policy_invalid_uses_a_pathless_issue_as_its_message() -> None:
    assert str(PolicyInvalid([ValidationIssue("", "not an object")])) == (
        "policy is invalid: not an object"
    )


@pytest.mark.parametrize(
    ("field", "message", "expected"),
    [
        ("deny[2]", "is not an address", "deny[2]: is not an address"),
        ("", "must be an object", "must be an object"),
    ],
)
def test_operand_invalid_prefixes_its_field_when_there_is_one(
    field: str, message: str, expected: str
) -> None:
    error = OperandInvalid(field, message)
    assert (error.field, error.message, str(error)) == (field, message, expected)


@pytest.mark.parametrize("kind", [PolicyInvalid, UnknownPreset, OperandInvalid, SequenceError])
def test_every_engine_error_is_a_firewall_error(kind: type[Exception]) -> None:
    assert issubclass(kind, FirewallError)
    assert issubclass(FirewallError, Exception)
