"""Redaction: each preset, the Luhn check, custom patterns, nesting and what stays untouched."""

from __future__ import annotations

from typing import Any

import pytest

from firewall.engine.sanitize import (
    MAX_SANITIZE_DEPTH,
    SANITIZE_PRESETS,
    SanitizeFailed,
    sanitizer_problems,
)

from .conftest import redact


@pytest.mark.parametrize(
    ("preset", "text", "expected"),
    [
        ("aws_access_key", "key AKIAIOSFODNN7EXAMPLE here", "key [redacted:aws_access_key] here"),
        (
            "aws_secret_key",
            'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
            'aws_secret_access_key = "[redacted:aws_secret_key]"',
        ),
        ("openai_key", "use sk-proj-abcdefghijklmnopqrstuvwx", "use [redacted:openai_key]"),
        ("anthropic_key", "sk-ant-api03-abcdefghijklmnopqrstuv", "[redacted:anthropic_key]"),
        (
            "bearer_token",
            "Authorization: Bearer SECRET-MUST-NOT-ENTER-LOGS",
            "Authorization: Bearer [redacted:bearer_token]",
        ),
        ("email", "write to bob.smith+x@mail.example.com", "write to [redacted:email]"),
        ("ssn_us", "ssn 123-45-6789.", "ssn [redacted:ssn_us]."),
        ("credit_card", "card 4111 1111 1111 1111 ok", "card [redacted:credit_card] ok"),
        ("credit_card", "amex 3782-822463-10005", "amex [redacted:credit_card]"),
        ("credit_card", "4111111111111111", "[redacted:credit_card]"),
    ],
)
def test_each_preset_redacts_what_it_names(preset: str, text: str, expected: str) -> None:
    cleaned, labels = redact([preset], text)
    assert cleaned == expected
    assert labels == [preset]


@pytest.mark.parametrize(
    ("preset", "text"),
    [
        ("credit_card", "card 4111 1111 1111 1112 fails luhn"),
        ("credit_card", "order 123456789012"),
        ("ssn_us", "000-12-3456 666-12-3456 912-12-3456 123-00-4567 123-45-0000"),
        ("ssn_us", "123-45 6789"),
        ("aws_secret_key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        ("bearer_token", "the bearer of bad news"),
        ("openai_key", "sk-short"),
        ("email", "not an @ address"),
    ],
)
def test_lookalikes_stay(preset: str, text: str) -> None:
    assert redact([preset], text) == (text, [])


def test_custom_patterns_become_redacted_custom() -> None:
    assert redact([], "ticket ACME-123456 and ACME-1", ["ACME-[0-9]{6}"]) == (
        "ticket [redacted:custom] and ACME-1",
        ["custom"],
    )


def test_nested_strings_are_cleaned_and_keys_and_other_types_untouched() -> None:
    arguments = {
        "to": ["a@b.example", {"cc": "c@d.example"}],
        "a@b.example": 4111111111111111,
        "flag": True,
        "none": None,
    }
    cleaned, labels = redact(["email", "credit_card"], arguments)
    assert cleaned == {
        "to": ["[redacted:email]", {"cc": "[redacted:email]"}],
        "a@b.example": 4111111111111111,
        "flag": True,
        "none": None,
    }
    assert labels == ["email"]
    assert arguments["to"][0] == "a@b.example", "the call's own arguments are not modified"


def test_presets_run_in_a_fixed_order_whatever_the_rule_lists() -> None:
    text = "Bearer sk-proj-abcdefghijklmnopqrstuvwx"
    first = redact(["bearer_token", "openai_key"], text)
    second = redact(["openai_key", "bearer_token"], text)
    assert first == second == ("Bearer [redacted:openai_key]", ["openai_key"])


def test_too_deep_arguments_fail_rather_than_pass_uncleaned() -> None:
    deep: Any = "a@b.example"
    for _ in range(MAX_SANITIZE_DEPTH + 5):
        deep = [deep]
    with pytest.raises(SanitizeFailed):
        redact(["email"], deep)


def test_lone_surrogates_are_replaced_not_raised() -> None:
    cleaned, labels = redact(["email"], "a@b.example \ud800")
    assert cleaned == "[redacted:email] ?"


@pytest.mark.parametrize(
    ("spec", "field", "fragment"),
    [
        ({}, "", "empty sanitizer"),
        ({"presets": [], "patterns": []}, "", "empty sanitizer"),
        ({"presets": ["phone"]}, "presets[0]", "unknown preset `phone`"),
        ({"patterns": ["(bad"]}, "patterns[0]", "not a valid RE2 regex"),
        ({"patterns": ["a*"]}, "patterns[0]", "matches the empty string"),
        ({"patterns": [""]}, "patterns[0]", "must not be empty"),
        ({"presets": "email"}, "presets", "must be a list"),
        ({"presets": ["email"], "mode": "x"}, "mode", "unknown field"),
        ("email", "", "must be an object"),
    ],
)
def test_sanitizer_problems(spec: Any, field: str, fragment: str) -> None:
    problems = sanitizer_problems(spec)
    assert any(f == field and fragment in m for f, m in problems), problems


def test_the_preset_library_is_the_specified_one_and_every_credential() -> None:
    """The specification's eight presets, and `credentials` (every shape of the one table)."""
    assert set(SANITIZE_PRESETS) == {
        "credentials",
        "aws_access_key",
        "aws_secret_key",
        "openai_key",
        "anthropic_key",
        "bearer_token",
        "email",
        "ssn_us",
        "credit_card",
    }
