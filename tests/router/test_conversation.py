"""A conversation end to end: with no model named, it runs without ever calling one."""

from __future__ import annotations

import copy

import pytest

from router.engine import ModelUnavailable, Router, RouterError
from router.engine.conversation import Conversation, model_free
from router.engine.models import ScriptedModel

from .conftest import (
    DOCUMENTS,
    KEY,
    TODAY,
    erp_catalogue,
    shop_file,
    shop_rulebook,
    shop_tools_module,
)


class NeverCalled:
    """A model adapter that fails the test if anything calls it."""

    name = "scripted:never"

    def respond(self, request):
        raise AssertionError(f"the model was called for {request.purpose}: {request.turn!r}")


def shop_without_model(on_unread="refuse"):
    """The shop's catalogue with no model, no hand-off, on_unread refuse: nothing calls a model."""
    data = copy.deepcopy(dict(shop_file().data))
    desk = {"tools": ["get_order", "charge_card", "send_receipt", "read_inbox", "refund_card"]}
    if on_unread:
        desk["on_unread"] = on_unread
    data["agents"] = {"desk": desk}
    return data


def executor_for(ran):
    tools = shop_tools_module()

    def run(tool, arguments):
        ran.append((tool, arguments))
        return getattr(tools, tool)(**arguments)

    return run


@pytest.fixture
def conversation():
    ran: list = []
    router = Router(shop_without_model(), rulebook=shop_rulebook(), today=TODAY)
    talk = Conversation(router, executor=executor_for(ran), key=KEY, model=NeverCalled())
    talk.ran = ran
    return talk


def test_the_shop_without_a_model_meets_every_condition_of_running_model_free():
    router = Router(shop_without_model(), today=TODAY)
    assert model_free(router.catalogue, replies={"composer": "template"}) == []
    problems = model_free(shop_file().catalogue)
    assert any("names the model" in p for p in problems)
    assert any("hands off" in p for p in problems)


def test_a_whole_conversation_runs_without_a_model(conversation):
    talk = conversation
    read = talk.say("show order 4411")
    assert read.ran[0]["tool"] == "get_order" and "status paid" in read.text
    refund = talk.say("refund $20 on order 4411")
    assert refund.waiting == "confirm" and refund.plan.kind == "confirm"
    # the question reads the catalogue's description, not the tool's identifier
    assert refund.text.startswith("Refunds an amount of an order to the card it was paid with")
    assert "refund_card" not in refund.text
    done = talk.say("yes")
    assert done.ran[0]["tool"] == "refund_card"
    assert done.checks[-1]["decision"]["reasons"] == ["confirmed"]
    asked = talk.say("send the receipt for order 4411")
    assert asked.plan.kind in ("ask", "declined")
    unread = talk.say("tell me a joke")
    assert unread.plan.action == "say_again"
    refused = talk.say("tell me a joke")
    assert refused.plan.action == "refuse"
    assert not any(reply.model_called for reply in (read, refund, done, asked, unread, refused))
    assert [tool for tool, _ in talk.ran] == ["get_order", "refund_card"]


def test_a_chain_runs_its_reads_then_the_plan_they_make(conversation):
    talk = conversation
    reply = talk.say("refund the full amount of order 4411")
    assert [c["call"]["tool"] for c in reply.checks] == ["get_order", "refund_card"]
    assert reply.waiting == "confirm"
    assert reply.plan.call["arguments"] == {"order_id": "4411", "amount": 40.0}
    assert talk.say("no").text.startswith("OK, I did not")
    assert [tool for tool, _ in talk.ran] == ["get_order"]


def test_the_rulebook_declines_a_refund_of_an_unpaid_order(conversation):
    reply = conversation.say("refund $5 on order 4412")
    assert reply.plan.kind == "declined" and reply.plan.rule == "refunds"
    assert "refunds" in reply.text


def test_a_refund_with_no_amount_typed_asks_how_much_then_runs_what_was_typed(conversation):
    talk = conversation
    asked = talk.say("refund order 4411")
    assert (asked.plan.kind, asked.plan.missing) == ("ask", ("amount",))
    assert talk.ran == []
    reply = talk.say("$15")
    assert reply.waiting == "confirm"
    assert reply.plan.call["arguments"] == {"order_id": "4411", "amount": 15}
    assert reply.plan.call["origins"] == {"order_id": "typed", "amount": "typed"}


def test_an_ask_is_completed_by_the_next_turn(conversation):
    talk = conversation
    talk.say("show order 4411")
    assert talk.say("charge the card").plan.missing == ("order_id", "amount")
    reply = talk.say("order 4411, $40")
    assert reply.plan.tool == "charge_card"
    assert reply.plan.call["arguments"] == {"order_id": "4411", "amount": 40}


def test_a_brazilian_conversation_confirms_with_sim():
    ran: list = []
    router = Router(shop_without_model(), rulebook=shop_rulebook(), language="pt-BR", today=TODAY)
    talk = Conversation(router, executor=executor_for(ran), key=KEY, model=NeverCalled())
    reply = talk.say("estorne 40,00 do pedido 4411")
    assert reply.waiting == "confirm" and "40,00" in reply.text
    assert talk.say("sim").ran[0]["arguments"] == {"order_id": "4411", "amount": 40.0}


def test_an_unread_turn_answered_from_the_documents_calls_no_model():
    router = Router(shop_without_model(None), today=TODAY, documents=DOCUMENTS)
    talk = Conversation(router, executor=executor_for([]), key=KEY, model=NeverCalled(),
                        organisation_on_unread="answer")  # fmt: skip
    talk.say("how long does a refund take to show on the statement")
    reply = talk.say("how long does a refund take to show on the statement")
    assert reply.plan.action == "answer" and "five business days" in reply.text


def test_the_organisations_setting_is_taken_at_the_first_turn():
    data = erp_catalogue()
    del data["agents"]["ops"]["on_unread"]
    setting = ["answer"]
    router = Router(data, today=TODAY, documents=DOCUMENTS)
    talk = Conversation(router, executor=lambda t, a: {}, key=KEY,
                        organisation_on_unread=lambda: setting[0])  # fmt: skip
    talk.say("hello there friend")
    setting[0] = "refuse"
    reply = talk.say("how long does a refund take to show on the statement")
    assert reply.plan.action == "answer"


def test_with_on_unread_model_every_call_the_model_asks_for_is_checked():
    data = erp_catalogue()
    data["agents"]["ops"].update(on_unread="model", model="scripted:ops")
    model = ScriptedModel("scripted:ops", [
        {"text": "Let me look.", "calls": [{"tool": "read_order", "arguments": {"order_id": "742"}}]},
        {"calls": [{"tool": "delete_everything", "arguments": {}}]},
        {"calls": [{"tool": "request_close", "arguments": {"order_id": "742", "note": "done"}}]},
    ])  # fmt: skip
    ran: list = []
    talk = Conversation(Router(data, today=TODAY), key=KEY, model=model,
                        executor=lambda t, a: ran.append(t) or {"order_id": "742"})  # fmt: skip
    talk.say("tell me a joke")
    first = talk.say("tell me a joke")
    assert first.model_called and ran == ["read_order"] and first.text.startswith("Let me look.")
    talk.say("sing a song")
    refused = talk.say("sing a song")
    assert refused.checks[0]["decision"]["reasons"] == ["unknown_tool"] and ran == ["read_order"]
    talk.say("do a dance")
    held = talk.say("do a dance")
    assert held.waiting == "confirm"
    assert held.checks[0]["decision"]["reasons"][0].startswith("argument_origin")
    assert ran == ["read_order"]


def test_with_no_model_adapter_a_turn_for_the_model_is_refused():
    data = erp_catalogue()
    data["agents"]["ops"].update(on_unread="model", model="scripted:ops")
    talk = Conversation(Router(data, today=TODAY), key=KEY, executor=lambda t, a: {})
    talk.say("tell me a joke")
    reply = talk.say("tell me a joke")
    assert not reply.model_called and reply.text == "Sorry, I can't help with that."


def test_a_calculation_runs_its_reads_then_the_function_in_the_sandbox():
    data = erp_catalogue()
    data["agents"]["ops"]["model"] = "scripted:ops"
    model = ScriptedModel("scripted:ops", [{"function": "def f(rows): return len(rows)"}])
    sandboxed = []

    def sandbox(source, inputs):
        sandboxed.append(source)
        return len(inputs[0])  # one argument per read the calculation draws on

    rows = [{"order_id": "742"}, {"order_id": "745"}]
    talk = Conversation(Router(data, today=TODAY, sandbox=sandbox), key=KEY, model=model,
                        sandbox=sandbox, executor=lambda t, a: rows)  # fmt: skip
    reply = talk.say("how many open work orders are there")
    assert reply.text == "The answer is 2."
    assert sandboxed == ["def f(rows): return len(rows)"]
    call = {"tool": "list_orders", "arguments": {"status": "open"}, "result": rows}
    assert model.requests[0].data == [call]


def test_a_failing_tool_records_nothing_and_says_so(conversation):
    conversation.executor = lambda tool, arguments: (_ for _ in ()).throw(LookupError("gone"))
    reply = conversation.say("show order 4411")
    assert "failed" in reply.text and len(conversation.history) == 0


def test_a_conversation_needs_a_tool_check_or_a_key():
    with pytest.raises(RouterError):
        Conversation(Router(erp_catalogue(), today=TODAY), executor=lambda t, a: {})


def test_a_scripted_model_that_runs_out_is_refused_not_skipped():
    data = erp_catalogue()
    data["agents"]["ops"].update(on_unread="model", model="scripted:ops")
    model = ScriptedModel("scripted:ops", [])
    talk = Conversation(Router(data, today=TODAY), key=KEY, model=model, executor=lambda t, a: {})
    talk.say("tell me a joke")
    reply = talk.say("tell me a joke")
    assert reply.text.startswith("Sorry, I can't help with that: the model could not answer")
    assert "has no reply left" in reply.text and reply.text.endswith("Nothing was run.")
    with pytest.raises(ModelUnavailable):
        model.respond(None)


# -- the host's gate after the tool check (the SDK puts the firewall there) ----------------------


def gated(gate, ran):
    from router.engine.conversation import Conversation as Talk

    router = Router(shop_without_model(), rulebook=shop_rulebook(), today=TODAY)
    return Talk(router, executor=executor_for(ran), key=KEY, gate=gate, gate_name="firewall")


def test_a_gate_refusal_stops_the_call_and_names_its_rule():
    from guard.engine.decision import Decision
    from router.engine.conversation import GateAnswer

    ran: list = []
    seen: list = []

    def gate(call, confirmed):
        seen.append((call["tool"], confirmed))
        return GateAnswer(Decision("refuse", ("firewall: no-lookups",), {}, "no-lookups"))

    reply = gated(gate, ran).say("show order 4411")
    assert ran == [] and seen == [("get_order", False)]
    assert "firewall: no-lookups" in reply.text
    assert reply.checks[-1]["gate"] == "firewall"


def test_a_gate_confirm_asks_the_person_and_sees_their_yes():
    from guard.engine.decision import Decision
    from router.engine.conversation import GateAnswer

    ran: list = []
    seen: list = []

    def gate(call, confirmed):
        seen.append(confirmed)
        verdict = "allow" if confirmed else "confirm"
        return GateAnswer(Decision(verdict, ("firewall: ask-first",), {}, "ask-first"))

    talk = gated(gate, ran)
    asked = talk.say("show order 4411")
    assert asked.waiting == "confirm" and ran == []
    done = talk.say("yes")
    assert seen == [False, True] and [tool for tool, _ in ran] == ["get_order"]
    assert done.ran[0]["tool"] == "get_order"


def test_a_gate_cannot_loosen_the_tool_checks_answer():
    from guard.engine.decision import Decision
    from router.engine.conversation import GateAnswer

    ran: list = []
    talk = gated(lambda call, confirmed: GateAnswer(Decision("allow")), ran)
    held = talk.say("refund $20 on order 4411")
    assert held.waiting == "confirm" and [tool for tool, _ in ran] == ["get_order"]


def test_a_gate_that_raises_stops_the_turn_and_nothing_runs():
    ran: list = []

    class Down(Exception):
        pass

    def gate(call, confirmed):
        raise Down("the firewall cannot answer")

    with pytest.raises(Down):
        gated(gate, ran).say("show order 4411")
    assert ran == []


def test_an_executor_that_answers_replayed_has_run_the_call_before():
    from guard.engine.execution import Replayed

    router = Router(shop_without_model(), rulebook=shop_rulebook(), today=TODAY)
    talk = Conversation(router, executor=lambda tool, arguments: Replayed({"done": 1}), key=KEY)
    reply = talk.say("show order 4411")
    assert reply.ran == [{"tool": "get_order", "arguments": {"order_id": "4411"},
                          "result": {"done": 1}, "duplicate": True}]  # fmt: skip
    assert reply.text.startswith("Already done") and len(talk.history) == 0
