"""The two grammars: verb forms, accents optional, European Portuguese told apart."""

from __future__ import annotations

import pytest

from router.engine.errors import LanguageNotRead
from router.engine.grammar_pt import verb_forms
from router.engine.grammars import base_lexicon, choose_language
from router.engine.vocabulary import Vocabulary


def role(language, word):
    entry = base_lexicon(language).words.get(word)
    return (entry.role, entry.concept) if entry else None


def test_brazilian_request_forms_are_made_from_the_infinitive():
    request, tu, past = verb_forms("verificar")
    assert {"verifique", "verificar", "verifiquem"} <= set(request)
    assert tu == ["verifica"]
    assert "verificado" in past


@pytest.mark.parametrize("word", ["estorne", "estorna", "estornar", "estornando"])
def test_every_request_form_of_estornar_is_a_refund(word):
    assert role("pt-BR", word) == ("verb", "refund")


def test_a_past_form_is_a_state_not_an_action():
    assert role("pt-BR", "estornado") == ("status", "refunded")
    assert role("en", "refunded") == ("status", "refunded")


def test_a_generated_verb_form_never_takes_a_function_word():
    assert role("pt-BR", "de")[0] == "function"  # not "dê"
    assert role("pt-BR", "da")[0] == "determiner"  # not "dá"


@pytest.mark.parametrize("word", ["encomenda", "utilizador", "facturacao", "contacto", "podes"])
def test_words_of_portugal_are_marked(word):
    assert role("pt-BR", word) == ("pt_pt", None)


def test_reembolsar_is_left_to_the_vocabulary():
    assert role("pt-BR", "reembolse") is None


def test_the_language_is_chosen_never_guessed():
    assert choose_language(None, None) == "en"
    assert choose_language(None, Vocabulary(language="pt-BR")) == "pt-BR"
    assert choose_language("pt-br", Vocabulary(language="en")) == "pt-BR"
    for language in ("pt", "pt-PT", "es", "fr"):
        with pytest.raises(LanguageNotRead):
            choose_language(language, None)
