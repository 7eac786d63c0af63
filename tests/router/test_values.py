"""Values as each language writes them: money, numbers, ids, addresses, dates, free text."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from router.engine.grammars import GRAMMARS, base_lexicon
from router.engine.text import fold
from router.engine.values import find_values, find_values_reference, value_grammar

TODAY = dt.date(2026, 3, 4)  # a Wednesday


def grammar(language):
    module = GRAMMARS[language]
    return value_grammar(language, base_lexicon(language).months, module.FREE_TEXT_MARKERS)


EN, PT = grammar("en"), grammar("pt-BR")


def values(text, g):
    found, problems, _ = find_values(text, fold(text), g, TODAY)
    return [(v.kind, v.value) for v in found], [p.text for p in problems]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("refund $1,234.56", [("money", 1234.56)]),
        ("refund $40", [("money", 40)]),
        ("40 bucks", [("money", 40)]),
        ("usd 12.50", [("money", 12.5)]),
        ("order 4411", [("number", 4411)]),
        ("1,234 units", [("number", 1234)]),
        ("order A1 and WO-1042", [("id", "A1"), ("id", "WO-1042")]),
        ("order #4411", [("id", "4411")]),
        ("to Ana@X.com", [("email", "Ana@X.com")]),
        ("see https://x.example/a?b=1.", [("url", "https://x.example/a?b=1")]),
        ("post in #team", [("channel", "#team")]),
        ("since 2026-02-01", [("date", "2026-02-01")]),
        ("since 3/5/2026", [("date", "2026-03-05")]),
        ("since march 1st", [("date", "2026-03-01")]),
        ("since 5 of april, 2025", [("date", "2025-04-05")]),
        ("since the 2nd", [("date", "2026-03-02")]),
        ("in 3 days", [("date", "2026-03-07")]),
        ("3 days ago", [("date", "2026-03-01")]),
    ],
)
def test_english_values(text, want):
    assert values(text, EN) == (want, [])


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("estorne R$ 1.234,56", [("money", 1234.56)]),
        ("estorne r$40", [("money", 40)]),
        ("40 reais", [("money", 40)]),
        ("40,00", [("number", 40.0)]),
        ("1.500 unidades", [("number", 1500)]),
        ("pedido nº4411", [("id", "4411")]),
        ("desde 5/3/2026", [("date", "2026-03-05")]),
        ("desde 5/3", [("date", "2026-03-05")]),
        ("desde 1 de março", [("date", "2026-03-01")]),
        ("desde dia 2 de fevereiro de 2025", [("date", "2025-02-02")]),
        ("desde o dia 2", [("date", "2026-03-02")]),
        ("daqui a 3 dias", [("date", "2026-03-07")]),
        ("há 3 dias", [("date", "2026-03-01")]),
        ("3 dias atrás", [("date", "2026-03-01")]),
    ],
)
def test_brazilian_values(text, want):
    assert values(text, PT) == (want, [])


def test_a_number_written_the_other_way_is_a_problem_never_a_guess():
    assert values("refund 40,00", EN) == ([], ["40,00"])
    assert values("estorne 40.00", PT) == ([], ["40.00"])
    assert values("estorne 1.5", PT) == ([], ["1.5"])


def test_a_date_that_does_not_exist_is_a_problem():
    assert values("desde 31/02/2026", PT)[1] == ["31/02/2026"]


def test_slashes_are_month_first_in_english_and_day_first_in_brazil():
    assert values("3/5/2026", EN)[0] == [("date", "2026-03-05")]
    assert values("3/5/2026", PT)[0] == [("date", "2026-05-03")]


tokens = st.sampled_from(
    ["refund", "R$", "$", "40", "40,00", "1.234,56", "1,234.56", "#4411", "A1", "wo-1042",
     "ana@x.com", "https://a.example/x", "#team", "dia", "5", "de", "março", "march", "the",
     "2nd", "in", "3", "days", "ago", "há", "dias", "daqui", "a", "reais", "bucks", "usd",
     "2026-02-01", "3/5", "order", "(4411)", "x#1", "no.5", "nº4411", ",", "."]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(tokens, max_size=12), st.sampled_from(["en", "pt-BR"]))
def test_the_anchored_search_finds_what_the_plain_scan_finds(parts, language):
    text = " ".join(parts)
    g = EN if language == "en" else PT
    folded = fold(text)
    assert find_values(text, folded, g, TODAY) == find_values_reference(text, folded, g, TODAY)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_the_anchored_search_agrees_with_the_plain_scan_on_any_text(text):
    folded = fold(text)
    for g in (EN, PT):
        assert find_values(text, folded, g, TODAY) == find_values_reference(text, folded, g, TODAY)
