"""The work-order tools: a strict catalogue, the tenant from the identity, the ERP's key passed on."""

from __future__ import annotations

from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from examples.erp import tools
from examples.erp.synthetic_erp import ERP, PATH_VARIABLE, AuditUnavailable
from guard import engine
from guard.engine.execution import ExecutionContext, Replayed

AGENT_FILE = Path(tools.__file__).with_name("agent.yaml")
KEY = "ik1-" + "c" * 64
REASON = "Inspeção validada pelo supervisor"


@pytest.fixture
def erp(tmp_path: Path, monkeypatch) -> ERP:  # noqa: ANN001
    erp = ERP.create(tmp_path / "erp.sqlite3")
    monkeypatch.setenv(PATH_VARIABLE, str(erp.path))
    return erp


def context(tenant: str = "shopping-a", key: str = KEY) -> ExecutionContext:
    return ExecutionContext(
        tenant=tenant, person="user:sup", session="s", agent="supervisor", tool="t", key=key
    )


def validator(name: str) -> Draft202012Validator:
    tool = next(tool for tool in tools.TOOLS if tool["name"] == name)
    return Draft202012Validator(tool["parameters"])


def test_agent_yaml_loads_with_the_two_tools_for_the_supervisor() -> None:
    loaded = engine.load_agent_yaml(
        AGENT_FILE.read_text(encoding="utf-8"), modules={"erp.tools": tools.TOOLS}
    )
    catalogue = loaded.catalogue
    assert catalogue.agents["supervisor"].tools == {"read_order", "request_close"}
    assert catalogue.tools["read_order"].kind == "read"
    close = catalogue.tools["request_close"]
    assert close.kind == "write" and close.idempotent and close.secret == {"signoff_code"}


def test_every_schema_is_a_valid_2020_12_schema() -> None:
    for tool in tools.TOOLS:
        Draft202012Validator.check_schema(tool["parameters"])
        Draft202012Validator.check_schema(tool["result_schema"])
        assert tool["parameters"]["additionalProperties"] is False


@pytest.mark.parametrize(
    "arguments",
    [
        {"order_id": "742", "reason": REASON, "dangerous_extra": True},
        {"order_id": "742", "reason": REASON, "tenant": "shopping-b"},
        {"order_id": "74", "reason": REASON},
        {"order_id": "7420", "reason": REASON},
        {"order_id": 742, "reason": REASON},
        {"order_id": "742", "reason": "curta"},
        {"order_id": "742", "reason": "x" * 121},
        {"order_id": "742"},
    ],
)
def test_the_close_contract_refuses_what_the_notebook_refuses(arguments: dict) -> None:
    assert list(validator("request_close").iter_errors(arguments))


def test_the_close_contract_accepts_a_proper_proposal() -> None:
    assert not list(validator("request_close").iter_errors({"order_id": "742", "reason": REASON}))


def test_the_engine_refuses_an_extra_argument_with_its_pointer() -> None:
    check = engine.ToolCheck(
        {"agents": {"supervisor": {"tools": ["request_close"]}}, "tools": tools.TOOLS},
        key=b"k" * 32,
    )
    decision = check.check(
        {
            "tool": "request_close",
            "agent": "supervisor",
            "arguments": {"order_id": "742", "reason": REASON, "dangerous_extra": True},
        },
        session=check.new_history("s"),
    )
    assert decision.decision == "refuse" and decision.reasons[0].startswith("argument_schema")


def test_read_order_reads_for_the_identitys_tenant(erp: ERP) -> None:
    assert tools.read_order({"order_id": "742"}, context())["status"] == "open"
    with pytest.raises(PermissionError):
        tools.read_order({"order_id": "743"}, context())


def test_request_close_passes_the_executors_key_and_answers_replayed_for_a_known_key(
    erp: ERP,
) -> None:
    arguments = {"order_id": "742", "reason": REASON, "signoff_code": "code-1234"}
    first = tools.request_close(arguments, context())
    assert first["signed_off"] is True and erp.effects()[0]["idempotency_key"] == KEY
    again = tools.request_close(arguments, context())
    assert isinstance(again, Replayed) and again.result == first
    assert len(erp.effects()) == 1


def test_the_sign_off_code_is_never_stored_by_the_erp(erp: ERP) -> None:
    tools.request_close(
        {"order_id": "742", "reason": REASON, "signoff_code": "c0de-9876"}, context()
    )
    assert "c0de-9876" not in erp.path.read_bytes().decode("utf-8", "replace")
    assert "c0de-9876" not in repr(erp.effects())


def test_request_close_without_a_key_is_refused_by_the_erp(erp: ERP) -> None:
    with pytest.raises(ValueError):
        tools.request_close({"order_id": "742", "reason": REASON}, context(key=""))
    assert erp.effects() == []


def test_authorize_holds_only_for_an_order_of_the_identitys_tenant(erp: ERP) -> None:
    assert tools.order_of_tenant({"order_id": "742"}, context()) is True
    assert tools.order_of_tenant({"order_id": "743"}, context()) is False
    assert tools.order_of_tenant({"order_id": "999"}, context()) is False
    assert tools.order_of_tenant({"order_id": "743"}, context("shopping-b")) is True


def test_the_audit_trail_step_writes_once_and_raises_while_unavailable(erp: ERP) -> None:
    result = {"order_id": "742", "status": "close_requested"}
    shown = {"tenant": "shopping-a", "key": KEY, "person": "user:sup", "tool": "request_close"}
    erp.set_fault("audit_unavailable")
    with pytest.raises(AuditUnavailable):
        tools.write_audit_trail(result, shown)
    erp.set_fault("audit_unavailable", on=False)
    tools.write_audit_trail(result, shown)
    tools.write_audit_trail(result, shown)
    assert [line["idempotency_key"] for line in erp.audit_trail()] == [KEY]


def test_the_audit_step_is_named_by_a_path_that_imports() -> None:
    import importlib

    module, _, name = tools.AUDIT_STEP.rpartition(".")
    assert getattr(importlib.import_module(module), name) is tools.write_audit_trail
