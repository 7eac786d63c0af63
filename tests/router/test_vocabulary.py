"""The vocabulary file: validated strictly, every error naming its YAML path and line."""

from __future__ import annotations

import pytest

from router.engine import Router, VocabularyInvalid, load_vocabulary

from .conftest import TODAY, shop_file

GOOD = """\
settings:
  language: pt-BR
verbs:
  refund:
    pt-BR: [reembolsar, fazer o reembolso]
nouns:
  order:
    pt-BR: [encomenda]
values:
  paid:
    pt-BR: [liquidado]
tools:
  get_order:
    pt-BR: [ficha do pedido]
"""


def issues(text):
    with pytest.raises(VocabularyInvalid) as error:
        load_vocabulary(text)
    return [(issue.path, issue.line) for issue in error.value.issues]


def test_a_good_vocabulary_loads_every_section():
    vocabulary = load_vocabulary(GOOD)
    assert vocabulary.language == "pt-BR"
    assert vocabulary.verbs["refund"]["pt-BR"] == ("reembolsar", "fazer o reembolso")
    assert vocabulary.tools["get_order"]["pt-BR"] == ("ficha do pedido",)


def test_an_empty_vocabulary_is_no_vocabulary():
    assert load_vocabulary("").language is None
    assert load_vocabulary(None).verbs == {}


def test_every_error_names_its_path_and_line_at_once():
    text = """\
settings:
  language: pt-PT
verbs:
  refund:
    es: [reembolsar]
    pt-BR: [estornar, 42]
nouns: [order]
colours: {}
"""
    assert issues(text) == [
        ("settings.language", 2),
        ("verbs.refund.es", 5),
        ("verbs.refund.pt-BR[1]", 6),
        ("nouns", 7),
        ("colours", 8),
    ]


def test_a_yaml_error_names_its_line():
    assert issues("verbs:\n  refund: [a, b\n") == [("vocabulary.yaml", 3)]


def test_a_word_with_digits_or_a_long_phrase_is_refused():
    text = "nouns:\n  order:\n    en: [order2, one two three four five six seven]\n"
    assert issues(text) == [("nouns.order.en[0]", 3), ("nouns.order.en[1]", 3)]


def test_a_key_written_twice_is_refused():
    assert issues("nouns:\n  order:\n    en: [x]\n  order:\n    en: [y]\n") == [("nouns.order", 4)]


def test_error_messages_are_one_lowercase_sentence_without_a_final_period():
    with pytest.raises(VocabularyInvalid) as error:
        load_vocabulary("settings:\n  language: klingon\n")
    message = error.value.issues[0].message
    assert message[0].islower() and not message.endswith(".")
    assert "`klingon`" in message


def test_the_vocabulary_words_are_read_and_its_language_chosen():
    router = Router(shop_file(), vocabulary=GOOD, today=TODAY)
    assert router.language == "pt-BR"
    plan = router.plan("reembolse a encomenda 4411 com 20 reais")
    assert (plan.kind, plan.tool) == ("confirm", "refund_card")
    assert plan.call["arguments"] == {"order_id": "4411", "amount": 20}
    assert router.plan("mostre a ficha do pedido 4411").tool == "get_order"
    assert router.read("pedidos liquidados").statuses[0].concept == "paid"


def test_without_the_vocabulary_the_same_turn_is_unread():
    router = Router(shop_file(), language="pt-BR", today=TODAY)
    assert router.plan("reembolse a encomenda 4411 com 20 reais").kind == "unread"


def test_a_router_refuses_an_invalid_vocabulary():
    with pytest.raises(VocabularyInvalid):
        Router(shop_file(), vocabulary="verbs: 3\n")


JARGON = """\
settings:
  language: pt-BR
filler:
  despedidas da loja:
    pt-BR: [tmj, fico no aguardo]
  palavras que não podem virar nada:
    pt-BR: [estorne, não]
"""


def test_filler_words_of_the_vocabulary_are_read_as_nothing():
    plain = Router(shop_file(), language="pt-BR", today=TODAY)
    assert plain.plan("mostra o pedido 4411, fico no aguardo, tmj").kind == "unread"
    router = Router(shop_file(), vocabulary=JARGON, today=TODAY)
    plan = router.plan("mostra o pedido 4411, fico no aguardo, tmj")
    assert (plan.kind, plan.tool) == ("tool", "get_order")


def test_a_filler_word_never_takes_away_a_meaning_the_grammar_gives():
    router = Router(shop_file(), vocabulary=JARGON, today=TODAY)
    assert router.plan("não estorne o pedido 4411").reasons == ("unread: negated",)
    assert router.plan("estorne R$ 20 do pedido 4411").tool == "refund_card"


README_EXAMPLE = """\
settings:
  language: pt-BR
verbs:
  refund:
    pt-BR: [reembolsar]
nouns:
  order:
    pt-BR: [ticket, OS]
filler:
  despedidas da loja:
    pt-BR: [tmj, fico no aguardo]
"""


def test_the_readme_example_reads_the_desk_s_own_words():
    router = Router(shop_file(), vocabulary=README_EXAMPLE, today=TODAY)
    plan = router.plan("reembolse R$ 20 do ticket 4411, fico no aguardo")
    assert (plan.kind, plan.tool) == ("confirm", "refund_card")  # no rulebook here
    assert plan.call["arguments"] == {"order_id": "4411", "amount": 20}
