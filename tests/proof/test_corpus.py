"""The corpus of planted flaws: every planted flaw is found, the close clean variants raise nothing.

One folder per case (`tests/proof/corpus/<case>`): a rule's `..._fires` agent must raise exactly
the planted rule, with the subject, place and witness path `expect.json` names; its `..._clean`
variant, which differs by the one line that fixes the flaw, must raise no finding at all.
"""

from __future__ import annotations

import re

import pytest

from proof.engine import REGISTRY

from .conftest import corpus_cases, run_case

CASES = corpus_cases()
PLACE = re.compile(r"^[\w./-]+:\d+$")


@pytest.mark.parametrize("case", CASES)
def test_corpus_case_raises_exactly_the_expected_rules(case: str) -> None:
    report, expect = run_case(case)
    assert sorted({f.rule for f in report.findings}) == sorted(expect["rules"])


@pytest.mark.parametrize("case", [c for c in CASES if c.endswith("_fires")])
def test_planted_flaw_is_found_with_its_place_and_witness(case: str) -> None:
    report, expect = run_case(case)
    want = expect["finding"]
    found = [f for f in report.findings if f.rule == want["rule"] and f.subject == want["on"]]
    assert found, f"{want['rule']} on {want['on']} was not raised"
    finding = found[0]
    assert finding.where == want["where"]
    assert [step.node for step in finding.witness] == want["path"]


@pytest.mark.parametrize("case", [c for c in CASES if c.endswith("_fires")])
def test_every_witness_step_is_mapped_back_to_a_source_line(case: str) -> None:
    report, _ = run_case(case)
    for finding in report.findings:
        for step in finding.witness:
            if step.kind == "opaque":
                continue  # a team's step given in an overlay carries no line
            assert step.at is not None and PLACE.match(step.at), (finding.rule, step)


@pytest.mark.parametrize("case", CASES)
def test_both_engines_agree_on_every_corpus_case(case: str) -> None:
    report, _ = run_case(case)
    assert report.engines["agree"] is True
    assert report.engines["search"]["states"] == report.engines["fixpoint"]["states"]


def test_every_rule_has_a_planted_flaw_and_a_clean_variant() -> None:
    planted = {c.split("_", 1)[0].upper() for c in CASES if c.endswith("_fires")}
    clean = {c.split("_", 1)[0].upper() for c in CASES if c.endswith("_clean")}
    proved_elsewhere = {"QG312"}  # planted by breaking an engine: see test_engines.py
    for info in REGISTRY:
        if info.id in proved_elsewhere:
            continue
        assert info.id in planted, f"no planted flaw for {info.id}"
        assert info.id in clean, f"no clean variant for {info.id}"


def test_multi_turn_escape_needs_a_second_turn() -> None:
    report, _ = run_case("qg003_fires", turns=1)
    assert "QG003" not in {f.rule for f in report.findings}


def test_a_write_no_route_reaches_within_the_turns_raises_no_irreversible_first() -> None:
    # In one turn the router runs one tool, so the charge (after the receipt) is out of reach.
    report, _ = run_case("qg013_fires", turns=1)
    assert "QG013" not in {f.rule for f in report.findings}
