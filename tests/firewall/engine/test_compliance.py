"""The compliance cases (`cases/*.json`) through both engines.

Each case is `{"name", "policy", "call", "want"}`; `want` lists the decision fields that must
come out exactly so (any field of `Decision.to_dict()`). The same files are meant to be run
through the API and the CLI, so they hold plain JSON and need no resolver: hostnames appear
only against lists without IP entries.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from firewall.engine import compile_policy, reference_evaluate, validate_policy

CASES_DIR = Path(__file__).parent / "cases"


def load_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for path in sorted(CASES_DIR.glob("*.json")):
        cases.extend(json.loads(path.read_text()))
    return cases


CASES = load_cases()


def _no_lookup(host: str) -> list[str]:
    raise AssertionError(f"compliance cases must not resolve hostnames ({host})")


def test_the_cases_are_loaded() -> None:
    assert len(CASES) >= 40
    assert len({case["name"] for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_compliance_case(case: dict[str, Any]) -> None:
    assert validate_policy(case["policy"]) == []
    compiled = compile_policy(case["policy"], resolver=_no_lookup).evaluate(case["call"]).to_dict()
    reference = reference_evaluate(case["policy"], case["call"], resolver=_no_lookup).to_dict()
    assert compiled == reference
    for key, value in case["want"].items():
        assert compiled[key] == value, key
