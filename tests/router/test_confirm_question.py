"""The confirm question is made from the tool's description and its parameters' titles, in English
and pt-BR, with numbers in the language's way; never from the raw identifiers."""

from __future__ import annotations

from guard.engine import load_catalogue
from router.engine import Router
from router.engine.phrases import confirm_question

REFUND = {
    "name": "refund_card",
    "description": "Refunds an amount of an order to the card it was paid with.",
    "kind": "write",
    "parameters": {
        "type": "object",
        "properties": {
            "order_id": {"type": "string", "title": "Order", "maxLength": 64},
            "amount": {"type": "number", "title": "Amount", "maximum": 100000},
        },
        "required": ["order_id", "amount"],
        "additionalProperties": False,
    },
}
ESTORNO = {
    **REFUND,
    "description": "Estorna um valor de um pedido no cartão usado no pagamento.",
    "parameters": {
        **REFUND["parameters"],
        "properties": {
            "order_id": {"type": "string", "title": "Pedido", "maxLength": 64},
            "amount": {"type": "number", "title": "Valor", "maximum": 100000},
        },
    },
}


def test_the_english_question_reads_the_description_and_the_titles():
    got = confirm_question("en", "refund_card", {"order_id": "4411", "amount": 40.0}, entry=REFUND)
    assert got == (
        "Refunds an amount of an order to the card it was paid with (order 4411 and amount "
        "40.00). Shall I go ahead?"
    )


def test_the_pt_br_question_reads_the_catalogues_words_and_writes_40_comma_00():
    got = confirm_question(
        "pt-BR", "refund_card", {"order_id": "4411", "amount": 1040.0}, entry=ESTORNO
    )
    assert got == (
        "Estorna um valor de um pedido no cartão usado no pagamento (pedido 4411 e valor "
        "1.040,00). Posso seguir?"
    )
    assert "refund_card" not in got and "order_id" not in got


def test_without_titles_an_argument_is_named_in_words_never_by_its_identifier():
    bare = {
        **REFUND,
        "parameters": {"type": "object", "properties": {"order_id": {}, "amount": {}}},
    }
    pt = confirm_question("pt-BR", "refund_card", {"order_id": "4411", "amount": 40.0}, entry=bare)
    en = confirm_question("en", "refund_card", {"order_id": "4411", "amount": 40.0}, entry=bare)
    assert "(pedido 4411 e valor 40,00)" in pt
    assert "(order id 4411 and amount 40.00)" in en
    assert "order_id" not in pt + en


def test_without_a_description_the_tool_is_named_in_words():
    got = confirm_question("pt-BR", "refund_card", {"ok": True}, entry=None)
    assert got == "Executar refund card (ok sim). Posso seguir?"
    assert confirm_question("en", "close", {}, entry=None) == "Run close. Shall I go ahead?"


def test_the_router_asks_the_catalogues_question_in_pt_br():
    catalogue = load_catalogue({"agents": {"desk": {"tools": ["refund_card"]}}, "tools": [ESTORNO]})
    plan = Router(catalogue, language="pt-BR").plan("estorne 40,00 do pedido 4411")
    assert plan.kind == "confirm"
    assert plan.question == (
        "Estorna um valor de um pedido no cartão usado no pagamento (pedido 4411 e valor 40,00). "
        "Posso seguir?"
    )


def test_the_router_asks_the_catalogues_question_in_english():
    catalogue = load_catalogue({"agents": {"desk": {"tools": ["refund_card"]}}, "tools": [REFUND]})
    plan = Router(catalogue, language="en").plan("refund 40.00 on order 4411")
    assert plan.kind == "confirm"
    assert plan.question.startswith("Refunds an amount of an order to the card it was paid with")
    assert "(order 4411 and amount 40.00)" in plan.question


def test_arguments_are_said_in_the_schemas_order_whatever_order_the_call_keeps():
    # a call read back from PostgreSQL's jsonb has its keys sorted by length: amount first
    got = confirm_question("en", "refund_card", {"amount": 40.0, "order_id": "4411"}, entry=REFUND)
    assert "(order 4411 and amount 40.00)" in got
