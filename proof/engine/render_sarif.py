"""The SARIF 2.1.0 renderer, for code scanning: one run, the rules, a result per finding.

Every QG rule of the registry is a reporting descriptor (its title, what it proves, its fix as
help, its page in the console as `helpUri`, its OWASP tags and type as properties); so are the code checks and the runtime's lints
that appear. A finding that fails the gate is an `error`, a warning a `warning`, a lint or a code
check a `note`. A finding's place is its location; its witness is a code flow whose thread flow
walks the path, step by step, each at the file and line the step came from. Each result carries
a partial fingerprint (rule, subject, message) so code scanning can follow it between runs. The
run's properties name the depth, the turns and the run's step limit; a depth below that limit is
a notification on the invocation (an error under `--strict`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .codechecks import RULES as CODE_RULES
from .findings import Finding
from .report import Report
from .rules import REGISTRY, rule_page_path

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME = "stalwart verify"
VERSION = "0.1.0"


def _location(where: str | None, message: str | None = None) -> dict[str, Any] | None:
    if not where:
        return None
    file, _, line = where.rpartition(":")
    if not file or not line.isdigit():
        file, line = where, ""
    physical: dict[str, Any] = {"artifactLocation": {"uri": file}}
    if line:
        physical["region"] = {"startLine": int(line)}
    location: dict[str, Any] = {"physicalLocation": physical}
    if message:
        location["message"] = {"text": message}
    return location


def _fingerprint(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


def _rule_descriptors(report: Report, console: str | None) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    base = console.rstrip("/") if console else ""
    for info in REGISTRY:
        rules.append(
            {
                "id": info.id,
                "name": "".join(word.capitalize() for word in info.title.split()),
                "shortDescription": {"text": info.title},
                "fullDescription": {"text": info.proves},
                "help": {"text": info.fix},
                "helpUri": base + rule_page_path(info.id),
                "defaultConfiguration": {"level": "error" if info.fails_gate else "warning"},
                "properties": {
                    "tags": [info.type, *info.owasp],
                    "type": info.type,
                    "severity": info.severity,
                    "fails_gate": info.fails_gate,
                    "stops_agent": info.stops_agent,
                    "does_not_prove": info.does_not_prove,
                },
            }
        )
    for rule_id, text in CODE_RULES:
        rules.append(
            {
                "id": rule_id,
                "shortDescription": {"text": text},
                "defaultConfiguration": {"level": "note"},
                "properties": {"tags": ["code check"]},
            }
        )
    for code in sorted({lint.code for lint in report.lints}):
        rules.append(
            {
                "id": code,
                "shortDescription": {"text": code.replace("_", " ")},
                "defaultConfiguration": {"level": "note"},
                "properties": {"tags": ["lint"]},
            }
        )
    return rules


def _result(finding: Finding, index: dict[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.rule,
        "ruleIndex": index[finding.rule],
        "level": "error" if finding.fails_gate else "warning",
        "message": {"text": f"{finding.message}. Fix: {finding.fix}"},
        "partialFingerprints": {
            "stalwartFinding/v1": _fingerprint(finding.rule, finding.subject, finding.message)
        },
        "properties": {
            "subject": finding.subject,
            "severity": finding.severity,
            "type": finding.type,
            "status": finding.status,
            "owasp": list(finding.owasp),
        },
    }
    location = _location(finding.where)
    if location is not None:
        result["locations"] = [location]
    steps = []
    for step in finding.witness:
        label = step.node + (f" (on {step.on})" if step.on else "")
        if step.turn is not None:
            label = f"turn {step.turn}, step {step.step}: {label}"
        where = _location(step.at, label) or {"message": {"text": label}}
        steps.append({"location": where})
    if steps:
        result["codeFlows"] = [{"threadFlows": [{"locations": steps}]}]
    return result


def _invocation(report: Report) -> dict[str, Any]:
    """The run's invocation; a depth below the run's step limit is a notification on it."""
    invocation: dict[str, Any] = {"executionSuccessful": True}
    if report.below_step_limit:
        invocation["toolExecutionNotifications"] = [
            {
                "descriptor": {"id": "depth-below-step-limit"},
                "level": "error" if report.strict else "warning",
                "message": {
                    "text": (
                        f"the proof went to a depth of {report.depth}, below the run's step "
                        f"limit of {report.step_limit}: nothing is proved past it"
                    )
                },
            }
        ]
    return invocation


def sarif_dict(report: Report, *, console: str | None = None) -> dict[str, Any]:
    """The report as a SARIF 2.1.0 log; each QG rule's `helpUri` is its console page, under
    `console` (the console's address) when given, else the path alone."""
    rules = _rule_descriptors(report, console)
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    results = [_result(finding, index) for finding in report.findings]
    for finding in report.code.findings:
        results.append(
            {
                "ruleId": finding.rule,
                "ruleIndex": index[finding.rule],
                "level": "note",
                "message": {"text": finding.message},
                "locations": [_location(f"{finding.file}:{finding.line}")],
                "partialFingerprints": {
                    "stalwartFinding/v1": _fingerprint(finding.rule, finding.file, finding.message)
                },
            }
        )
    for lint in report.lints:
        results.append(
            {
                "ruleId": lint.code,
                "ruleIndex": index[lint.code],
                "level": "note",
                "message": {"text": f"on {lint.tool}: {lint.message}"},
                "partialFingerprints": {
                    "stalwartFinding/v1": _fingerprint(lint.code, lint.tool, lint.message)
                },
            }
        )
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL_NAME,
                        "semanticVersion": VERSION,
                        "rules": rules,
                    }
                },
                "invocations": [_invocation(report)],
                "results": results,
                "properties": {
                    "file": report.file,
                    "graph": report.graph_digest,
                    "depth": report.depth,
                    "turns": report.turns,
                    "step_limit": report.step_limit,
                    "strict": report.strict,
                    "gate": "passed" if report.passed else "failed",
                    "nothing_to_read": {r: s for r, s in report.nothing_to_read},
                },
            }
        ],
    }


def render_sarif(report: Report, *, console: str | None = None) -> str:
    """The SARIF log as indented JSON text (`console`: see `sarif_dict`)."""
    return json.dumps(sarif_dict(report, console=console), indent=2, ensure_ascii=False) + "\n"
