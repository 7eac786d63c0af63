"""Containment keyed on what the system knows, never on what the caller says.

The attacker's findings: a held session let a write through when the call declared
`"kind": "read"`; a session held, or a tool switched off, for agent `desk` ran for `Desk`; and a
tool name spelled with a zero-width space, a bidi override or full-width letters escaped a
`shell.*` rule. Now a tool's kind comes from the catalogue, names are compared in one normal form
(`firewall/engine/names.py`), and a malformed name is refused at every entry: the firewall's
engine and evaluate API, the tool check, and both CLI commands.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.models import SessionHold, ToolSwitch
from firewall import services as firewall_services
from firewall.engine import compile_policy
from firewall.engine.names import MalformedName, normal_name
from guard.engine import ToolCheck
from guard.models import GuardSession
from stalwart_agents import Agent
from stalwart_agents.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop" / "agent.yaml"
NO_SHELL = {
    "name": "no shell",
    "stage": "tool_call",
    "verdict": "deny",
    "tool_name_glob": "shell.*",
}


@pytest.fixture
def actor(actor_for, editor, organisation):
    return actor_for(editor, organisation)


@pytest.fixture
def policy(actor):
    policy = firewall_services.policy_create(actor=actor, name="production")
    firewall_services.rule_create(actor=actor, policy=policy, data=NO_SHELL)
    firewall_services.policy_publish(actor=actor, policy=policy)
    return policy


def _evaluate(actor, **call):
    return firewall_services.firewall_evaluate(actor=actor, call=call)


# -- a held session and a switched-off tool -------------------------------------------------------


@pytest.mark.django_db
def test_a_held_session_does_not_let_a_write_through_because_the_call_says_read(
    actor, organisation, policy
):
    SessionHold.objects.create(organisation=organisation, agent="desk", session="s1", reason="t")
    held = _evaluate(actor, tool="crm.update", agent="desk", session="s1", kind="read")
    assert (held["decision"], held["reasons"][-1]) == ("confirm", "session_held")


@pytest.mark.django_db
def test_a_held_session_runs_the_reads_its_catalogue_declares_and_holds_its_writes(
    actor, organisation, policy
):
    desk = Agent.from_file(SHOP, verify=False)
    session = GuardSession.objects.create(
        organisation=organisation, agent="desk", catalogue=desk.catalogue(), created_by="t"
    )
    sid = str(session.public_id)
    SessionHold.objects.create(organisation=organisation, agent="desk", session=sid, reason="t")
    assert _evaluate(actor, tool="get_order", agent="desk", session=sid)["decision"] == "allow"
    charge = _evaluate(actor, tool="charge_card", agent="desk", session=sid, kind="read")
    assert charge["decision"] == "confirm"


@pytest.mark.django_db
def test_a_session_held_for_desk_holds_when_the_call_says_Desk(actor, organisation, policy):
    SessionHold.objects.create(organisation=organisation, agent="desk", session="s1", reason="t")
    held = _evaluate(actor, tool="crm.update", agent="Desk", session="s1")
    assert (held["decision"], held["reasons"][-1]) == ("confirm", "session_held")


@pytest.mark.django_db
def test_a_tool_switched_off_for_desk_stays_off_when_the_call_says_Desk(
    actor, organisation, policy
):
    ToolSwitch.objects.create(organisation=organisation, agent="desk", tool="http.post", reason="t")
    refused = _evaluate(actor, tool="HTTP.post", agent="Desk", session="later")
    assert (refused["decision"], refused["reasons"]) == ("refuse", ["tool_disabled"])


@pytest.mark.django_db
def test_an_alert_raised_on_calls_from_Desk_holds_and_switches_off_desk(actor, organisation):
    from tests.firewall.test_sequences import EXFIL, drain_all

    policy = firewall_services.policy_create(actor=actor, name="production")
    rule = {
        **EXFIL,
        "sequence": {**EXFIL["sequence"], "on_match": ["hold_session", "disable_tool"]},
    }
    firewall_services.rule_create(actor=actor, policy=policy, data=rule)
    firewall_services.policy_publish(actor=actor, policy=policy)
    for _ in range(3):
        _evaluate(actor, tool="crm.read", agent="Desk", session="s1")
    _evaluate(actor, tool="crm.export", agent="Desk", session="s1")
    _evaluate(
        actor, tool="http.post", agent="Desk", session="s1", destination="https://example.org/"
    )
    drain_all()
    assert SessionHold.objects.get().agent == "desk"
    assert (ToolSwitch.objects.get().agent, ToolSwitch.objects.get().tool) == ("desk", "http.post")
    later = _evaluate(actor, tool="http.post", agent="desk", session="s2")
    assert later["reasons"] == ["tool_disabled"]


@pytest.mark.django_db
def test_a_chain_split_between_Desk_and_desk_still_raises_its_alert(actor, organisation):
    from tests.firewall.test_sequences import EXFIL, drain_all

    policy = firewall_services.policy_create(actor=actor, name="production")
    rule = {**EXFIL, "sequence": {**EXFIL["sequence"], "on_match": ["hold_session"]}}
    firewall_services.rule_create(actor=actor, policy=policy, data=rule)
    firewall_services.policy_publish(actor=actor, policy=policy)
    for agent in ("Desk", "desk", "DESK"):
        _evaluate(actor, tool="crm.read", agent=agent, session="s1")
    _evaluate(actor, tool="crm.export", agent="dEsk", session="s1")
    _evaluate(actor, tool="http.post", agent="Desk", session="s1", destination="https://x.org/")
    drain_all()
    assert SessionHold.objects.get().agent == "desk"


# -- malformed names, at every entry --------------------------------------------------------------


def _write(path: Path, data) -> str:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return str(path)


def _every_entry(tool: str, tmp_path: Path, client) -> dict[str, tuple]:
    """What each entry answers for a call of `tool`: each must refuse it as malformed."""
    policy = {"name": "p", "default_verdict": "allow", "rules": [{**NO_SHELL, "priority": 1}]}
    engine = compile_policy(policy).evaluate({"tool": tool}).to_dict()
    response = client.post(
        "/v1/firewall/evaluate", json.dumps({"tool": tool}), content_type="application/json"
    )
    api = response.json()
    desk = Agent.from_file(SHOP, verify=False)
    check = ToolCheck(desk.catalogue(), key="a signing key of the tests, long enough")
    decision = check.check({"tool": tool, "agent": "desk"}, session=check.new_history("s"))
    policy_file = _write(tmp_path / "policy.json", policy)
    call_file = _write(tmp_path / "call.json", {"tool": tool})
    firewall_cli = main(["firewall", "check", "--policy", policy_file, "--call", call_file])
    check_cli = main(["check", "--agent", str(SHOP), "--agent-name", "desk", "--call", call_file])
    return {
        "firewall engine": (engine["decision"], engine["reasons"][0].split(":")[0]),
        "firewall api": (
            (api["decision"], api["reasons"][0].split(":")[0])
            if response.status_code == 200
            else (response.status_code, *sorted(api))
        ),
        "tool check": (decision.decision, decision.reasons[0], decision.detail["field"]),
        "firewall cli": firewall_cli,
        "check cli": check_cli,
    }


MALFORMED = {
    "firewall engine": ("refuse", "malformed_call"),
    "firewall api": ("refuse", "malformed_call"),
    "tool check": ("refuse", "malformed_call", "tool"),
    "firewall cli": 1,
    "check cli": 1,
}


@pytest.mark.django_db
def test_a_zero_width_space_does_not_hide_shell_exec_from_a_shell_rule(
    policy, editor, client_for, tmp_path
):
    assert _every_entry("shell\u200b.exec", tmp_path, client_for(editor)) == MALFORMED


@pytest.mark.django_db
def test_a_bidi_override_does_not_hide_shell_exec_from_a_shell_rule(
    policy, editor, client_for, tmp_path
):
    assert _every_entry("\u202eshell.exec", tmp_path, client_for(editor)) == MALFORMED


@pytest.mark.django_db
def test_full_width_letters_do_not_hide_shell_exec_from_a_shell_rule(
    policy, editor, client_for, tmp_path
):
    assert _every_entry("\uff53\uff48\uff45\uff4c\uff4c.exec", tmp_path, client_for(editor)) == (
        MALFORMED
    )


@pytest.mark.django_db
def test_a_control_character_does_not_hide_shell_exec_from_a_shell_rule(
    policy, editor, client_for, tmp_path
):
    # The API's own field validation already answers 400 for a NUL, naming the field.
    answers = _every_entry("shell.\x00exec", tmp_path, client_for(editor))
    assert answers == {**MALFORMED, "firewall api": (400, "tool")}


def test_an_agent_name_with_a_zero_width_joiner_is_refused_by_both_engines():
    policy = compile_policy({"name": "p", "default_verdict": "allow", "rules": []})
    answer = policy.evaluate({"tool": "crm.read", "agent": "de\u200dsk"}).to_dict()
    assert answer["reasons"][0].startswith("malformed_call: `agent`")
    desk = Agent.from_file(SHOP, verify=False)
    check = ToolCheck(desk.catalogue(), key="a signing key of the tests, long enough")
    decision = check.check(
        {"tool": "get_order", "agent": "de\u200dsk", "arguments": {"order_id": "1"}},
        session=check.new_history("s"),
    )
    assert (decision.reasons, decision.detail["field"]) == (("malformed_call",), "agent")


def test_the_normal_form_folds_case_and_names_what_it_refuses():
    assert normal_name("Desk") == normal_name("desk") == "desk"
    with pytest.raises(MalformedName, match="U\\+200B"):
        normal_name("shell\u200b.exec", "tool")
    with pytest.raises(MalformedName, match="NFKC"):
        normal_name("\uff53hell.exec", "tool")
