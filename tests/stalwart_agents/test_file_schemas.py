"""The JSON Schemas shipped for the firewall policy and the rule sheet: built from the engines'
own vocabularies, equal to the files in the package, accepting what the engines accept and
refusing what they refuse for the shape of the file."""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path

import jsonschema
import pytest

from firewall.engine.presets import PRESETS
from firewall.engine.validator import validate_policy
from rulebooks.compiler import rule_sheet
from stalwart_agents import file_schemas

ROOT = Path(__file__).resolve().parents[2]
CASES = json.loads((ROOT / "tests/firewall/engine/cases/firewall.json").read_text())


def checker(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((file_schemas.SCHEMAS / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("name", sorted(file_schemas.BUILT))
def test_the_shipped_schema_is_the_one_built_from_the_engines(name):
    shipped = (file_schemas.SCHEMAS / name).read_text(encoding="utf-8")
    assert shipped == file_schemas.text_of(file_schemas.BUILT[name]()), (
        f"{name} is stale: run `python -m stalwart_agents.file_schemas`"
    )


def policies() -> list[tuple[str, dict]]:
    found = [
        (case["name"], case["policy"]) for case in CASES if not validate_policy(case["policy"])
    ]
    for name, rules in PRESETS.items():
        found.append(
            (f"preset {name}", {"name": name, "default_verdict": "allow", "rules": list(rules)})
        )
    return found


@pytest.mark.parametrize(("name", "policy"), policies(), ids=[n for n, _ in policies()])
def test_every_policy_the_engine_accepts_validates(name, policy):
    errors = [e.message for e in checker("firewall-policy.schema.json").iter_errors(policy)]
    assert errors == [], (name, errors)


def _broken(change) -> dict:  # noqa: ANN001
    policy = {
        "name": "p",
        "default_verdict": "allow",
        "rules": [
            {
                "name": "r",
                "priority": 1,
                "tool_name_glob": "shell.*",
                "args_match": [{"path": "$.command", "op": "regex", "value": "rm\\s+-rf"}],
                "verdict": "deny",
            }
        ],
    }
    broken = copy.deepcopy(policy)
    change(broken)
    return broken


BROKEN = {
    "unknown policy field": lambda p: p.update(stge="tool_call"),
    "unknown rule field": lambda p: p["rules"][0].update(stge="tool_call"),
    "unknown verdict": lambda p: p["rules"][0].update(verdict="block"),
    "unknown operator": lambda p: p["rules"][0]["args_match"][0].update(op="matches"),
    "no priority": lambda p: p["rules"][0].pop("priority"),
    "a default only a rule may have": lambda p: p.update(default_verdict="sanitize"),
    "sanitize without its payload": lambda p: p["rules"][0].update(verdict="sanitize"),
    "cap_cost without its cents": lambda p: p["rules"][0].update(verdict="cap_cost"),
    "unknown stage": lambda p: p["rules"][0].update(stage="outbound"),
    "unknown sequence action": lambda p: p["rules"].append(
        {
            "name": "s",
            "priority": 2,
            "verdict": "audit",
            "sequence": {"steps": [{"tool_glob": "a"}], "on_match": ["page_someone"]},
        }
    ),
}


@pytest.mark.parametrize("mistake", sorted(BROKEN))
def test_a_policy_the_engine_refuses_for_its_shape_the_schema_refuses_too(mistake):
    policy = _broken(BROKEN[mistake])
    assert validate_policy(policy), mistake  # the engine's own judgement first
    assert list(checker("firewall-policy.schema.json").iter_errors(policy)), mistake


def sheets() -> list[Path]:
    return sorted(ROOT.glob("examples/**/*.csv")) + sorted(ROOT.glob("tests/proof/corpus/*/*.csv"))


@pytest.mark.parametrize("path", sheets(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_rule_sheet_in_the_repo_validates_row_by_row(path):
    rule_sheet.compile_rule_sheet(path.read_bytes(), filename=path.name)  # the compiler agrees
    validator = checker("rule-sheet.schema.json")
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            row = {key.strip().lower(): value for key, value in row.items()}
            assert [e.message for e in validator.iter_errors(row)] == [], (path, row)


def test_a_rule_sheet_row_with_an_unknown_column_or_decision_is_refused():
    validator = checker("rule-sheet.schema.json")
    assert not list(validator.iter_errors({"ferramenta": "refund_card", "decisao": "confirm"}))
    assert list(validator.iter_errors({"tool": "refund_card", "decision": "maybe"}))
    assert list(validator.iter_errors({"tool": "refund_card", "colour": "red"}))
    assert list(validator.iter_errors({"reason": "no tool"}))
    names = set(validator.schema["properties"])
    assert names == {alias for aliases in rule_sheet.COLUMNS.values() for alias in aliases}
