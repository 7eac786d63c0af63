"""The synthetic ERP: its records survive in the file, it applies a key once, it re-checks tenants."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from examples.erp.synthetic_erp import (
    CRASH_EXIT_CODE,
    ERP,
    INJECTED_NOTE,
    AuditUnavailable,
    ERPError,
    InvalidRequest,
)

ROOT = Path(__file__).resolve().parents[2]
KEY = "ik1-" + "a" * 64
REASON = "Inspeção validada pelo supervisor"


@pytest.fixture
def erp(tmp_path: Path) -> ERP:
    return ERP.create(tmp_path / "erp.sqlite3")


def close(erp: ERP, key: str = KEY, order_id: str = "742", tenant: str = "shopping-a"):
    return erp.request_close(order_id=order_id, tenant=tenant, reason=REASON, key=key)


def test_a_new_erp_holds_two_open_orders_of_two_tenants_and_no_effect(erp: ERP) -> None:
    assert erp.read_order("742", "shopping-a")["status"] == "open"
    assert erp.read_order("743", "shopping-b")["note"] == INJECTED_NOTE
    assert erp.effects() == [] and erp.faults() == []


def test_an_order_of_another_tenant_is_refused_and_the_refusal_is_logged(erp: ERP) -> None:
    with pytest.raises(PermissionError):
        erp.read_order("743", "shopping-a")
    assert erp.requests() == [
        {"action": "read_order", "tenant": "shopping-a", "order_id": "743", "answer": "refused"}
    ]


def test_a_close_is_recorded_once_and_the_order_changes(erp: ERP) -> None:
    result, replayed = close(erp)
    assert replayed is False
    assert result == {
        "order_id": "742",
        "status": "close_requested",
        "reason": REASON,
        "signed_off": False,
    }
    assert [(e["order_id"], e["idempotency_key"]) for e in erp.effects()] == [("742", KEY)]
    assert erp.read_order("742", "shopping-a")["status"] == "close_requested"


def test_a_key_already_applied_answers_the_original_result_and_records_nothing(erp: ERP) -> None:
    first, _ = close(erp)
    again, replayed = close(erp)
    assert replayed is True and again == first
    assert len(erp.effects()) == 1 and erp.replays() == 1


def test_a_new_key_for_the_same_order_is_a_new_effect(erp: ERP) -> None:
    close(erp)
    close(erp, key=KEY.replace("a", "b"))
    assert len(erp.effects()) == 2


def test_a_key_of_one_tenant_does_not_replay_for_another(erp: ERP) -> None:
    close(erp)
    with pytest.raises(PermissionError):
        close(erp, tenant="shopping-b")
    assert len(erp.effects()) == 1


def test_the_erp_refuses_another_tenants_order_itself_and_records_nothing(erp: ERP) -> None:
    with pytest.raises(PermissionError):
        close(erp, order_id="743")
    assert erp.requests()[-1] == {
        "action": "request_close",
        "tenant": "shopping-a",
        "order_id": "743",
        "answer": "refused",
    }
    assert erp.effects() == []
    assert erp.read_order("743", "shopping-b")["status"] == "open"


@pytest.mark.parametrize(
    ("order_id", "reason", "key"),
    [
        ("74", REASON, KEY),
        ("742\n", REASON, KEY),
        ("742", "short", KEY),
        ("742", "x" * 121, KEY),
        ("742", REASON, ""),
    ],
)
def test_the_erp_checks_its_own_invariants(erp: ERP, order_id: str, reason: str, key: str) -> None:
    with pytest.raises(InvalidRequest):
        erp.request_close(order_id=order_id, tenant="shopping-a", reason=reason, key=key)
    assert erp.effects() == []


def test_a_timeout_after_the_effect_keeps_the_effect_and_fires_once(erp: ERP) -> None:
    erp.set_fault("timeout_after_effect")
    with pytest.raises(TimeoutError):
        close(erp)
    assert len(erp.effects()) == 1 and erp.faults() == []
    _, replayed = close(erp)
    assert replayed is True and len(erp.effects()) == 1


def test_a_fault_set_on_the_file_is_seen_by_another_erp_object(erp: ERP) -> None:
    ERP(erp.path).set_fault("audit_unavailable")
    assert erp.faults() == ["audit_unavailable"]


def test_the_audit_trail_is_written_once_per_key_and_fails_while_unavailable(erp: ERP) -> None:
    entry = {"status": "close_requested"}
    erp.set_fault("audit_unavailable")
    with pytest.raises(AuditUnavailable):
        erp.write_audit(tenant="shopping-a", key=KEY, order_id="742", entry=entry)
    assert erp.audit_trail() == []
    erp.set_fault("audit_unavailable", on=False)
    assert erp.write_audit(tenant="shopping-a", key=KEY, order_id="742", entry=entry) is True
    assert erp.write_audit(tenant="shopping-a", key=KEY, order_id="742", entry=entry) is False
    assert len(erp.audit_trail()) == 1


def test_an_unknown_fault_is_refused(erp: ERP) -> None:
    with pytest.raises(ERPError, match="no fault"):
        erp.set_fault("disk_full")


def test_reset_puts_the_orders_back_and_forgets_every_record(erp: ERP) -> None:
    close(erp)
    erp.set_fault("audit_unavailable")
    erp.reset()
    assert erp.effects() == [] and erp.faults() == [] and erp.requests() == []
    assert erp.read_order("742", "shopping-a")["status"] == "open"


def test_without_a_file_named_in_the_environment_there_is_no_erp(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.delenv("STALWART_ERP_PATH", raising=False)
    with pytest.raises(ERPError, match="STALWART_ERP_PATH"):
        ERP.from_environment()


def test_a_process_killed_after_the_effect_leaves_the_effect_on_disk(erp: ERP) -> None:
    erp.set_fault("crash_after_effect")
    program = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from examples.erp.synthetic_erp import ERP
        ERP({str(erp.path)!r}).request_close(
            order_id="742", tenant="shopping-a", reason={REASON!r}, key={KEY!r}
        )
        print("answered")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == CRASH_EXIT_CODE and "answered" not in done.stdout
    assert len(erp.effects()) == 1 and erp.faults() == []
    _, replayed = close(erp)
    assert replayed is True and len(erp.effects()) == 1
