"""Exact outputs of `read_call`: every refusal's sentence, word for word, and every default.

These pin the reason strings a refused call carries (they reach decisions and logs verbatim),
that `tool`, `agent` and `skill` are each checked for malformed names, that a non-string
`stage` is shown through `repr` while a string one is shown as written, and that missing
`arguments` read as an empty object.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from firewall.engine.calls import CallView, read_call

ZERO_WIDTH = "shell\u200bexec"
ZERO_WIDTH_PROBLEM = "holds the invisible or control character U+200B"


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        ("shell.exec", "the call is not a JSON object"),
        ({}, "`tool` must be a non-empty string"),
        ({"tool": ""}, "`tool` must be a non-empty string"),
        ({"tool": 5}, "`tool` must be a non-empty string"),
        ({"tool": ["shell.exec"]}, "`tool` must be a non-empty string"),
        ({"tool": ZERO_WIDTH}, f"`tool` {ZERO_WIDTH_PROBLEM}"),
        ({"tool": "shell.exec", "skill": 5}, "`skill` must be a string"),
        ({"tool": "shell.exec", "agent": ZERO_WIDTH}, f"`agent` {ZERO_WIDTH_PROBLEM}"),
        ({"tool": "shell.exec", "skill": ZERO_WIDTH}, f"`skill` {ZERO_WIDTH_PROBLEM}"),
        ({"tool": "shell.exec", "destination": 5}, "`destination` must be a string"),
        (
            {"tool": "shell.exec", "stage": "outbound"},
            "`stage` must be one of inbound, tool_call, egress, not `outbound`",
        ),
        (
            {"tool": "shell.exec", "stage": 5},
            "`stage` must be one of inbound, tool_call, egress, not `5`",
        ),
        (
            {"tool": "shell.exec", "stage": ["egress"]},
            "`stage` must be one of inbound, tool_call, egress, not `['egress']`",
        ),
    ],
)
def test_an_unreadable_call_is_refused_with_this_exact_reason(call: Any, reason: str) -> None:
    assert read_call(call) == reason


def test_a_non_string_stage_is_shown_by_repr_not_str() -> None:
    reason = read_call({"tool": "shell.exec", "stage": Decimal("1.5")})
    assert reason == "`stage` must be one of inbound, tool_call, egress, not `Decimal('1.5')`"


def test_an_agent_name_is_checked_even_when_the_skill_is_fine() -> None:
    call = {"tool": "shell.exec", "skill": "community.tools", "agent": ZERO_WIDTH}
    assert read_call(call) == f"`agent` {ZERO_WIDTH_PROBLEM}"


def test_a_skill_name_is_checked_even_when_the_agent_is_fine() -> None:
    call = {"tool": "shell.exec", "agent": "helper", "skill": ZERO_WIDTH}
    assert read_call(call) == f"`skill` {ZERO_WIDTH_PROBLEM}"


@pytest.mark.parametrize("agent", ["", 5, ["x"], {"a": 1}, True])
def test_an_empty_or_non_string_agent_is_not_name_checked(agent: Any) -> None:
    view = read_call({"tool": "shell.exec", "agent": agent})
    assert view == CallView("shell.exec", None, "tool_call", {}, None)


def test_an_empty_skill_is_kept_as_written_and_not_name_checked() -> None:
    view = read_call({"tool": "shell.exec", "skill": ""})
    assert view == CallView("shell.exec", "", "tool_call", {}, None)


def test_a_full_call_is_read_field_by_field() -> None:
    call = {
        "tool": "http.get",
        "skill": "community.tools",
        "agent": "helper",
        "stage": "egress",
        "arguments": {"url": "http://10.0.0.5/x"},
        "destination": "http://10.0.0.5/x",
    }
    view = read_call(call)
    assert view == CallView(
        "http.get", "community.tools", "egress", {"url": "http://10.0.0.5/x"}, "http://10.0.0.5/x"
    )


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ({"tool": "t"}, CallView("t", None, "tool_call", {}, None)),
        ({"tool": "t", "arguments": None}, CallView("t", None, "tool_call", {}, None)),
        ({"tool": "t", "arguments": [1, 2]}, CallView("t", None, "tool_call", [1, 2], None)),
        ({"tool": "t", "arguments": "text"}, CallView("t", None, "tool_call", "text", None)),
        ({"tool": "t", "destination": "d"}, CallView("t", None, "egress", {}, "d")),
        ({"tool": "t", "stage": None, "destination": "d"}, CallView("t", None, "egress", {}, "d")),
        ({"tool": "t", "stage": "inbound"}, CallView("t", None, "inbound", {}, None)),
        (
            {"tool": "t", "stage": "tool_call", "destination": "d"},
            CallView("t", None, "tool_call", {}, "d"),
        ),
    ],
)
def test_defaults_for_stage_and_arguments(call: dict[str, Any], expected: CallView) -> None:
    view = read_call(call)
    assert view == expected
    assert isinstance(view, CallView)
    assert type(view.arguments) is type(expected.arguments)
