"""The `extract` composer: a sentence copied from the documents, or no answer."""

from __future__ import annotations

from router.engine.answer import Composer
from router.engine.grammars import base_lexicon

from .conftest import DOCUMENTS


def composer(language="en"):
    return Composer(DOCUMENTS, base_lexicon(language))


def test_the_answer_is_a_sentence_of_a_document_copied_as_written():
    answer = composer().answer("how long does a refund take to show on the statement?")
    assert answer.text == "A refund takes up to five business days to show on the statement."
    assert answer.source == "refunds.md"
    assert any(answer.text in document["text"] for document in DOCUMENTS)


def test_a_brazilian_question_is_answered_from_the_brazilian_document():
    answer = composer("pt-BR").answer("quanto tempo o estorno leva pra aparecer na fatura?")
    assert answer.source == "estornos.md"
    assert "cinco dias úteis" in answer.text


def test_a_question_the_documents_do_not_answer_gets_no_answer():
    assert composer().answer("what is the meaning of life") is None
    assert composer().answer("refund") is None
    assert Composer([], base_lexicon("en")).answer("how long does a refund take") is None
