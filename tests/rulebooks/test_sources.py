"""Choosing a compiler by file name, and holding a rulebook for an agent."""

from __future__ import annotations

import pytest

from rulebooks.compiler import (
    PolicyInputRefused,
    RulebookNotHeld,
    RulebookUnsupported,
    compile_colang,
    compile_source,
    ensure_record_only,
    hold_rulebook,
)

from .conftest import SHOP


def test_a_co_file_is_compiled_as_colang() -> None:
    assert compile_source(SHOP.encode(), filename="policy.co")["format"] == "colang-1.0"


def test_a_csv_file_is_compiled_as_a_rule_sheet() -> None:
    record = compile_source(b"tool,decision,reason\nx,refuse,no\n", filename="rules.CSV")
    assert record["format"] == "rule-sheet"


def test_any_other_file_is_refused() -> None:
    with pytest.raises(RulebookUnsupported) as caught:
        compile_source(b"{}", filename="policy.yaml")
    assert caught.value.errors[0].construct == "file type"


def test_an_agent_holds_a_compiled_record_as_it_is() -> None:
    record = compile_colang(SHOP)
    assert hold_rulebook(record) == record


def test_an_agent_compiles_a_source_it_is_given() -> None:
    assert hold_rulebook(SHOP)["tools"].keys() == {"refund_card"}


def test_an_agent_whose_rulebook_cannot_be_compiled_does_not_run_and_says_why() -> None:
    with pytest.raises(RulebookNotHeld) as caught:
        hold_rulebook("define flow x\n  goto y\n", filename="policy.co")
    assert caught.value.reason == "rulebook_unsupported"
    assert caught.value.errors[0].line == 2
    assert "goto" in str(caught.value)


def test_an_organisation_that_accepts_records_only_refuses_a_source() -> None:
    with pytest.raises(PolicyInputRefused) as caught:
        hold_rulebook(SHOP, records_only=True)
    assert caught.value.code == "policy_input_refused"
    assert caught.value.reason == "policy_input_refused"
    assert isinstance(caught.value, RulebookNotHeld)


def test_records_only_still_accepts_a_record() -> None:
    record = compile_colang(SHOP)
    assert hold_rulebook(record, records_only=True) == record
    assert ensure_record_only(record) == record


@pytest.mark.parametrize("source", [SHOP, SHOP.encode()])
def test_ensure_record_only_refuses_any_source(source) -> None:
    with pytest.raises(PolicyInputRefused):
        ensure_record_only(source)


def test_ensure_record_only_refuses_a_path() -> None:
    from pathlib import Path

    with pytest.raises(PolicyInputRefused):
        ensure_record_only(Path("policy.co"))


def test_an_invalid_record_is_not_held() -> None:
    with pytest.raises(RulebookNotHeld) as caught:
        ensure_record_only({"version": "stalwart-rulebook/0"})
    assert caught.value.reason == "rulebook_record_invalid"
