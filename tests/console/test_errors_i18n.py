"""The console's own error messages said again in pt-BR, around their values; English stays."""

from __future__ import annotations

from console.errors_i18n import say


def test_a_message_with_values_is_translated_around_them():
    assert say("priority: must be between -5 and 9", "pt-BR") == (
        "priority: precisa estar entre -5 e 9"
    )


def test_a_value_in_backticks_is_never_translated():
    assert say("name: `is required` is required", "pt-BR") == "name: `is required` é obrigatório"


def test_a_phrase_holding_backticks_is_translated_whole():
    assert say("verdict: is required for the `sanitize` verdict", "pt-BR") == (
        "verdict: é obrigatório com o veredito `sanitize`"
    )


def test_english_and_unknown_phrases_stay_as_written():
    assert say("priority: must be an integer", "en") == "priority: must be an integer"
    assert say("something nobody wrote down", "pt-BR") == "something nobody wrote down"
