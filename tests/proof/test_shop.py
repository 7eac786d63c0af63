"""Chapter 45's shop: `stalwart verify agent.yaml` gives the chapter's verdict, line for line.

The expected lines are the chapter's own output (pt-BR edition, which stands). Two lines differ
by our data, and are compared by shape: the shop of this repository has three files for the
code checks to read, not four, and our code-check rule set has its own digest. One line is
ours alone: the depth and turns the proof held to, just above the gate (the chapter's "a clean
proof holds to the depth it declares" asks the report to declare it; issue 21).
"""

from __future__ import annotations

import re

from proof.engine import render_text, rules_digest

CHAPTER = """\
stalwart verify agent.yaml
Compiled the rulebook policy.co: the tool check enforces the rules verified here.
Lints from the runtime (none of these blocks the agent):
write_not_retry_safe (warning) on charge_card: a write with no idempotency, so an ambiguous failure goes to a person
write_without_result_schema (warning) on charge_card: a write with no result schema, so its outcome could not be reported
compensation_not_retry_safe (warning) on charge_card: 'refund_card' undoes it and is not retry-safe
write_not_retry_safe (warning) on refund_card: a write with no idempotency, so an ambiguous failure goes to a person
write_without_result_schema (warning) on refund_card: a write with no result schema, so its outcome could not be reported
write_without_result_schema (warning) on send_receipt: a write with no result schema, so its outcome could not be reported
compensation_out_of_reach (warning) on charge_card: agent 'desk' can call it but not 'refund_card', which undoes it, so a run of that agent cannot undo it
Code checks: no finding in 4 file(s) (rules d656f9ab32d3).
Warnings: 2 findings that do not block this agent. Look at each and weigh it; the agent can run as it is.
QG023 Medium on cycle:desk_model (agent.yaml:3)
the cycle through 'desk_model' calls the model or a tool, and nothing declares a budget: the framework's recursion limit of 60 is the run's only ceiling
OWASP LLM06:2026, ASI08:2026
Fix: Declare a budget for the agent or the run, or add an exit the model cannot avoid -- a counter in the state, declared on the edge as exit_after.
QG105 Review on refund_card (agent.yaml:10)
the write 'refund_card' has no compensation, is not irreversible, and runs on a path with another write
OWASP LLM03:2026, ASI08:2026
Fix: Give 'refund_card' an undo -- `undo:` in agent.yaml or `compensation` in the catalogue, which may be the tool itself with its arguments swapped -- or say a failed run may leave it done (`undo: none`), or mark it irreversible.
Rules with nothing to read, so nothing raised:
QG017: no argument is declared as code or a shell command
QG018: no argument is declared as SQL, a query, a path, a URL or a template
QG019: no tool is declared confidential
QG020: no retrieval from a store declared multi-tenant
QG021: no tool is declared to write a store declared persistent
QG106: no tool declares a source or a server, and the catalogue declares no modules
QG107: no agent in the catalogue declares a remote channel
Gate: passed. Nothing blocks this agent: the 2 warnings above are for you to look at and weigh.
"""
DEPTH_LINE = "Proved to a depth of 60 steps per turn over 3 turns; the run's step limit is 60."
CODE_CHECKS = re.compile(r"^Code checks: no finding in (\d+) file\(s\) \(rules ([0-9a-f]{12})\)\.$")


def _lines(text: str) -> list[str]:
    """The chapter's pt-BR text keeps no indentation or blank lines: compare without them."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def test_shop_report_matches_the_chapter_line_for_line(shop_report) -> None:
    ours, chapter = _lines(render_text(shop_report)), _lines(CHAPTER)
    assert ours[-2] == DEPTH_LINE
    del ours[-2]
    assert len(ours) == len(chapter)
    for mine, theirs in zip(ours, chapter, strict=True):
        if theirs.startswith("Code checks:"):
            found = CODE_CHECKS.match(mine)
            assert found, mine
            assert found.group(1) == "3"  # agent.yaml, policy.co, tools.py
            assert found.group(2) == rules_digest()
            continue
        assert mine == theirs


def test_shop_gate_passes_with_two_warnings_and_does_not_stop_the_agent(shop_report) -> None:
    assert shop_report.passed
    assert shop_report.exit_code == 0
    assert [(f.rule, f.subject, f.where) for f in shop_report.findings] == [
        ("QG023", "cycle:desk_model", "agent.yaml:3"),
        ("QG105", "refund_card", "agent.yaml:10"),
    ]
    assert not shop_report.stops_agent


def test_shop_is_proved_to_the_stated_depth_and_turns_with_nothing_undecided(shop_report) -> None:
    assert (shop_report.depth, shop_report.turns) == (60, 3)
    assert shop_report.answers["undecided"] == 0
    assert shop_report.engines["agree"] is True


def test_unrecoverable_refund_witness_runs_a_charge_first_in_the_same_turn(shop_report) -> None:
    refund = next(f for f in shop_report.findings if f.rule == "QG105")
    nodes = [step.node for step in refund.witness]
    assert nodes.index("desk_tool_charge_card") < nodes.index("billing_tool_refund_card")
    assert {step.turn for step in refund.witness} == {1}
    assert refund.witness[-1].at == "agent.yaml:10"


def test_the_fix_of_qg105_is_one_the_agent_file_accepts() -> None:
    """`undo: none` (a failed run may leave it done) answers QG105 and its lint; `undo:` naming
    the undo tool gives it a compensation, as the fix text says."""
    from proof.engine import ProofCache, verify_agent_file
    from tests.proof.conftest import SHOP, shop_files

    text = (SHOP / "agent.yaml").read_text(encoding="utf-8")
    left_done = verify_agent_file(
        text + "undo:\n  refund_card: none\n", files=shop_files(), cache=ProofCache()
    )
    assert [f.rule for f in left_done.findings] == ["QG023"]
    assert "on refund_card: a write neither compensated" not in render_text(left_done)
    undone = verify_agent_file(
        text
        + "undo:\n  refund_card:\n    tool: charge_card\n"
        + "    bind: {order_id: arguments.order_id, amount: arguments.amount}\n",
        files=shop_files(),
        cache=ProofCache(),
    )
    assert "QG105" not in [f.rule for f in undone.findings]
