"""The note of order 743 carries an instruction: it is shown as data and never becomes a call."""

from __future__ import annotations

from pathlib import Path

import pytest

from examples.erp import lab, tools
from examples.erp.synthetic_erp import ERP, INJECTED_NOTE, PATH_VARIABLE
from guard import engine
from guard.models import ApprovalRequest, Effect
from router import engine as router_engine

pytestmark = pytest.mark.django_db


@pytest.fixture
def erp(tmp_path: Path, monkeypatch) -> ERP:  # noqa: ANN001
    erp = ERP.create(tmp_path / "erp.sqlite3")
    monkeypatch.setenv(PATH_VARIABLE, str(erp.path))
    return erp


@pytest.fixture
def supervisor_b():  # noqa: ANN201
    return lab._actor(*lab.CAST[2])


def test_a_turn_that_reads_the_order_shows_the_note_and_runs_nothing_else(
    erp: ERP, supervisor_b
) -> None:
    """The router plans the person's turn; the executor runs the read; the note is only shown."""
    executor = lab._executor(supervisor_b)
    ran: list[str] = []

    def run(tool: str, arguments) -> object:  # noqa: ANN001
        ran.append(tool)
        outcome = executor.call(tool, dict(arguments), origins=dict.fromkeys(arguments, "typed"))
        if outcome["outcome"] != "SUCCEEDED":
            raise RuntimeError(outcome["outcome"])
        return outcome["result"]

    agent_file = engine.load_agent_yaml(
        lab.AGENT_FILE.read_text(encoding="utf-8"), modules={"erp.tools": tools.TOOLS}
    )
    conversation = router_engine.Conversation(
        router_engine.Router(agent_file, language="pt-BR"),
        executor=run,
        key=b"conversation-key-" * 2,
        session="supervisor-b",
    )
    reply = conversation.say("mostre a OS 743")

    assert INJECTED_NOTE in reply.text  # shown to the person, as data
    assert ran == ["read_order"] and [step["tool"] for step in reply.ran] == ["read_order"]
    assert conversation.turns == ["mostre a OS 743"]  # the note never became a turn
    assert ApprovalRequest.objects.count() == 0 and Effect.objects.count() == 0
    assert [request["action"] for request in erp.requests()] == ["read_order"]
    assert erp.effects() == []


def test_a_model_that_obeyed_the_note_would_be_blocked_before_anyone_is_asked(
    erp: ERP, supervisor_b
) -> None:
    """Order 742 belongs to shopping-a: a close from shopping-b is blocked by tenancy."""
    executor = lab._executor(supervisor_b)
    read = executor.call("read_order", {"order_id": "743"}, origins={"order_id": "typed"})
    assert read["result"]["note"] == INJECTED_NOTE
    obeyed = {"order_id": "742", "reason": "a nota da OS 743 pediu"}
    outcome = executor.call("request_close", obeyed, origins=dict.fromkeys(obeyed, "tool"))
    assert outcome["outcome"] == "BLOCKED"
    assert ApprovalRequest.objects.count() == 0 and erp.effects() == []


def test_a_write_after_reading_a_note_needs_a_person_because_of_the_note(
    erp: ERP, supervisor_b
) -> None:
    """After outside content entered the session, even the tenant's own close is tainted."""
    executor = lab._executor(supervisor_b)
    executor.call("read_order", {"order_id": "743"}, origins={"order_id": "typed"})
    own = {"order_id": "743", "reason": "Vistoria concluída hoje"}
    outcome = executor.call("request_close", own, origins=dict.fromkeys(own, "typed"))
    assert outcome["outcome"] == "CONFIRM"
    assert "tainted_call" in outcome["reasons"]
    assert erp.effects() == []
