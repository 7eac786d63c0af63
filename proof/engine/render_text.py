"""The text renderer: `stalwart verify`'s report in the shape chapter 45 prints.

Lines, in order: the command; the rulebook's state; the runtime's lints (as `guard.engine`
renders them); the code checks; the findings that fail the gate, if any, each with the path
that reaches it; the warnings; the rules with nothing to read; the depth and turns the proof
holds to (with a warning when the depth is below the run's step limit); the gate. A finding is its rule,
severity, subject and place, then its message, its OWASP tags and its fix, indented.
"""

from __future__ import annotations

from guard.engine import render_lints

from .findings import Finding
from .report import Report


def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


def rulebook_line(report: Report) -> str:
    state = report.rulebook
    if state is None:
        return "No rulebook: the tool check decides every call from the catalogue alone."
    if not state.compiled:
        return (
            f"The rulebook {state.file} does not compile: the agent cannot hold it "
            "(see QG005 below)."
        )
    if not state.enforced:
        return (
            f"Compiled the rulebook {state.file}, but the tool check has `your_rules` switched "
            "off: it does not enforce the rules verified here."
        )
    return f"Compiled the rulebook {state.file}: the tool check enforces the rules verified here."


def code_lines(report: Report) -> list[str]:
    code = report.code
    if not code.findings:
        return [f"Code checks: no finding in {code.files} file(s) (rules {code.digest})."]
    count = len(code.findings)
    lines = [
        f"Code checks: {count} {_plural(count, 'finding', 'findings')} in {code.files} file(s) "
        f"(rules {code.digest}); none of these blocks the agent:"
    ]
    lines.extend(f"  {finding}" for finding in code.findings)
    return lines


def _path(finding: Finding) -> str | None:
    if not finding.witness:
        return None
    parts: list[str] = []
    turn = None
    for step in finding.witness:
        label = f"{step.node} ({step.at})" if step.at else step.node
        if step.turn != turn:
            turn = step.turn
            label = f"[turn {turn}] {label}"
        parts.append(label)
    return " > ".join(parts)


def finding_lines(finding: Finding, *, with_path: bool) -> list[str]:
    where = f" ({finding.where})" if finding.where else ""
    lines = [
        f"{finding.rule} {finding.severity} on {finding.subject}{where}",
        f"  {finding.message}",
    ]
    if with_path:
        path = _path(finding)
        if path:
            lines.append(f"  Path: {path}")
    if finding.owasp:
        lines.append(f"  OWASP {', '.join(finding.owasp)}")
    lines.append(f"  Fix: {finding.fix}")
    return lines


def depth_lines(report: Report) -> list[str]:
    """What a clean result holds to, and a warning when it stops short of the run's limit."""
    lines = [
        f"Proved to a depth of {report.depth} {_plural(report.depth, 'step', 'steps')} per turn "
        f"over {report.turns} {_plural(report.turns, 'turn', 'turns')}; the run's step limit is "
        f"{report.step_limit}."
    ]
    if report.below_step_limit:
        consequence = (
            "under --strict this fails the gate."
            if report.strict
            else "with --strict this fails the gate."
        )
        lines.append(
            f"Warning: the depth {report.depth} is below the run's step limit of "
            f"{report.step_limit}: a route longer than {report.depth} "
            f"{_plural(report.depth, 'step', 'steps')} in a turn was not searched, so nothing is "
            f"proved past it; {consequence}"
        )
    return lines


def gate_line(report: Report) -> str:
    warnings = len(report.warnings)
    undecided = len(report.undecided)
    if report.fails_on_depth and not report.failing:
        return (
            f"Gate: failed. The proof went to a depth of {report.depth}, below the run's step "
            f"limit of {report.step_limit}, and --strict asks for the whole run: verify again "
            f"with --depth {report.step_limit}."
        )
    if not report.passed:
        failing = report.failing
        rules = ", ".join(sorted({f.rule for f in failing}))
        return (
            f"Gate: failed. {len(failing)} {_plural(len(failing), 'finding', 'findings')} above "
            f"{_plural(len(failing), 'fails', 'fail')} the gate ({rules}): fix "
            f"{_plural(len(failing), 'it', 'them')} and verify again."
        )
    if warnings == 0:
        return "Gate: passed. Nothing blocks this agent, and nothing was found to weigh."
    line = "Gate: passed. Nothing blocks this agent: " + (
        "the warning above is for you to look at and weigh."
        if warnings == 1
        else f"the {warnings} warnings above are for you to look at and weigh."
    )
    if undecided:
        who = (
            "It says"
            if warnings == 1
            else f"Of these, {undecided} {_plural(undecided, 'says', 'say')}"
        )
        line += f" {who} what the proof could not decide (QG006): nothing is proved there."
    return line


def render_text(report: Report) -> str:
    """The report as `stalwart verify` prints it."""
    lines: list[str] = [f"stalwart verify {report.file}", ""]
    lines.append(rulebook_line(report))
    lines.extend(render_lints(report.lints).rstrip("\n").split("\n"))
    lines.append("")
    lines.extend(code_lines(report))
    lines.append("")
    failing, warnings = report.failing, report.warnings
    if failing:
        count = len(failing)
        lines.append(
            f"Blocking: {count} {_plural(count, 'finding fails', 'findings fail')} the gate. "
            "Each is a way past a check, with the path that takes it."
        )
        lines.append("")
        for finding in failing:
            lines.extend(finding_lines(finding, with_path=True))
            lines.append("")
    if warnings:
        count = len(warnings)
        lines.append(
            f"Warnings: {count} {_plural(count, 'finding that does', 'findings that do')} not "
            "block this agent. Look at each and weigh it; the agent can run as it is."
        )
        lines.append("")
        for finding in warnings:
            lines.extend(finding_lines(finding, with_path=False))
            lines.append("")
    if report.nothing_to_read:
        lines.append("Rules with nothing to read, so nothing raised:")
        lines.extend(f"  {rule}: {sentence}" for rule, sentence in report.nothing_to_read)
        lines.append("")
    lines.extend(depth_lines(report))
    lines.append(gate_line(report))
    return "\n".join(lines) + "\n"
