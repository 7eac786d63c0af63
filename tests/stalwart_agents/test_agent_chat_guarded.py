"""`Agent.chat` on the guarded path: router, plan, tool check, firewall, executor, reply.

The shop is copied into a folder of its own for each test (its tools module under a fresh name,
so the order book starts afresh and the calls each tool gets can be counted), with the firewall
policy the test names beside it (`firewall: ./firewall.json`).
"""

from __future__ import annotations

import json
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from guard.engine import CatalogueInvalid, load_agent_yaml
from stalwart_agents import Agent, AgentFileError, SelectorUnavailableError

SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop"


def shop_copy(tmp_path: Path, policy: Any = None) -> tuple[Path, str]:
    package = f"guardedshop_{uuid.uuid4().hex[:10]}"
    folder = tmp_path / package
    folder.mkdir()
    shutil.copy(SHOP / "tools.py", folder / "tools.py")
    shutil.copy(SHOP / "policy.co", folder / "policy.co")
    text = (SHOP / "agent.yaml").read_text(encoding="utf-8")
    text = text.replace("python: shop.tools", f"python: {package}.tools")
    if policy is not None:
        text += "firewall: ./firewall.json   # the security team's rules\n"
        written = policy if isinstance(policy, str) else json.dumps(policy)
        (folder / "firewall.json").write_text(written, encoding="utf-8")
    (folder / "agent.yaml").write_text(text, encoding="utf-8")
    return folder / "agent.yaml", f"{package}.tools"


def spy(monkeypatch: pytest.MonkeyPatch, module_name: str, *tools: str) -> dict[str, list]:
    """Count every call each tool function gets (the executor looks functions up when it runs)."""
    module = sys.modules[module_name]
    calls: dict[str, list] = {}
    for tool in tools:
        original = getattr(module, tool)
        seen: list = calls.setdefault(tool, [])

        def wrapper(_original=original, _seen=seen, **arguments):
            _seen.append(arguments)
            return _original(**arguments)

        monkeypatch.setattr(module, tool, wrapper)
    return calls


def policy(*rules: dict[str, Any], default: str = "allow") -> dict[str, Any]:
    return {"name": "shop", "default_verdict": default, "rules": list(rules)}


def rule(name: str, tool: str, verdict: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "priority": 10, "tool_name_glob": tool, "verdict": verdict, **more}


# -- the firewall ---------------------------------------------------------------------------------


def test_a_firewall_deny_refuses_a_planned_read_naming_the_rule_and_nothing_runs(
    tmp_path, monkeypatch
):
    path, module = shop_copy(tmp_path, policy(rule("no-lookups", "get_order", "deny")))
    agent = Agent.from_file(path)
    calls = spy(monkeypatch, module, "get_order")
    reply = agent.chat("show order 4411", user="ana", agent="desk")
    assert calls["get_order"] == [] and reply.ran == []
    assert "no-lookups" in reply.text and reply.waiting is None
    gate = [c for c in reply.checks if c.get("gate") == "firewall"]
    assert gate and gate[0]["answer"]["verdict"] == "deny"
    assert gate[0]["decision"]["rule"] == "no-lookups"


def test_a_firewall_deny_refuses_a_write_before_anyone_is_asked(tmp_path, monkeypatch):
    path, module = shop_copy(tmp_path, policy(rule("no-refunds", "refund_card", "deny")))
    agent = Agent.from_file(path)
    calls = spy(monkeypatch, module, "get_order", "refund_card")
    reply = agent.chat("refund $20 on order 4411", user="ana", agent="desk")
    # The chain's read is allowed and runs; the refund the tool check would put to the person
    # is refused by the firewall first, so nobody is asked and nothing is refunded.
    assert [c["order_id"] for c in calls["get_order"]] == ["4411"]
    assert calls["refund_card"] == [] and reply.waiting is None
    assert "firewall: no-refunds" in reply.text
    after = agent.chat("yes", user="ana", agent="desk")
    assert calls["refund_card"] == [] and after.ran == []
    assert sys.modules[module].ORDERS["4411"]["status"] == "paid"


def test_require_approval_makes_an_allowed_read_a_confirm_that_the_person_answers(
    tmp_path, monkeypatch
):
    path, module = shop_copy(tmp_path, policy(rule("ask-first", "get_order", "require_approval")))
    agent = Agent.from_file(path)
    calls = spy(monkeypatch, module, "get_order")
    asked = agent.chat("show order 4411", user="ana", agent="desk")
    assert asked.waiting == "confirm" and asked.ran == [] and calls["get_order"] == []
    ran = agent.chat("yes", user="ana", agent="desk")
    assert [r["tool"] for r in ran.ran] == ["get_order"] and len(calls["get_order"]) == 1
    # Asked again, the person says no this time: nothing runs.
    agent.chat("show order 4412", user="ana", agent="desk")
    refused = agent.chat("no", user="ana", agent="desk")
    assert refused.ran == [] and len(calls["get_order"]) == 1


def test_allow_and_audit_verdicts_let_the_call_run(tmp_path, monkeypatch):
    path, module = shop_copy(tmp_path, policy(rule("watch-lookups", "get_order", "audit")))
    agent = Agent.from_file(path)
    calls = spy(monkeypatch, module, "get_order", "read_inbox")
    audited = agent.chat("show order 4411", user="ana", agent="desk")
    assert [r["tool"] for r in audited.ran] == ["get_order"]
    gate = [c for c in audited.checks if c.get("gate") == "firewall"]
    assert gate[0]["answer"]["verdict"] == "audit"
    allowed = agent.chat("read the inbox", user="ana", agent="desk")
    assert [r["tool"] for r in allowed.ran] == ["read_inbox"] and len(calls["read_inbox"]) == 1


def test_a_deny_by_default_refuses_every_call(tmp_path, monkeypatch):
    path, module = shop_copy(tmp_path, policy(default="deny"))
    agent = Agent.from_file(path)
    calls = spy(monkeypatch, module, "get_order")
    reply = agent.chat("show order 4411", user="ana", agent="desk")
    assert calls["get_order"] == [] and "default_verdict: deny" in reply.text


def test_a_firewall_file_that_breaks_stops_every_call_until_it_is_fixed(tmp_path, monkeypatch):
    path, module = shop_copy(tmp_path, policy())
    agent = Agent.from_file(path)
    calls = spy(monkeypatch, module, "get_order")
    firewall = path.parent / "firewall.json"
    firewall.write_text('{"name": "shop", "default_verdict": "allow", "rules": [', "utf-8")
    with pytest.raises(SelectorUnavailableError, match="firewall"):
        agent.chat("show order 4411", user="ana", agent="desk")
    firewall.unlink()
    with pytest.raises(SelectorUnavailableError, match="firewall"):
        agent.chat("show order 4411", user="ana", agent="desk")
    assert calls["get_order"] == []
    firewall.write_text(json.dumps(policy(rule("no-lookups", "get_order", "deny"))), "utf-8")
    reply = agent.chat("show order 4411", user="ana", agent="desk")
    assert calls["get_order"] == [] and "no-lookups" in reply.text


def test_a_firewall_that_cannot_evaluate_raises_and_nothing_runs(tmp_path, monkeypatch):
    path, module = shop_copy(tmp_path, policy())
    agent = Agent.from_file(path)
    calls = spy(monkeypatch, module, "get_order")

    def broken(call):
        raise RuntimeError("index lost")

    monkeypatch.setattr(agent.firewall._policy, "evaluate", broken)
    with pytest.raises(SelectorUnavailableError, match="firewall cannot answer"):
        agent.chat("show order 4411", user="ana", agent="desk")
    assert calls["get_order"] == []


def test_a_missing_firewall_file_is_an_agent_file_error_naming_the_key_and_its_line(tmp_path):
    path, _module = shop_copy(tmp_path, policy())
    (path.parent / "firewall.json").unlink()
    line = (
        path.read_text()
        .splitlines()
        .index("firewall: ./firewall.json   # the security team's rules")
    )
    with pytest.raises(AgentFileError) as caught:
        Agent.from_file(path, verify=False)
    assert f"agent.yaml:{line + 1}: firewall:" in str(caught.value)
    assert "does not exist" in str(caught.value)


def test_an_invalid_policy_is_refused_with_the_validators_field_paths(tmp_path):
    bad = policy(rule("odd", "get_order", "maybe"), default="sometimes")
    path, _module = shop_copy(tmp_path, bad)
    with pytest.raises(AgentFileError) as caught:
        Agent.from_file(path, verify=False)
    message = str(caught.value)
    assert "firewall:" in message and "not a valid policy" in message
    assert "default_verdict" in message and "rules[0].verdict" in message
    path.parent.joinpath("firewall.json").write_text("{not json", "utf-8")
    with pytest.raises(AgentFileError, match="not valid JSON"):
        Agent.from_file(path, verify=False)


def test_the_firewall_key_must_name_a_file():
    with pytest.raises(CatalogueInvalid) as caught:
        load_agent_yaml("agents: {desk: {tools: []}}\ntools: []\nfirewall: 42\n")
    assert [issue.path for issue in caught.value.issues] == ["firewall"]
    loaded = load_agent_yaml("agents: {desk: {tools: []}}\ntools: []\nfirewall: ./fw.json\n")
    assert loaded.firewall == "./fw.json"


# -- the executor ---------------------------------------------------------------------------------


def test_the_same_write_asked_twice_in_a_row_runs_once(tmp_path, monkeypatch):
    path, module = shop_copy(tmp_path)
    agent = Agent.from_file(path)
    calls = spy(monkeypatch, module, "get_order", "refund_card")
    first = agent.chat("refund $20 on order 4411", user="ana", agent="desk")
    assert first.waiting == "confirm"
    done = agent.chat("yes", user="ana", agent="desk")
    assert [r["tool"] for r in done.ran] == ["refund_card"]
    again = agent.chat("refund $20 on order 4411", user="ana", agent="desk")
    assert again.waiting == "confirm"
    replay = agent.chat("yes", user="ana", agent="desk")
    assert calls["refund_card"] == [{"order_id": "4411", "amount": 20}]
    assert replay.ran and replay.ran[0]["duplicate"] is True
    assert replay.ran[0]["result"] == {"order_id": "4411", "refunded": 20}
    assert replay.text.startswith("Already done")


def test_the_same_write_after_another_call_is_a_new_intent(tmp_path, monkeypatch):
    path, module = shop_copy(tmp_path)
    agent = Agent.from_file(path)
    calls = spy(monkeypatch, module, "get_order", "charge_card")
    for turn in ("charge order 4411 $40", "yes", "show order 4411"):
        agent.chat(turn, user="ana", agent="desk")
    agent.chat("charge order 4411 $40", user="ana", agent="desk")
    second = agent.chat("yes", user="ana", agent="desk")
    assert calls["charge_card"] == [{"order_id": "4411", "amount": 40}] * 2
    assert "duplicate" not in second.ran[0]


def test_the_shop_runs_end_to_end_through_the_executor(tmp_path):
    path, module = shop_copy(tmp_path)
    agent = Agent.from_file(path)
    chain = agent.chat("estorne 40,00 do pedido 4411", user="bia", agent="desk", language="pt-BR")
    assert [r["tool"] for r in chain.ran] == ["get_order"] and chain.waiting == "confirm"
    done = agent.chat("sim", user="bia", agent="desk", language="pt-BR")
    assert done.ran[0]["result"] == {"order_id": "4411", "refunded": 40.0}
    assert "duplicate" not in done.ran[0]
    assert sys.modules[module].ORDERS["4411"]["status"] == "refunded"
    failed = agent.chat("show order 9999", user="caio", agent="desk")
    assert failed.ran == [] and "there is no order `9999`" in failed.text
    assert "LookupError" not in failed.text


TICKETS = '''
"""Tickets: a write in the executor's own form, `(arguments, context)`."""

CALLS = []
TIMEOUTS = [0]

TOOLS = [
    {
        "name": "close_ticket",
        "description": "Closes a ticket, with a note for the team.",
        "kind": "write",
        "parameters": {
            "type": "object",
            "properties": {
                "ticket_id": {"type": "string", "pattern": "^[0-9]{1,6}$"},
                "note": {"type": "string", "minLength": 1, "maxLength": 200},
            },
            "required": ["ticket_id", "note"],
        },
    }
]


def close_ticket(arguments, context):
    CALLS.append((dict(arguments), context))
    if TIMEOUTS[0] > 0:
        TIMEOUTS[0] -= 1
        raise TimeoutError("the ticket system did not answer")
    return {"ticket_id": arguments["ticket_id"], "closed": True}
'''


def tickets(tmp_path: Path, firewall: dict[str, Any] | None = None) -> tuple[Agent, Any]:
    package = f"tickets_{uuid.uuid4().hex[:10]}"
    folder = tmp_path / package
    folder.mkdir()
    (folder / "tools.py").write_text(TICKETS, encoding="utf-8")
    text = f"agents:\n  desk:\n    tools: [close_ticket]\ntools:\n  - python: {package}.tools\n"
    if firewall is not None:
        (folder / "firewall.json").write_text(json.dumps(firewall), encoding="utf-8")
        text += "firewall: ./firewall.json\n"
    (folder / "agent.yaml").write_text(text, encoding="utf-8")
    agent = Agent.from_file(folder / "agent.yaml", verify=False)
    return agent, sys.modules[f"{package}.tools"]


def test_a_context_tool_gets_its_key_and_a_timeout_is_retried_with_the_same_key(tmp_path):
    agent, module = tickets(tmp_path)
    module.TIMEOUTS[0] = 1
    asked = agent.chat("close ticket 12 because the printer works again", user="dan")
    assert asked.waiting == "confirm"
    done = agent.chat("yes", user="dan")
    assert done.ran[0]["result"] == {"ticket_id": "12", "closed": True}
    (first, one), (second, two) = module.CALLS
    assert first == second == {"ticket_id": "12", "note": "the printer works again"}
    assert [one.attempt, two.attempt] == [1, 2]
    assert one.key == two.key and one.key.startswith("ik1-")
    assert (one.tenant, one.person, one.tool) == ("local", "dan", "close_ticket")


def test_a_call_that_times_out_every_time_is_reported_and_not_recorded(tmp_path):
    agent, module = tickets(tmp_path)
    module.TIMEOUTS[0] = 3
    agent.chat("close ticket 12 because done", user="dan")
    reply = agent.chat("yes", user="dan")
    assert reply.ran == [] and "uncertain" in reply.text
    assert len(module.CALLS) == 3 and len({ctx.key for _args, ctx in module.CALLS}) == 1


def test_a_sanitize_runs_the_call_with_the_cleaned_arguments(tmp_path):
    scrub = rule(
        "scrub-codes",
        "close_ticket",
        "sanitize",
        sanitize={"presets": [], "patterns": ["ACME-[0-9]{6}"]},
    )
    agent, module = tickets(tmp_path, policy(scrub))
    asked = agent.chat("close ticket 12 because part ACME-123456 was swapped", user="eva")
    assert asked.waiting == "confirm" and "ACME-123456" not in asked.text
    done = agent.chat("yes", user="eva")
    ((arguments, _context),) = module.CALLS
    assert arguments["note"] == "part [redacted:custom] was swapped"
    assert done.ran[0]["arguments"]["note"] == "part [redacted:custom] was swapped"


def test_a_sanitized_call_is_decided_again_by_the_tool_check(tmp_path):
    scrub = rule(
        "scrub-numbers",
        "close_ticket",
        "sanitize",
        sanitize={"presets": [], "patterns": ["[0-9]{4,}"]},
    )
    agent, module = tickets(tmp_path, policy(scrub))
    # The cleaned ticket id no longer fits the tool's schema: refused before anyone is asked.
    reply = agent.chat("close ticket 12345 because done", user="eva")
    assert reply.waiting is None and "argument_schema" in reply.text
    assert agent.chat("yes", user="eva").ran == [] and module.CALLS == []


def test_a_firewall_cap_cost_verdict_refuses_the_call_that_would_pass_the_cap(tmp_path):
    """The firewall's `cap_cost` verdict is held with the tool check's figures: the run's cost so
    far (the signed history's) and this call's; past the cap, `cost_exceeded`, nothing runs."""
    from stalwart_agents import runtime
    from stalwart_agents.chat import LocalFirewall, firewall_gate

    (tmp_path / "firewall.json").write_text(
        json.dumps(policy(rule("budget", "quote", "cap_cost", cap_cost_cents=500))),
        encoding="utf-8",
    )
    catalogue = {
        "agents": {"desk": {"tools": ["quote"]}},
        "tools": [{"name": "quote", "kind": "read", "cost": 300, "parameters": {"type": "object"}}],
    }
    session = runtime.open_session("desk", catalogue=catalogue, key=b"k" * 32)
    gate = firewall_gate(LocalFirewall(tmp_path / "firewall.json"), session)
    call = {"tool": "quote", "agent": "desk", "arguments": {}}
    assert gate(call, False).decision.decision == "allow"
    session.record_call(call, {"price": 3})
    over = gate(call, False).decision
    assert (over.decision, over.reasons) == ("refuse", ("cost_exceeded",))
    assert over.detail["cap"] == 500
