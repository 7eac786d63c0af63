"""The ERP example on real processes: one killed after the effect, a worker reconciling PARTIAL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from examples.erp import lab
from examples.erp.synthetic_erp import CRASH_EXIT_CODE, ERP, PATH_VARIABLE
from guard.approvals import approval_grant
from guard.executor import counters
from guard.models import ApprovalRequest, Effect, PendingStep
from tests.worker import flush_broker, running_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def erp(tmp_path: Path, monkeypatch) -> ERP:  # noqa: ANN001
    erp = ERP.create(tmp_path / "erp.sqlite3")
    monkeypatch.setenv(PATH_VARIABLE, str(erp.path))
    return erp


def resume_elsewhere(actor, executor, outcome: dict) -> subprocess.CompletedProcess:  # noqa: ANN001
    """Resume the confirmed call in a new process, on the test database and the same ERP."""
    from django.db import connection

    given = {
        "organisation": actor.organisation.slug,
        "username": actor.label.removeprefix("user:"),
        "user_id": actor.user_id,
        "role": actor.role,
        "session": str(executor.session.public_id),
        "outcome": outcome,
    }
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings.test",
        "STALWART_DATABASE_NAME": str(connection.settings_dict["NAME"]),
    }
    return subprocess.run(
        [sys.executable, "-m", "tests.examples_erp.resume", json.dumps(given)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_process_killed_between_the_effect_and_the_answer_leaves_one_effect(erp: ERP) -> None:
    supervisor, approver = lab._actor(*lab.CAST[0]), lab._actor(*lab.CAST[1])
    executor = lab._executor(supervisor)
    arguments = {"order_id": "742", "reason": lab.REASON}
    asked = executor.call("request_close", arguments, origins=dict.fromkeys(arguments, "typed"))
    assert asked["outcome"] == "CONFIRM"
    approval_grant(actor=approver, request=ApprovalRequest.objects.get(public_id=asked["approval"]))

    erp.set_fault("crash_after_effect")
    killed = resume_elsewhere(supervisor, executor, asked)
    assert killed.returncode == CRASH_EXIT_CODE, killed.stderr
    assert killed.stdout == ""  # it never answered
    assert len(erp.effects()) == 1
    (claimed,) = Effect.objects.all()
    assert claimed.status == Effect.Status.CLAIMED  # the ledger does not know how it ended

    retried = resume_elsewhere(supervisor, executor, asked)
    assert retried.returncode == 0, retried.stderr
    outcome = json.loads(retried.stdout)
    assert outcome["outcome"] == "SUCCEEDED" and outcome["duplicate"] is True
    assert outcome["key"] == claimed.key == erp.effects()[0]["idempotency_key"]
    assert len(erp.effects()) == 1
    assert counters(supervisor.organisation)["request_close"]["duplicates_suppressed"] == 1
    claimed.refresh_from_db()
    assert claimed.status == Effect.Status.DONE
    assert [line["idempotency_key"] for line in erp.audit_trail()] == [claimed.key]


def test_a_partial_close_is_reconciled_by_a_worker_and_never_sent_again(erp: ERP) -> None:
    report, violations = lab.evaluate("partial", erp=erp)
    assert violations == [] and len(report["effects"]) == 1
    (effect,) = report["effects"]
    closes = [r for r in erp.requests() if r["action"] == "request_close"]

    erp.set_fault("audit_unavailable", on=False)  # the audit trail is back
    flush_broker()
    log = erp.path.with_name("worker.log")
    with running_worker(beat=True, env={PATH_VARIABLE: str(erp.path)}, log=log):
        deadline = time.monotonic() + 60
        # The worker writes the audit line, then marks the step done in its own commit: it is
        # stopped only once both are there (stopped between the two, the step stays pending).
        while time.monotonic() < deadline and not (
            erp.audit_trail()
            and PendingStep.objects.filter(status=PendingStep.Status.DONE).exists()
        ):
            time.sleep(0.3)
    assert [line["idempotency_key"] for line in erp.audit_trail()] == [effect["idempotency_key"]]
    assert PendingStep.objects.get().status == PendingStep.Status.DONE
    assert len(erp.effects()) == 1
    assert [r for r in erp.requests() if r["action"] == "request_close"] == closes
