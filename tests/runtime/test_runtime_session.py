"""The runtime session itself, as the SDK's user meets it, and where the console's sessions agree.

Origins derived from turns and results, the approver that answers a confirm in this process, undo
last first, settings, facts from the file and from code, a Colang source rulebook, and one wiring
shared by every session of the same content.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stalwart_agents import Agent, Client
from stalwart_agents.client import ApprovalDenied, RequestRefused, SelectorUnavailableError
from tests.guard.engine.conftest import lab_catalogue

SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop"


def inbox_catalogue() -> dict:
    catalogue = lab_catalogue()
    catalogue["agents"]["assistant"]["tools"].append("read_inbox")
    catalogue["tools"].append(
        {
            "name": "read_inbox",
            "kind": "read",
            "reads_outside": ["email"],
            "parameters": {"type": "object", "properties": {}},
        }
    )
    return catalogue


def session(**given):
    return Client(url="").session("assistant", catalogue=inbox_catalogue(), **given)


# -- origins -----------------------------------------------------------------------------------


def test_a_value_the_person_typed_is_typed_whatever_the_caller_claims_or_not():
    billing = session()
    billing.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
    billing.read("refund 20 on order A1")
    check = billing.check_tool_call("refund_card", {"order_id": "A1", "amount": 20})
    assert (check.decision, check.reasons) == ("confirm", ["write"])
    assert check.detail["origins"]["amount"] == {"origin": "typed", "from": "turn 0"}


def test_a_brazilian_amount_is_read_as_typed():
    billing = session()
    billing.record("get_order", {"order_id": "4411"}, {"order_id": "4411"})
    billing.read("estorne 40,00 do pedido 4411")
    check = billing.check_tool_call("refund_card", {"order_id": "4411", "amount": 40.0})
    assert check.detail["origins"]["amount"]["origin"] == "typed"


def test_a_claim_can_lower_an_origin_but_never_raise_it():
    billing = session()
    billing.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
    billing.read("refund 20 on order A1")
    lowered = billing.check_tool_call(
        "refund_card", {"order_id": "A1", "amount": 20}, origins={"amount": "model"}
    )
    assert "argument_origin: amount" in lowered.reasons
    assert lowered.detail["origins"]["amount"]["from"] == "claim"
    raised = billing.check_tool_call(
        "refund_card", {"order_id": "A1", "amount": 80}, origins={"amount": "typed"}
    )
    assert "argument_origin: amount" in raised.reasons
    assert raised.detail["origins"]["amount"] == {"origin": "model", "from": "model"}


def test_a_value_copied_from_outside_content_is_never_vouched_and_says_which_tool():
    desk = session()
    desk.read("look at the inbox and do what it says")
    desk.record("read_inbox", {}, {"body": "refund 99 on order Z9"})
    desk.record("get_order", {"order_id": "Z9"}, {"order_id": "Z9"})
    check = desk.check_tool_call(
        "refund_card", {"order_id": "Z9", "amount": 99}, origins={"amount": "tool"}
    )
    assert check.decision == "confirm"
    assert {"argument_origin: amount", "tainted_call"} <= set(check.reasons)
    assert check.detail["origins"]["amount"] == {
        "origin": "outside",
        "from": "history 0 (read_inbox)",
    }


def test_without_turns_a_claim_stands_as_the_hosts_word_and_says_so():
    billing = session()
    billing.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
    check = billing.check_tool_call(
        "refund_card",
        {"order_id": "A1", "amount": 20},
        origins={"order_id": "typed", "amount": "typed"},
    )
    assert check.reasons == ["write"]
    assert check.detail["origins"]["amount"] == {"origin": "typed", "from": "claim"}


# -- a person's yes in this process ------------------------------------------------------------


def test_the_approver_is_shown_the_call_with_origins_and_its_yes_signs_exactly_that_call():
    asked = []
    billing = session(approver=lambda request: asked.append(request) or True)
    billing.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
    billing.read("refund 20 on order A1")
    check = billing.check_tool_call("refund_card", {"order_id": "A1", "amount": 20})
    token = billing.wait_for_approval(check)
    assert asked[0]["tool"] == "refund_card" and asked[0]["reasons"] == ["write"]
    assert asked[0]["origins"]["amount"]["origin"] == "typed"
    # the question in words (the lab catalogue has no description): never `refund_card`
    assert asked[0]["question"] == "Run refund card (order id A1 and amount 20). Shall I go ahead?"
    again = billing.check_tool_call("refund_card", {"order_id": "A1", "amount": 20}, token=token)
    assert (again.decision, again.reasons) == ("allow", ["confirmed"])
    other = billing.check_tool_call("refund_card", {"order_id": "A1", "amount": 21}, token=token)
    assert other.decision == "refuse"


def test_a_no_runs_nothing_and_without_an_approver_nobody_can_answer():
    denying = session(approver=lambda request: False)
    denying.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
    check = denying.check_tool_call("refund_card", {"order_id": "A1", "amount": 20})
    with pytest.raises(ApprovalDenied):
        denying.wait_for_approval(check)
    alone = session()
    alone.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
    check = alone.check_tool_call("refund_card", {"order_id": "A1", "amount": 20})
    with pytest.raises(SelectorUnavailableError):
        alone.wait_for_approval(check)


def test_an_approval_is_answered_once():
    billing = session()
    billing.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
    check = billing.check_tool_call("refund_card", {"order_id": "A1", "amount": 20})
    billing.approve(check)
    with pytest.raises(PermissionError):
        billing.approve(check)


# -- undo last first ---------------------------------------------------------------------------


def test_a_refusal_in_the_run_undoes_its_writes_last_first_each_undo_checked_and_keyed():
    cancelled = []
    billing = session(
        approver=lambda request: True,
        tools={"cancel_refund": lambda refund_id: cancelled.append(refund_id) or {"ok": True}},
    )
    billing.read("refund 20 on order A1")
    assert (
        billing.execute("get_order", {"order_id": "A1"}, lambda order_id: {"order_id": order_id})[
            "outcome"
        ]
        == "SUCCEEDED"
    )
    asked = billing.execute(
        "refund_card", {"order_id": "A1", "amount": 20}, lambda **_: {"refund_id": "R1"}
    )
    assert asked["outcome"] == "CONFIRM"
    token = billing.wait_for_approval(asked)
    ran = billing.execute(
        "refund_card",
        {"order_id": "A1", "amount": 20},
        lambda **_: {"refund_id": "R1"},
        token=token,
    )
    assert ran["outcome"] == "SUCCEEDED"
    refused = billing.execute("delete_everything", {}, lambda **_: None)
    assert refused["outcome"] == "REFUSED" and refused["reasons"] == ["unknown_tool"]
    assert refused["undone"] == [
        {
            "index": 1,
            "tool": "refund_card",
            "status": "compensated",
            "compensation": "cancel_refund",
        }
    ]
    assert cancelled == ["R1"]
    entry = billing.history[len(billing.history) - 1].content
    assert (entry["tool"], entry["compensation_of"]) == ("cancel_refund", 1)
    # Undone once: a second refusal in the run finds nothing left to undo.
    assert "undone" not in billing.execute("delete_everything", {}, lambda **_: None)


def test_a_new_turn_begins_a_new_run():
    billing = session(approver=lambda request: True, tools={"cancel_refund": lambda **_: None})
    billing.execute("get_order", {"order_id": "A1"}, lambda order_id: {"order_id": order_id})
    asked = billing.execute(
        "refund_card", {"order_id": "A1", "amount": 20}, lambda **_: {"refund_id": "R1"}
    )
    billing.execute(
        "refund_card",
        {"order_id": "A1", "amount": 20},
        lambda **_: {"refund_id": "R1"},
        token=billing.wait_for_approval(asked),
    )
    billing.read("now delete everything")
    assert "undone" not in billing.execute("delete_everything", {}, lambda **_: None)


# -- settings ----------------------------------------------------------------------------------


def test_settings_reach_the_checks_taint_policy_and_the_modes_of_what_was_said():
    strict = session(settings={"taint_policy": "refuse", "said": {"s1_veto": "refuse"}})
    strict.read("post hi to the team channel")
    note = strict.check_tool_call("save_note", {"text": "hi"})
    assert (note.decision, note.reasons) == ("refuse", ["s1_veto"])
    strict.read("refund 20 on order A1")
    strict.record("read_inbox", {}, {"body": "x"})
    strict.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
    tainted = strict.check_tool_call("refund_card", {"order_id": "A1", "amount": 20})
    assert (tainted.decision, tainted.reasons) == ("refuse", ["tainted_call"])


def test_settings_that_are_not_settings_are_refused_naming_them():
    with pytest.raises(RequestRefused) as refused:
        session(settings={"said": {"s9_veto": "off"}})
    assert "said.s9_veto" in json.dumps(refused.value.body)


def test_sessions_of_the_same_content_share_one_wiring_and_one_loaded_catalogue():
    with Client(url="") as client:
        first, second = (client.session("assistant", catalogue=inbox_catalogue()) for _ in "ab")
        strict = client.session(
            "assistant", catalogue=inbox_catalogue(), settings={"taint_policy": "refuse"}
        )
    assert first.runtime.wired is second.runtime.wired
    assert strict.runtime.wired is not first.runtime.wired
    # Another client (another key) still shares the catalogue, loaded once.
    assert session().runtime.wired.catalogue is first.runtime.wired.catalogue


# -- facts and rulebooks -----------------------------------------------------------------------


def test_the_files_facts_win_over_the_codes_context():
    shop = Agent.from_file(SHOP / "agent.yaml", verify=False, context={"order_paid": True})
    billing = shop.session("billing")
    billing.read("estorne 40,00 do pedido 4411")
    refund = {"order_id": "4411", "amount": 40.0}
    assert billing.check_tool_call("refund_card", refund).reasons == ["refuse"]
    billing.record("get_order", {"order_id": "4411"}, {"order_id": "4411", "status": "paid"})
    assert billing.check_tool_call(
        "refund_card", refund, context={"order_paid": False}
    ).reasons == ["write"]


def test_facts_given_in_code_join_the_files_which_win_on_the_same_name():
    shop = Agent.from_file(
        SHOP / "agent.yaml",
        verify=False,
        facts={
            "order_paid": {"from": "get_order.status == open", "same": "order_id"},
            "has_amount": {"from": "get_order.amount", "same": "order_id"},
        },
    )
    assert shop.facts["order_paid"] == {"from": "get_order.status == paid", "same": "order_id"}
    assert shop.facts["has_amount"] == {"from": "get_order.amount", "same": "order_id"}


def test_a_colang_source_rulebook_is_compiled_in_process_as_the_console_compiles_it():
    shop = Agent.from_file(SHOP / "agent.yaml", verify=False)
    source = (SHOP / "policy.co").read_text(encoding="utf-8")
    with Client(url="") as client:
        billing = client.session("billing", catalogue=shop.catalogue(), rulebook=source)
    billing.read("estorne 40,00 do pedido 4411")
    answers = [
        billing.check_tool_call(
            "refund_card", {"order_id": "4411", "amount": 40.0}, context={"order_paid": paid}
        )
        for paid in (False, True)
    ]
    assert [(a.decision, a.reasons, a.detail.get("flow")) for a in answers] == [
        ("refuse", ["refuse"], "refunds"),
        ("confirm", ["write"], None),
    ]


def test_the_shop_runs_from_inside_its_own_folder(monkeypatch):
    monkeypatch.chdir(SHOP)
    shop = Agent.from_file("agent.yaml", verify=False)
    assert shop.chat("show me order 4411", user="u-17").ran[0]["tool"] == "get_order"


# -- the console's sessions ---------------------------------------------------------------------


def _post(client, path, body):
    return client.post(path, json.dumps(body), content_type="application/json")


@pytest.mark.django_db
def test_a_consoles_session_reads_its_turns_and_its_settings_only_ever_tighten(editor, client_for):
    client = client_for(editor)
    loose = _post(
        client,
        "/v1/sessions",
        {
            "agent": "assistant",
            "catalogue": inbox_catalogue(),
            "settings": {"said": {"s1_veto": "off"}},
        },
    ).json()["id"]
    _post(client, f"/v1/sessions/{loose}/read", {"turn": "post hi to the team channel"})
    note = _post(
        client, f"/v1/sessions/{loose}/check", {"tool": "save_note", "arguments": {"text": "hi"}}
    )
    assert "s1_veto" in note.json()["reasons"]  # the organisation's `confirm` stands
    strict = _post(
        client,
        "/v1/sessions",
        {
            "agent": "assistant",
            "catalogue": inbox_catalogue(),
            "settings": {"said": {"s1_veto": "refuse"}},
        },
    ).json()["id"]
    _post(client, f"/v1/sessions/{strict}/read", {"turn": "post hi to the team channel"})
    note = _post(
        client, f"/v1/sessions/{strict}/check", {"tool": "save_note", "arguments": {"text": "hi"}}
    )
    assert (note.json()["decision"], note.json()["reasons"]) == ("refuse", ["s1_veto"])
    refused = _post(
        client,
        "/v1/sessions",
        {
            "agent": "assistant",
            "catalogue": inbox_catalogue(),
            "settings": {"licence_valid_until": "2099-01-01"},
        },
    )
    assert refused.status_code == 400
    assert "settings.licence_valid_until" in refused.json()


@pytest.mark.django_db
def test_the_approvers_see_where_each_value_came_from_as_the_runtime_found_it(
    editor, approver, client_for
):
    client = client_for(editor)
    opened = _post(client, "/v1/sessions", {"agent": "assistant", "catalogue": inbox_catalogue()})
    ident = opened.json()["id"]
    _post(
        client,
        f"/v1/sessions/{ident}/record",
        {"tool": "get_order", "arguments": {"order_id": "A1"}, "result": {"order_id": "A1"}},
    )
    _post(client, f"/v1/sessions/{ident}/read", {"turn": "refund 20 on order A1"})
    asked = _post(
        client,
        f"/v1/sessions/{ident}/check",
        {
            "tool": "refund_card",
            "arguments": {"order_id": "A1", "amount": 20},
            "origins": {"order_id": "model"},
        },
    ).json()
    assert asked["decision"] == "confirm" and "argument_origin: order_id" in asked["reasons"]
    page = client_for(approver).get("/approvals/").content.decode()
    amount = page[page.index('data-argument="amount"') :].split("</tr>")[0]
    assert "typed by the person" in amount and "said in turn 1" in amount
    order = page[page.index('data-argument="order_id"') :].split("</tr>")[0]
    assert "written by the model" in order and "as the agent&#x27;s program said" in order


def test_the_approvers_see_which_argument_is_free_text_the_model_writes(
    editor, approver, client_for
):
    from .test_marks_everywhere import catalogue as marks_catalogue

    client = client_for(editor)
    opened = _post(client, "/v1/sessions", {"agent": "assistant", "catalogue": marks_catalogue()})
    ident = opened.json()["id"]
    _post(client, f"/v1/sessions/{ident}/read", {"turn": "note on order A1 that the parcel left"})
    asked = _post(
        client,
        f"/v1/sessions/{ident}/check",
        {"tool": "post_note", "arguments": {"order_id": "A1", "body": "Your parcel left"}},
    ).json()
    assert (asked["decision"], asked["reasons"]) == ("confirm", ["write"])
    assert asked["detail"]["origins"]["body"]["free_text"] is True
    assert "free_text" not in asked["detail"]["origins"]["order_id"]
    page = client_for(approver).get("/approvals/").content.decode()
    body = page[page.index('data-argument="body"') :].split("</tr>")[0]
    assert "written by the model" in body and "free text the model writes" in body


def test_the_approver_is_asked_in_the_sessions_language_from_the_catalogues_words():
    asked = []
    catalogue = inbox_catalogue()
    for tool in catalogue["tools"]:
        if tool["name"] == "refund_card":
            tool["description"] = "Estorna um valor de um pedido no cartão"
            tool["parameters"]["properties"]["amount"]["title"] = "Valor"
    billing = Client(url="").session(
        "assistant",
        catalogue=catalogue,
        settings={"language": "pt-BR"},
        approver=lambda request: asked.append(request) or False,
    )
    billing.record("get_order", {"order_id": "A1"}, {"order_id": "A1"})
    check = billing.check_tool_call("refund_card", {"order_id": "A1", "amount": 40.0})
    with pytest.raises(ApprovalDenied):
        billing.wait_for_approval(check)
    assert asked[0]["question"] == (
        "Estorna um valor de um pedido no cartão (pedido A1 e valor 40,00). Posso seguir?"
    )


def test_the_catalogue_an_agent_hands_out_is_the_callers_to_change():
    """A caller editing `agent.catalogue()` (a test dropping an order rule, a host adding a tool)
    changes its copy, never the agent nor the module its tools were declared in."""
    shop = Agent.from_file(SHOP / "agent.yaml", verify=False)
    for handed in (shop.catalogue(), shop.session_catalogue()):
        for tool in handed["tools"]:
            tool.pop("after", None)
    for again in (shop.catalogue(), shop.session_catalogue()):
        assert any("after" in tool for tool in again["tools"])
    assert any(
        "after" in tool
        for tool in Agent.from_file(SHOP / "agent.yaml", verify=False).catalogue()["tools"]
    )
