"""Folding keeps positions; the typo index reads one edit, and only where one word fits."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from router.engine.text import TypoIndex, fold, one_edit


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_folding_keeps_every_position_of_the_turn(text):
    assert len(fold(text)) == len(text)


def test_folding_takes_accents_and_case_off():
    assert fold("Estórne NÃO, Ação; “aspas” – já") == 'estorne nao, acao; "aspas" - ja'


def test_one_edit_reads_a_missing_an_extra_a_changed_and_a_swapped_letter():
    assert one_edit("refnd", "refund")
    assert one_edit("reffund", "refund")
    assert one_edit("rafund", "refund")
    assert one_edit("rfeund", "refund")
    assert not one_edit("rfnd", "refund")
    assert not one_edit("refund", "refund")


def test_a_typo_is_read_only_where_exactly_one_known_word_fits():
    index = TypoIndex(["refund", "show", "shop", "the", "order"])
    assert index.correct("refnd") == "refund"
    assert index.correct("shwo") == "show"
    assert index.correct("teh") == "the"


def test_a_changed_letter_is_not_read_in_a_short_word_nor_a_wrong_first_letter():
    index = TypoIndex(["shop", "send", "refund"])
    assert index.correct("ship") is None
    assert index.correct("sand") is None
    assert index.correct("tefund") is None


def test_two_known_words_one_edit_away_make_no_typo():
    index = TypoIndex(["cart", "card"])
    assert index.correct("carx") is None
    assert index.candidates("cardd") == {"card"}
