"""PARTIAL on real parts: the main write runs once, a real worker reconciles the pending step."""

from __future__ import annotations

import time

import pytest

from guard.approvals import approval_grant
from guard.counters import counters
from guard.executor import Executor, ToolBinding
from guard.models import ApprovalRequest, PendingStep
from guard.services import session_create
from tests.guard_console.test_executor import CATALOGUE, TYPED, Bank
from tests.worker import flush_broker, running_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_partial_write_is_reconciled_by_the_worker_and_never_repeated(
    tmp_path, monkeypatch, editor, approver, organisation, actor_for
):
    down, trail = tmp_path / "down", tmp_path / "trail"
    env = {"STALWART_TEST_AUDIT_DOWN": str(down), "STALWART_TEST_AUDIT_LOG": str(trail)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    down.touch()
    flush_broker()
    bank = Bank()
    actor = actor_for(editor, organisation)
    session = session_create(actor=actor, agent="till", catalogue=CATALOGUE)
    till = Executor(
        actor=actor,
        session=session,
        bindings={
            "pay": ToolBinding(bank.pay, secondary=("tests.guard_console.steps.audit_trail",))
        },
    )
    asked = till.call("pay", {"account": "A-1", "amount": 10}, origins=TYPED)
    approval_grant(
        actor=actor_for(approver, organisation),
        request=ApprovalRequest.objects.get(public_id=asked["approval"]),
    )
    out = till.resume(asked)
    assert out["outcome"] == "PARTIAL" and len(bank.effects) == 1
    assert not trail.exists()

    down.unlink()  # the audit service is back; a real worker (with its beat) reconciles
    with running_worker(beat=True, env=env):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if PendingStep.objects.get().status == "done":
                break
            time.sleep(0.3)
    assert PendingStep.objects.get().status == "done"
    assert trail.read_text().split() == [out["key"]]
    assert len(bank.effects) == 1  # the main write was never repeated
    panel = counters(organisation)["pay"]
    assert (panel["effects"], panel["partial_results"]) == (1, 1)
    # A retry of the call now answers SUCCEEDED from the ledger, with nothing pending.
    again = till.call("pay", {"account": "A-1", "amount": 10}, origins=TYPED)
    assert again["outcome"] == "SUCCEEDED" and again["duplicate"] is True
