"""The executor: one effect per intent, the write switch, tenancy, confirmation, PARTIAL, undo."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from console.models import AuditRow, Event
from guard import executor as executor_module
from guard.approvals import approval_deny, approval_grant
from guard.executor import Executor, Replayed, ToolBinding, counters, write_switch_set
from guard.models import ApprovalRequest, Effect, PendingStep
from guard.services import session_create

pytestmark = pytest.mark.django_db

AMOUNT = {"type": "number", "exclusiveMinimum": 0, "maximum": 1000}
CATALOGUE: dict[str, Any] = {
    "agents": {"till": {"tools": ["look", "pay", "unpay", "ship", "stamp"]}},
    "tools": [
        {
            "name": "look",
            "description": "Reads an account.",
            "kind": "read",
            "parameters": {
                "type": "object",
                "properties": {"account": {"type": "string"}, "tenant": {"type": "string"}},
                "required": ["account"],
                "additionalProperties": False,
            },
        },
        {
            "name": "pay",
            "description": "Pays an amount from an account.",
            "kind": "write",
            "idempotent": True,
            "parameters": {
                "type": "object",
                "properties": {
                    "account": {"type": "string"},
                    "amount": AMOUNT,
                    "pin": {"type": "string"},
                },
                "required": ["account", "amount"],
                "additionalProperties": False,
            },
            "secret": ["pin"],
            "compensation": {
                "tool": "unpay",
                "bind": {"account": "arguments.account", "amount": "arguments.amount"},
            },
        },
        {
            "name": "unpay",
            "description": "Gives a payment back.",
            "kind": "write",
            "idempotent": True,
            "parameters": {
                "type": "object",
                "properties": {"account": {"type": "string"}, "amount": AMOUNT},
                "required": ["account", "amount"],
                "additionalProperties": False,
            },
        },
        {
            "name": "ship",
            "description": "Ships the goods; nothing brings them back.",
            "kind": "write",
            "irreversible": True,
            "parameters": {"type": "object", "properties": {"account": {"type": "string"}}},
        },
        {
            "name": "stamp",
            "description": "Stamps an account; not retry-safe.",
            "kind": "write",
            "parameters": {"type": "object", "properties": {"account": {"type": "string"}}},
        },
    ],
}
TYPED = {"account": "typed", "amount": "typed", "pin": "typed"}


class Bank:
    """A tool side that applies each key once and can fail in the ways the notebook lists."""

    def __init__(self) -> None:
        self.effects: list[dict[str, Any]] = []
        self.keys: dict[str, Any] = {}
        self.timeouts = 0  # this many calls persist the effect and then time out
        self.audit_down = False
        self.audited: list[str] = []

    def pay(self, arguments: dict[str, Any], context) -> Any:  # noqa: ANN001
        if context.key in self.keys:
            return Replayed(self.keys[context.key])
        result = {"paid": arguments["amount"], "tenant": context.tenant}
        self.effects.append({"tool": "pay", **arguments, "key": context.key})
        self.keys[context.key] = result
        if self.timeouts:
            self.timeouts -= 1
            raise TimeoutError("the answer was lost after the payment")
        return result

    def unpay(self, arguments: dict[str, Any], context) -> Any:  # noqa: ANN001
        if context.key in self.keys:
            return Replayed(self.keys[context.key])
        self.effects.append({"tool": "unpay", **arguments})
        self.keys[context.key] = {"returned": arguments["amount"]}
        return self.keys[context.key]


BANK = Bank()


def audit_trail(result: Any, context: dict[str, Any]) -> None:
    if BANK.audit_down:
        raise ConnectionError("the audit service does not answer")
    BANK.audited.append(context["key"])


def bindings(bank: Bank) -> dict[str, ToolBinding]:
    return {
        "look": ToolBinding(lambda arguments, context: {"account": arguments["account"]}),
        "pay": ToolBinding(bank.pay, secondary=(f"{__name__}.audit_trail",)),
        "unpay": ToolBinding(bank.unpay),
        "ship": ToolBinding(lambda arguments, context: {"shipped": True}),
        "stamp": ToolBinding(lambda arguments, context: {"stamped": True}),
    }


@pytest.fixture
def act(actor_for, organisation):
    return lambda user: actor_for(user, organisation)


@pytest.fixture
def bank():
    global BANK
    BANK = Bank()
    return BANK


@pytest.fixture
def till(editor, act, bank):
    actor = act(editor)
    session = session_create(actor=actor, agent="till", catalogue=CATALOGUE)
    return Executor(actor=actor, session=session, bindings=bindings(bank), timeout_backoff=0)


def confirmed(till: Executor, approver_actor, tool: str, arguments: dict[str, Any]):  # noqa: ANN001
    """Call, have the approver approve, resume: the outcome after the person said yes."""
    asked = till.call(tool, arguments, origins=TYPED)
    assert asked["outcome"] == "CONFIRM", asked
    approval_grant(
        actor=approver_actor, request=ApprovalRequest.objects.get(public_id=asked["approval"])
    )
    return till.resume(asked)


def test_a_write_waits_for_a_person_then_runs_once(till, bank, approver, act):
    done = confirmed(till, act(approver), "pay", {"account": "A-1", "amount": 10})
    assert done["outcome"] == "SUCCEEDED" and done["result"] == {"paid": 10, "tenant": "acme"}
    assert len(bank.effects) == 1 and bank.audited == [done["key"]]
    panel = counters(till.actor.organisation)["pay"]
    assert panel["effects"] == 1 and panel["schema_valid"] == 1
    assert Effect.objects.get().status == "done"


def test_a_timeout_after_the_effect_is_retried_with_the_same_key(till, bank, approver, act):
    bank.timeouts = 1
    done = confirmed(till, act(approver), "pay", {"account": "A-1", "amount": 10})
    assert done["outcome"] == "SUCCEEDED" and done["duplicate"] is True
    assert len(bank.effects) == 1
    panel = counters(till.actor.organisation)["pay"]
    assert (panel["effects"], panel["duplicates_suppressed"]) == (1, 1)


def test_a_retry_of_a_done_write_answers_from_the_ledger(till, bank, approver, act):
    first = confirmed(till, act(approver), "pay", {"account": "A-1", "amount": 10})
    again = till.call("pay", {"account": "A-1", "amount": 10}, origins=TYPED)
    assert again["outcome"] == "SUCCEEDED" and again["duplicate"] is True
    assert again["key"] == first["key"] and again["result"] == first["result"]
    assert len(bank.effects) == 1
    assert counters(till.actor.organisation)["pay"]["duplicates_suppressed"] == 1
    # The same call after another one is a new intent, with a key of its own.
    till.call("look", {"account": "A-1"})
    later = till.call("pay", {"account": "A-1", "amount": 10}, origins=TYPED)
    assert later["outcome"] == "CONFIRM"


def test_the_key_cannot_be_rotated_by_a_retry(monkeypatch, till, bank, approver, act):
    """Mutation of the retry control: a new key per attempt gives two effects, which we see."""
    monkeypatch.setattr(executor_module, "_retry_key", lambda key, attempt: f"{key}-{attempt}")
    bank.timeouts = 1
    confirmed(till, act(approver), "pay", {"account": "A-1", "amount": 10})
    assert len(bank.effects) == 2


def test_bad_arguments_are_rejected_and_nothing_runs(till, bank):
    out = till.call("pay", {"account": "A-1", "amount": 10, "extra": True}, origins=TYPED)
    assert out["outcome"] == "REJECTED" and out["reasons"][0].startswith("argument_schema")
    assert bank.effects == [] and not Effect.objects.exists()
    assert counters(till.actor.organisation)["pay"]["schema_rejected"] == 1


def test_an_unknown_tool_counts_in_neither_schema_counter(till):
    out = till.call("nope", {})
    assert out["outcome"] == "REFUSED"
    assert "nope" not in counters(till.actor.organisation)


def test_writes_switched_off_block_writes_and_keep_reads(till, bank, editor, act):
    write_switch_set(actor=act(editor), tool="", enabled=False)
    assert till.call("look", {"account": "A-1"})["outcome"] == "SUCCEEDED"
    out = till.call("pay", {"account": "A-1", "amount": 10}, origins=TYPED)
    assert (out["outcome"], out["reasons"]) == ("BLOCKED", ["writes_disabled"])
    assert bank.effects == []
    assert counters(till.actor.organisation)["pay"]["blocked_actions"] == 1
    assert AuditRow.objects.filter(action="writes.disabled").count() == 1
    write_switch_set(actor=act(editor), tool="", enabled=True)
    write_switch_set(actor=act(editor), tool="pay", enabled=False)
    assert till.call("pay", {"account": "A-1", "amount": 10}, origins=TYPED)["outcome"] == "BLOCKED"
    assert till.call("ship", {"account": "A-1"}, origins=TYPED)["outcome"] == "CONFIRM"


def test_an_auditor_cannot_switch_writes(auditor, act):
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        write_switch_set(actor=act(auditor), tool="", enabled=False)


def test_another_tenant_named_in_the_arguments_is_blocked(till):
    out = till.call("look", {"account": "A-1", "tenant": "globex"})
    assert (out["outcome"], out["reasons"]) == ("BLOCKED", ["tenant: tenant"])
    assert till.call("look", {"account": "A-1", "tenant": "acme"})["outcome"] == "SUCCEEDED"


def test_the_domain_check_runs_before_anyone_is_asked(editor, act, bank):
    actor = act(editor)
    session = session_create(actor=actor, agent="till", catalogue=CATALOGUE)
    own = bindings(bank)
    own["pay"] = ToolBinding(
        bank.pay, authorize=lambda arguments, context: arguments["account"] == "A-1"
    )
    till = Executor(actor=actor, session=session, bindings=own)
    out = till.call("pay", {"account": "B-9", "amount": 10}, origins=TYPED)
    assert (out["outcome"], out["reasons"]) == ("BLOCKED", ["authorization_denied"])
    assert not ApprovalRequest.objects.exists() and bank.effects == []


def test_a_denied_confirmation_runs_nothing_and_counts(till, bank, approver, act):
    asked = till.call("pay", {"account": "A-1", "amount": 10}, origins=TYPED)
    approval_deny(
        actor=act(approver), request=ApprovalRequest.objects.get(public_id=asked["approval"])
    )
    out = till.resume(asked)
    assert out["outcome"] == "CANCELLED" and bank.effects == []
    assert counters(till.actor.organisation)["pay"]["confirmation_denied"] == 1


def test_a_failed_secondary_step_is_partial_and_reconciled_without_a_second_write(
    till, bank, approver, act
):
    bank.audit_down = True
    out = confirmed(till, act(approver), "pay", {"account": "A-1", "amount": 10})
    assert out["outcome"] == "PARTIAL" and out["pending"] == [f"{__name__}.audit_trail"]
    assert counters(till.actor.organisation)["pay"]["partial_results"] == 1
    step = PendingStep.objects.get()
    assert step.status == "pending" and "ConnectionError" in step.last_error
    bank.audit_down = False
    PendingStep.objects.update(next_attempt_at=step.created_at)
    assert executor_module.reconcile_pending() == 1
    assert PendingStep.objects.get().status == "done"
    assert len(bank.effects) == 1 and bank.audited == [out["key"]]
    assert Event.objects.filter(verdict="reconciled").count() == 1


def test_a_refusal_mid_run_undoes_the_earlier_writes_last_first(till, bank, approver, act):
    approver_actor = act(approver)
    confirmed(till, approver_actor, "pay", {"account": "A-1", "amount": 10})
    confirmed(till, approver_actor, "ship", {"account": "A-1"})
    confirmed(till, approver_actor, "pay", {"account": "A-2", "amount": 5})
    out = till.call("pay", {"account": "A-3", "amount": 5000}, origins=TYPED)
    assert out["outcome"] == "REJECTED"
    assert [(step["tool"], step["status"]) for step in out["undo"]] == [
        ("pay", "compensated"),
        ("ship", "irreversible"),
        ("pay", "compensated"),
    ]
    assert [effect["tool"] for effect in bank.effects] == ["pay", "pay", "unpay", "unpay"]
    assert bank.effects[2]["account"] == "A-2" and bank.effects[3]["account"] == "A-1"
    assert till.undo() == []  # nothing left to undo, and nothing undone twice


def test_a_claimed_write_of_a_tool_that_cannot_replay_is_uncertain(till, approver, act):
    def crash(arguments, context):  # noqa: ANN001, ANN202
        raise TimeoutError("no answer")

    till.bindings["stamp"] = ToolBinding(crash)
    out = confirmed(till, act(approver), "stamp", {"account": "A-1"})
    assert out["outcome"] == "UNCERTAIN"
    assert Effect.objects.get().status == "claimed"
    till.bindings["stamp"] = ToolBinding(lambda arguments, context: {"stamped": True})
    again = till.call("stamp", {"account": "A-1"}, origins={"account": "typed"})
    # The check asks again; once approved the ledger says an attempt may have run: no new call.
    assert again["outcome"] == "CONFIRM"
    approval_grant(
        actor=act(approver), request=ApprovalRequest.objects.get(public_id=again["approval"])
    )
    assert till.resume(again)["reasons"] == ["effect_uncertain"]


def test_secrets_appear_in_no_log_event_or_audit_row(till, approver, act, caplog):
    planted = "Bearer SYNTH-7f3a9c1e5d2b8a40-TOKEN"
    till.credentials = {"authorization": planted}
    with caplog.at_level(logging.DEBUG):
        confirmed(
            till, act(approver), "pay", {"account": "A-1", "amount": 10, "pin": "4242-SECRET-PIN"}
        )
        till.call("look", {"account": planted})
    written = json.dumps(
        [
            list(Event.objects.values()),
            list(AuditRow.objects.values()),
            list(Effect.objects.values("arguments", "result", "error")),
        ],
        default=str,
    )
    logs = caplog.text
    for secret in ("SYNTH-7f3a9c1e5d2b8a40-TOKEN", "4242-SECRET-PIN"):
        assert secret not in written
        assert secret not in logs
    assert '"tool": "pay"' in logs  # the log line is there, redacted


def test_a_check_alone_keeps_secret_arguments_out_of_its_event(till):
    from guard.services import session_check

    session_check(
        actor=till.actor,
        session=till.session,
        data={"tool": "pay", "arguments": {"account": "A-1", "amount": 1, "pin": "9911-PIN"}},
    )
    assert "9911-PIN" not in json.dumps(list(Event.objects.values("detail")))


def test_a_retry_racing_the_first_attempt_counts_one_effect(till, bank, approver, act):
    """Another process retries while the first attempt is still in the tool: both finish, the
    tool applied the key once, and the panel says one effect and one suppressed duplicate."""
    asked = till.call("pay", {"account": "A-1", "amount": 10}, origins=TYPED)
    request = ApprovalRequest.objects.get(public_id=asked["approval"])
    approval_grant(actor=act(approver), request=request)
    request.refresh_from_db()
    other = Executor(
        actor=till.actor, session=till.session, bindings=bindings(bank), timeout_backoff=0
    )
    raced: list[dict] = []

    def pay_while_another_retries(arguments, context):  # noqa: ANN001, ANN202
        result = bank.pay(arguments, context)
        raced.append(other.call("pay", arguments, origins=TYPED, token=request.token))
        return result

    till.bindings["pay"] = ToolBinding(pay_while_another_retries)
    first = till.resume(asked)
    assert raced[0]["outcome"] == "SUCCEEDED" and raced[0]["duplicate"] is True
    assert first["outcome"] == "SUCCEEDED" and len(bank.effects) == 1
    panel = counters(till.actor.organisation)["pay"]
    assert (panel["effects"], panel["duplicates_suppressed"]) == (1, 1)
    # One write, one entry of the signed history: the attempt that finished second records none.
    till.session.refresh_from_db()
    assert len(till.session.history["entries"]) == 1


def test_the_approvals_page_and_api_hide_a_secret_argument(till, approver, client_for):
    asked = till.call("pay", {"account": "A-1", "amount": 10, "pin": "5150-PIN"}, origins=TYPED)
    client = client_for(approver)
    assert "5150-PIN" not in client.get("/approvals/").content.decode()
    answer = client.get(f"/v1/approvals/{asked['approval']}").json()
    assert answer["arguments"]["account"] == "A-1" and "5150-PIN" not in json.dumps(answer)
