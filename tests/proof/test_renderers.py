"""The three renderers of one report -- text, JSON, SARIF 2.1.0 -- each pinned by a snapshot.

Snapshots live in `tests/proof/snapshots/`. After a deliberate change of the output, rewrite
them with `STALWART_UPDATE_SNAPSHOTS=1 pytest tests/proof/test_renderers.py` and read the diff.
"""

from __future__ import annotations

import json
import os

import pytest

from proof.engine import render_json, render_sarif, render_text

from .conftest import SNAPSHOTS, run_case, verify_shop

RENDERERS = {"txt": render_text, "json": render_json, "sarif": render_sarif}


def _check(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("STALWART_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {name}: run with STALWART_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("suffix", sorted(RENDERERS))
def test_shop_report_renders_as_its_snapshot(suffix: str) -> None:
    _check(f"shop.{suffix}", RENDERERS[suffix](verify_shop()))


@pytest.mark.parametrize("case", ["qg014_fires", "qg005_syntax_fires", "qg006_fires"])
@pytest.mark.parametrize("suffix", sorted(RENDERERS))
def test_failing_and_undecided_reports_render_as_their_snapshots(case: str, suffix: str) -> None:
    report, _ = run_case(case)
    _check(f"{case}.{suffix}", RENDERERS[suffix](report))


def test_failing_report_prints_the_path_of_each_blocking_finding() -> None:
    report, _ = run_case("qg014_fires")
    text = render_text(report)
    assert "Blocking: 1 finding fails the gate." in text
    assert (
        "  Path: [turn 1] desk_router (agent.yaml:3) > desk_check_refund_card (agent.yaml:4) > "
        "desk_confirm_refund_card (agent.yaml:4) > desk_tool_refund_card (agent.yaml:4)"
    ) in text
    assert text.rstrip().endswith(
        "Gate: failed. 1 finding above fails the gate (QG014): fix it and verify again."
    )


def test_json_document_names_the_depth_turns_and_graph_it_holds_to() -> None:
    data = json.loads(render_json(verify_shop()))
    assert data["format"] == "stalwart-verify/1"
    assert data["proof"]["depth"] == 60 and data["proof"]["turns"] == 3
    assert data["proof"]["graph"].startswith("sha256:")
    assert data["gate"] == {
        "passed": True,
        "failing": 0,
        "warnings": 2,
        "undecided": 0,
        "stops_agent": False,
        "strict": False,
        "fails_on_depth": False,
    }
    assert data["proof"]["step_limit"] == 60 and data["proof"]["below_step_limit"] is False
    assert [f["rule"] for f in data["findings"]] == ["QG023", "QG105"]
    assert data["findings"][1]["witness"][-1]["at"] == "agent.yaml:10"


def test_sarif_log_has_the_shape_code_scanning_reads() -> None:
    log = json.loads(render_sarif(run_case("qg014_fires")[0]))
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules[:2]] == ["QG001", "QG002"]
    result = next(r for r in run["results"] if r["ruleId"] == "QG014")
    assert result["level"] == "error"
    assert rules[result["ruleIndex"]]["id"] == "QG014"
    location = result["locations"][0]["physicalLocation"]
    assert location == {"artifactLocation": {"uri": "agent.yaml"}, "region": {"startLine": 4}}
    flow = result["codeFlows"][0]["threadFlows"][0]["locations"]
    assert len(flow) == 4
    assert result["partialFingerprints"]["stalwartFinding/v1"]
