"""The name normal form (`firewall/engine/names.py`): its ASCII fast path refuses what the full
check refuses, and says why in the same words."""

from __future__ import annotations

import unicodedata

import pytest

from firewall.engine.names import (
    MAX_NAME_LENGTH,
    MalformedName,
    name_key,
    name_problem,
    normal_name,
    same_name,
)


def _slow_problem(name: str) -> str | None:
    """The character-by-character rule the module documents, without its fast path."""
    for char in name:
        point = ord(char)
        if unicodedata.category(char) in {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}:
            return f"holds the invisible or control character U+{point:04X}"
        if char.isspace():
            return f"holds the space character U+{point:04X}"
    return None


@pytest.mark.parametrize("point", range(128))
def test_every_ascii_character_inside_a_name_is_judged_as_the_full_check_judges_it(
    point: int,
) -> None:
    name = f"shell{chr(point)}exec"
    assert name_problem(name) == _slow_problem(name)


def test_a_plain_ascii_name_is_well_formed_and_folded() -> None:
    assert name_problem("Shell.Exec_2-a") is None
    assert normal_name("Shell.Exec_2-a") == "shell.exec_2-a"


def test_a_space_or_a_tab_in_an_ascii_name_is_named() -> None:
    assert name_problem("shell exec") == "holds the space character U+0020"
    assert name_problem("shell\texec") == "holds the invisible or control character U+0009"
    assert name_problem("shell\x7fexec") == "holds the invisible or control character U+007F"


def test_the_length_bound_comes_before_the_fast_path() -> None:
    assert name_problem("a" * MAX_NAME_LENGTH) is None
    assert name_problem("a" * (MAX_NAME_LENGTH + 1)) == (
        f"is longer than {MAX_NAME_LENGTH} characters"
    )


def test_names_outside_ascii_still_go_through_every_check() -> None:
    assert name_problem("shell\u200b.exec") == "holds the invisible or control character U+200B"
    assert name_problem("ｓｈｅｌｌ.exec") == (
        "is not in NFKC form (a full-width or compatibility spelling of another name)"
    )
    assert name_problem("") == name_problem(None) == "must be a non-empty name"
    assert name_problem("café.exec") is None
    assert name_problem("shell\u3000exec") == "holds the space character U+3000"


def test_normal_name_refuses_a_malformed_name_naming_the_field() -> None:
    with pytest.raises(MalformedName) as caught:
        normal_name("shell exec")
    assert str(caught.value) == "`name` holds the space character U+0020"
    with pytest.raises(MalformedName) as caught:
        normal_name("", "agent")
    assert str(caught.value) == "`agent` must be a non-empty name"


def test_same_name_compares_folded_well_formed_names_only() -> None:
    assert same_name("Desk", "desk")
    assert not same_name("desk", "desks")
    assert not same_name("desk\u200b", "desk")
    assert not same_name("desk", "desk\u200b")
    assert not same_name("desk ", "desk ")
    # a ligature is not in NFKC form, though it folds to the letters it joins
    assert not same_name("\ufb00", "ff") and not same_name("ff", "\ufb00")
    assert same_name("straße", "STRASSE")


def test_name_key_is_the_folded_name_and_a_malformed_name_keeps_its_text() -> None:
    assert name_key("Shell.Exec") == "shell.exec"
    assert name_key("Shell Exec") == "Shell Exec"
    assert name_key(None) == ""
    assert name_key(7) == "7"
