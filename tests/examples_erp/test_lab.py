"""The ERP lab through the real executor: the baseline holds, and each control removed is caught."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from examples.erp import lab
from examples.erp.synthetic_erp import INJECTED_NOTE, PATH_VARIABLE
from guard import executor as executor_module

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "examples" / "erp" / "lab.py"


def outcomes(report: dict) -> dict[str, str]:
    return {item["scenario"]: item["outcome"] for item in report["scenarios"]}


@pytest.mark.django_db
class TestInProcess:
    def test_the_baseline_holds_every_piece_of_the_notebooks_evidence(self) -> None:
        report, violations = lab.evaluate()
        assert violations == [] and report["violations"] == []
        assert outcomes(report) == {
            "invalid_arguments": "REJECTED",
            "cross_tenant_close": "BLOCKED",
            "confirmation_denied": "CANCELLED",
            "timeout_after_effect": "SUCCEEDED",
            "injected_note_read": "SUCCEEDED",
        }
        assert [(e["tenant"], e["order_id"]) for e in report["effects"]] == [("shopping-a", "742")]
        panel = report["panel"]["shopping-a"]["request_close"]
        assert panel["schema_rejected"] == 1
        assert panel["blocked_actions"] == 1
        assert panel["confirmation_denied"] == 1
        assert panel["duplicates_suppressed"] == 1
        assert panel["partial_results"] == 0
        assert report["pending"] == [] and len(report["audit_trail"]) == 1

    def test_the_timeout_is_retried_with_the_same_key_as_a_duplicate(self) -> None:
        report, _ = lab.evaluate()
        retried = next(s for s in report["scenarios"] if s["scenario"] == "timeout_after_effect")
        assert retried["steps"][-1]["duplicate"] is True
        (effect,) = report["effects"]
        assert report["audit_trail"][0]["idempotency_key"] == effect["idempotency_key"]

    def test_the_logs_say_who_what_and_which_key_and_never_the_secret(self) -> None:
        report, _ = lab.evaluate()
        logs = report["logs"]
        assert logs, "the executor logged nothing"
        assert lab.SECRET not in json.dumps(logs)
        ran = [line for line in logs if line.get("outcome") == "SUCCEEDED" and line.get("key")]
        assert ran and ran[0]["tenant"] == "shopping-a" and ran[0]["actor"] == "user:supervisor-a"
        assert ran[0]["target"]["signoff_code"] == "[redacted]"

    def test_the_injected_note_is_shown_as_data(self) -> None:
        report, _ = lab.evaluate()
        read = next(s for s in report["scenarios"] if s["scenario"] == "injected_note_read")
        assert read["steps"][-1]["result"]["note"] == INJECTED_NOTE
        # What the note asks for (close 742) never happened beyond the one close that was asked.
        assert len(report["effects"]) == 1

    @pytest.mark.parametrize(
        ("fault", "violation"),
        [
            ("schema", "invalid arguments reached the ERP"),
            ("auth", "cross-tenant action reached the ERP"),
            ("confirmation", "action ran after human denial"),
            ("retry", "retry used a new key and duplicated the effect"),
            ("logs", "authorization secret leaked into logs"),
        ],
    )
    def test_each_control_switched_off_is_caught_by_name(self, fault: str, violation: str) -> None:
        report, violations = lab.evaluate(fault)
        assert violation in violations
        assert report["mode"] == fault and report["violations"] == violations

    def test_a_fault_switches_its_control_off_only_while_the_lab_runs(self) -> None:
        controls = (executor_module._authorised, executor_module._confirmation_needed)
        lab.evaluate("auth")
        lab.evaluate("confirmation")
        assert (executor_module._authorised, executor_module._confirmation_needed) == controls

    def test_partial_reports_the_audit_step_pending_without_repeating_the_write(self) -> None:
        report, violations = lab.evaluate("partial")
        assert violations == []
        assert outcomes(report)["timeout_after_effect"] == "PARTIAL"
        assert len(report["effects"]) == 1 and report["audit_trail"] == []
        (pending,) = report["pending"]
        assert pending["name"] == "examples.erp.tools.write_audit_trail"
        assert pending["effect__key"] == report["effects"][0]["idempotency_key"]
        assert report["panel"]["shopping-a"]["request_close"]["partial_results"] == 1

    def test_rollback_blocks_the_write_keeps_reads_and_records_no_effect(self) -> None:
        report, violations = lab.evaluate(rollback_demo=True)
        assert violations == [] and report["mode"] == "rollback"
        assert outcomes(report) == {
            "close_with_writes_off": "BLOCKED",
            "read_with_writes_off": "SUCCEEDED",
        }
        closed = report["scenarios"][0]["steps"]
        assert [step["outcome"] for step in closed] == ["BLOCKED"]  # no person was asked
        assert closed[0]["reasons"] == ["writes_disabled"]
        assert report["effects"] == []
        assert report["panel"]["shopping-a"]["request_close"]["blocked_actions"] == 1

    def test_the_lab_leaves_the_erp_path_of_the_process_as_it_found_it(self, monkeypatch) -> None:  # noqa: ANN001
        monkeypatch.setenv(PATH_VARIABLE, "/nowhere/erp.sqlite3")
        lab.evaluate()
        assert os.environ[PATH_VARIABLE] == "/nowhere/erp.sqlite3"

    def test_an_unknown_fault_is_refused(self) -> None:
        with pytest.raises(ValueError, match="no fault"):
            lab.evaluate("disk")


def run_lab(*args: str) -> subprocess.CompletedProcess:
    """The lab as a person runs it: its own process, its own throwaway database."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DJANGO_SETTINGS_MODULE", "STALWART_DATABASE_NAME", PATH_VARIABLE)
    }
    return subprocess.run(
        [sys.executable, str(LAB), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_command_prints_the_baseline_report_and_exits_0() -> None:
    done = run_lab()
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["mode"] == "none" and report["violations"] == []
    assert len(report["effects"]) == 1
    assert "Traceback" not in done.stderr


def test_the_command_exits_1_naming_the_violation_of_a_fault() -> None:
    done = run_lab("--fault", "retry")
    assert done.returncode == 1, done.stderr
    assert "retry used a new key and duplicated the effect" in json.loads(done.stdout)["violations"]


def test_the_command_exits_2_on_an_unknown_argument() -> None:
    done = run_lab("--bogus")
    assert done.returncode == 2
    assert "unrecognized arguments: --bogus" in done.stderr and done.stdout == ""
