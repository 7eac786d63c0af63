"""Reading a call: the few fields the firewall needs, checked so nothing downstream can trip.

A call is `{"tool": "shell.exec", "skill": "community.tools", "stage": "tool_call",
"arguments": {...}, "destination": "http://10.0.0.5/x"}`; other keys (`agent`, `origins`,
`labels`) are ignored here. A call that cannot be read is refused by both evaluators, whatever
the policy says (fail closed: nothing that decides can answer for it). It cannot be read when:

- it is not an object, or its `tool` is missing, empty or not a string;
- its `tool`, `agent` or `skill` is a malformed name (`names.name_problem`: a control, zero-width,
  bidirectional or other invisible character, or a spelling not in NFKC form), so no spelling of
  `shell.exec` escapes a `shell.*` rule;
- `skill`, `destination` or `stage` is present (and not null) with the wrong type;
- `stage` names no stage.

`stage` defaults to `egress` when the call carries a `destination`, else to `tool_call`.
`arguments` defaults to `{}`; arguments that are not an object are still read (a rule
without clauses may fire, a rule with clauses does not, and `sanitize` cleans what it finds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from firewall.engine.names import name_problem
from firewall.engine.vocabulary import STAGES


@dataclass(slots=True)
class CallView:
    """The parts of a call the firewall reads."""

    tool: str
    skill: str | None
    stage: str
    arguments: Any
    destination: str | None


def read_call(call: object) -> CallView | str:
    """The call's view, or the reason it cannot be read (one lowercase sentence)."""
    if not isinstance(call, dict):
        return "the call is not a JSON object"
    tool = call.get("tool")
    if not isinstance(tool, str) or not tool:
        return "`tool` must be a non-empty string"
    problem = name_problem(tool)
    if problem is not None:
        return f"`tool` {problem}"
    skill = call.get("skill")
    if skill is not None and not isinstance(skill, str):
        return "`skill` must be a string"
    for field in ("agent", "skill"):
        value = call.get(field)
        if isinstance(value, str) and value:
            problem = name_problem(value)
            if problem is not None:
                return f"`{field}` {problem}"
    destination = call.get("destination")
    if destination is not None and not isinstance(destination, str):
        return "`destination` must be a string"
    stage = call.get("stage")
    if stage is None:
        stage = "egress" if destination is not None else "tool_call"
    elif not isinstance(stage, str) or stage not in STAGES:
        shown = stage if isinstance(stage, str) else repr(stage)
        return f"`stage` must be one of {', '.join(STAGES)}, not `{shown}`"
    arguments = call.get("arguments")
    if arguments is None:
        arguments = {}
    return CallView(tool, skill, stage, arguments, destination)
