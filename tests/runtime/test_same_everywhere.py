"""Every door gives the same answer: the SDK in this process, the console's API, the command line,
and the conversation `Agent.chat` holds.

Each example of the guardrail-checks page runs with its check alone and with every check on (and
the checks of what was said in each of their modes) through every door that can express it; the
doors must agree on the decision and the reasons, and the answer must be what the page says: a
barred example is barred by its check, an allowed one is not.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.guard.engine.conftest import lab_catalogue

from .doors import ChatDoor, CliDoor, ConsoleDoor, LocalDoor
from .scenarios import Scenario, scenarios

pytestmark = pytest.mark.django_db

#: The reasons that say a check barred a call (its allowing answers are not among them).
BARS = {
    "tool_kinds": ("write",),
    "withdrawn": ("withdrawn",),
    "address": ("disallowed_address",),
    "plan_step": ("off_plan",),
    "allowed_tools": ("unknown_tool", "agent_required"),
    "session_record": ("history_invalid",),
    "arguments": ("argument_schema",),
    "destinations": ("undeclared_destination",),
    "order": ("order_rule",),
    "undo": ("compensation_spent", "compensation_mismatch"),
    "your_rules": ("limit_reached", "condition_failed", "spend_exceeded", "gate_clarify"),
    "outside_content": ("tainted_call",),
    "confirmation": ("token_invalid", "token_mismatch", "token_expired"),
    "any_other_write": ("write",),
    "grounded": ("argument_origin",),
    "s1_veto": ("s1_veto",),
    "s2_veto": ("s2_veto",),
    "confirm_read": ("confirm_read",),
}
SCENARIOS = scenarios()


def barred_by(check: str, reasons: list[str]) -> bool:
    wanted = BARS.get(check, ())
    return any(
        r == w or r.startswith(f"{w}:") or r.startswith(f"{w} ") for r in reasons for w in wanted
    )


def run(door: Any, scenario: Scenario) -> dict[str, Any]:
    door.open(lab_catalogue(), scenario.settings)
    for call, result in scenario.ran:
        door.ran(call, result)
    if scenario.tamper:

        def edit(data: dict[str, Any]) -> None:
            data["entries"][-1]["content"]["result"] = {"order_id": "A2"}

        door.tamper(edit)
    call = dict(scenario.call)
    if scenario.plan is not None:
        call.update(plan=scenario.plan, plan_token=door.plan_token(scenario.plan))
    if scenario.yes is not None:
        call["token"] = door.yes(scenario.yes)
    for turn in scenario.turns:
        door.read(turn)
    if scenario.checks is not None:
        call["checks"] = scenario.checks
    return door.check(call)


@pytest.fixture
def doors(editor, approver, client_for, tmp_path, capsys):
    return [
        LocalDoor(),
        ConsoleDoor(client_for(editor), client_for(approver)),
        CliDoor(tmp_path, capsys),
        ChatDoor(tmp_path),
    ]


def _can(door: Any, scenario: Scenario) -> bool:
    needs = set(scenario.needs)
    if door.name == "console" and "said_off" in needs:
        # A session opened over the API can only make the organisation's settings stricter:
        # `off` is the organisation's to set (the Settings page), not a session's.
        return False
    needs.discard("said_off")
    return needs <= door.can


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_every_door_gives_the_page_s_answer(doors, scenario):
    answers = {door.name: run(door, scenario) for door in doors if _can(door, scenario)}
    assert len(answers) >= 2 or scenario.tamper, f"{scenario.name} ran through {list(answers)}"
    seen = {(a["decision"], tuple(a["reasons"])) for a in answers.values()}
    assert len(seen) == 1, {name: (a["decision"], a["reasons"]) for name, a in answers.items()}
    decision, reasons = next(iter(seen))
    if scenario.mode == "off" or not scenario.barred:
        assert not barred_by(scenario.check, list(reasons)), (decision, reasons)
    else:
        assert barred_by(scenario.check, list(reasons)), (decision, reasons)
        if scenario.mode == "refuse":
            assert decision == "refuse"
        if scenario.mode == "confirm":
            assert decision == "confirm"
