"""The JSON renderer: the findings document, every field of the report, nothing timed.

Its shape (`stalwart-verify/1`) names what a clean proof holds to -- the depth and the number of
turns, against the run's own step limit -- and the graph it was proved on (its digest), so a
result can be tied to what ran.
"""

from __future__ import annotations

import json
from typing import Any

from .report import Report

FORMAT = "stalwart-verify/1"


def report_dict(report: Report) -> dict[str, Any]:
    """The report as plain JSON data."""
    rulebook = None
    if report.rulebook is not None:
        rulebook = {
            "file": report.rulebook.file,
            "compiled": report.rulebook.compiled,
            "enforced": report.rulebook.enforced,
            "format": report.rulebook.format,
        }
    return {
        "format": FORMAT,
        "file": report.file,
        "proof": {
            "depth": report.depth,
            "turns": report.turns,
            "step_limit": report.step_limit,
            "below_step_limit": report.below_step_limit,
            "graph": report.graph_digest,
            "nodes": report.nodes,
            "edges": report.edges,
            "answers": dict(report.answers),
            "engines": report.engines,
        },
        "rulebook": rulebook,
        "lints": [lint.to_dict() for lint in report.lints],
        "code_checks": {
            "files": report.code.files,
            "rules": report.code.digest,
            "findings": [f.to_dict() for f in report.code.findings],
        },
        "findings": [finding.to_dict() for finding in report.findings],
        "nothing_to_read": [{"rule": r, "reason": s} for r, s in report.nothing_to_read],
        "gate": {
            "passed": report.passed,
            "failing": len(report.failing),
            "warnings": len(report.warnings),
            "undecided": len(report.undecided),
            "stops_agent": report.stops_agent,
            "strict": report.strict,
            "fails_on_depth": report.fails_on_depth,
        },
    }


def render_json(report: Report) -> str:
    """The report as indented JSON text."""
    return json.dumps(report_dict(report), indent=2, ensure_ascii=False) + "\n"
