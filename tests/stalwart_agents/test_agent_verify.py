"""`Agent(..., verify=True)`: proved before the first turn, once per graph, never clean unproved."""

from __future__ import annotations

import functools
import importlib
import shutil
import sys
import types
import uuid
from pathlib import Path

import pytest

from proof.engine import DEFAULT_CACHE, Finding, ProofError
from stalwart_agents import Agent, NotVerified, cli_verify
from stalwart_agents.agent import stopping_findings

#: The module, not the function `proof.engine` exports under the same name.
prove_module = importlib.import_module("proof.engine.prove")

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop"
CORPUS = ROOT / "tests" / "proof" / "corpus"

#: An agent whose refund reads an earlier get_order without binding the order (QG003): a
#: Vulnerability, so it must not run. Its get_order leaves a mark when it runs.
PLANTED_YAML = """\
agents:
  desk:
    tools: [get_order, refund]
    on_unread: refuse
tools:
  - python: {package}.tools
"""
PLANTED_TOOLS = """\
from pathlib import Path

MARK = Path(__file__).with_name("ran.txt")

TOOLS = [
    {
        "name": "get_order",
        "description": "Shows an order: its status, the card on file and the amount.",
        "kind": "read",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "minLength": 1}},
            "required": ["order_id"],
        },
        "result_schema": {"type": "object"},
        "idempotent": True,
    },
    {
        "name": "refund",
        "description": "Refunds an order.",
        "kind": "write",
        "after": ["get_order"],
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
]


def get_order(order_id):
    MARK.write_text(order_id)
    return {"order_id": order_id, "status": "paid"}


def refund(order_id):
    MARK.write_text("refund " + order_id)
    return {"refunded": order_id}
"""


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    package = f"planted_{uuid.uuid4().hex[:10]}"
    folder = tmp_path / package
    folder.mkdir()
    (folder / "agent.yaml").write_text(PLANTED_YAML.format(package=package))
    (folder / "tools.py").write_text(PLANTED_TOOLS)
    return folder / "agent.yaml"


@pytest.fixture
def engine_calls(monkeypatch) -> list[str]:
    """Every time the engines are actually run (not answered from the cache)."""
    calls: list[str] = []
    real = prove_module._prove

    def counting(graph, *args, **kwargs):
        calls.append(graph.digest)
        return real(graph, *args, **kwargs)

    DEFAULT_CACHE.clear()
    monkeypatch.setattr(prove_module, "_prove", counting)
    yield calls
    DEFAULT_CACHE.clear()


def test_the_shop_is_proved_by_default_and_runs_with_its_warnings(engine_calls):
    desk = Agent.from_file(SHOP / "agent.yaml")
    assert engine_calls, "the default must prove"
    assert desk.report.passed
    assert sorted(f.rule for f in desk.report.findings) == ["QG023", "QG105"]
    reply = desk.chat("show order 4411", user="ana", agent="desk")
    assert [r["tool"] for r in reply.ran] == ["get_order"]


def test_a_vulnerability_raises_not_verified_with_the_findings_and_nothing_runs(planted):
    with pytest.raises(NotVerified) as caught:
        Agent.from_file(planted)
    error = caught.value
    assert [f.rule for f in error.findings] == ["QG003"]
    assert error.findings[0].subject == "refund"
    assert error.report is not None and not error.report.passed
    assert "QG003 on refund (agent.yaml:3)" in str(error)
    assert not (planted.parent / "ran.txt").exists()
    # The same agent unproved is built and runs a turn: the proof is what stopped it.
    unproved = Agent.from_file(planted, verify=False)
    assert unproved.report is None
    reply = unproved.chat("show order 4411", user="ana", agent="desk")
    assert [r["tool"] for r in reply.ran] == ["get_order"]
    assert (planted.parent / "ran.txt").read_text() == "4411"


@pytest.mark.parametrize("case", ["qg011_fires", "qg012_fires", "qg014_fires", "qg022_fires"])
def test_every_corpus_vulnerability_that_stops_agent_stops_it(case):
    with pytest.raises(NotVerified) as caught:
        Agent.from_file(CORPUS / case / "agent.yaml")
    assert [f.rule for f in caught.value.findings] == [case[:5].upper()]


def test_a_finding_that_does_not_stop_the_agent_lets_it_run():
    # QG013 is a Bug: the gate warns about it, Agent(...) still runs.
    agent = Agent.from_file(CORPUS / "qg013_fires" / "agent.yaml")
    assert [f.rule for f in agent.report.findings] == ["QG013"]


def test_rebuilding_the_same_graph_is_answered_from_the_cache(engine_calls, tmp_path):
    first = Agent.from_file(SHOP / "agent.yaml")
    second = Agent.from_file(SHOP / "agent.yaml")
    assert len(engine_calls) == 1
    assert first.report.graph_digest == second.report.graph_digest == engine_calls[0]
    # Another graph (agent.yaml edited) is proved again.
    copy = tmp_path / "shop"
    shutil.copytree(SHOP, copy)
    agent_yaml = copy / "agent.yaml"
    agent_yaml.write_text(agent_yaml.read_text() + "# edited\n")
    third = Agent.from_file(agent_yaml)
    assert len(engine_calls) == 2
    assert third.report.graph_digest != first.report.graph_digest


def test_verify_false_skips_the_proof(engine_calls, planted):
    Agent.from_file(SHOP / "agent.yaml", verify=False)
    Agent.from_file(planted, verify=False)
    assert engine_calls == []


@pytest.mark.parametrize(
    "failure", [ProofError("the state budget must be 1 or more"), RuntimeError("engine crash")]
)
def test_a_proof_that_cannot_run_raises_and_is_never_clean(monkeypatch, failure):
    def broken(*args, **kwargs):
        raise failure

    DEFAULT_CACHE.clear()
    monkeypatch.setattr(prove_module, "_prove", broken)
    with pytest.raises(NotVerified) as caught:
        Agent.from_file(SHOP / "agent.yaml")
    assert "the proof could not run" in str(caught.value)
    assert str(failure) in str(caught.value)
    assert caught.value.findings == () and caught.value.report is None
    DEFAULT_CACHE.clear()


def test_an_agent_file_the_proof_cannot_read_raises(tmp_path):
    copy = tmp_path / "shop"
    shutil.copytree(SHOP, copy)
    agent = Agent.from_file(copy / "agent.yaml", verify=False)
    (copy / "tools.py").unlink()  # the proof reads the source; it is gone
    with pytest.raises(NotVerified, match="could not run"):
        Agent(agent.file, path=agent.path, rules=agent.rules(), modules=agent.modules)


def test_a_question_left_undecided_stops_the_agent(monkeypatch):
    # Proved to 2 steps only, the shop's tools lie beyond the bound: nothing is proved of them.
    shallow = functools.partial(cli_verify.verify_agent_input, depth=2)
    monkeypatch.setattr(cli_verify, "verify_agent_input", shallow)
    with pytest.raises(NotVerified, match="did not finish") as caught:
        Agent.from_file(SHOP / "agent.yaml")
    assert {f.rule for f in caught.value.findings} == {"QG006"}
    assert caught.value.report.passed  # the gate passes; Agent(...) still refuses


def _finding(rule: str, subject: str) -> Finding:
    return Finding(rule, subject, None, "m", "f")


def test_which_findings_stop_the_agent_or_leave_its_proof_unfinished():
    report = types.SimpleNamespace(
        findings=[
            _finding("QG001", "refund"),  # stops Agent(...)
            _finding("QG013", "charge"),  # a Bug: does not
            _finding("QG006", "QG001"),  # an undecided question of a rule that stops it
            _finding("QG006", "QG023"),  # undecided, of a rule that does not
            _finding("QG006", "desk_tool_refund"),  # steps beyond the bound
            _finding("QG312", "refund"),  # the engines disagree
        ]
    )
    stops, unfinished = stopping_findings(report)
    assert [(f.rule, f.subject) for f in stops] == [("QG001", "refund")]
    assert [(f.rule, f.subject) for f in unfinished] == [
        ("QG006", "QG001"),
        ("QG006", "desk_tool_refund"),
        ("QG312", "refund"),
    ]


def test_the_module_imported_must_be_the_source_proved(monkeypatch, tmp_path):
    Agent.from_file(SHOP / "agent.yaml", verify=False)  # imports `shop.tools`
    other = tmp_path / "tools.py"
    other.write_text((SHOP / "tools.py").read_text() + "\nEXTRA = 1\n")
    fake = types.ModuleType("shop.tools")
    fake.__file__ = str(other)
    fake.TOOLS = sys.modules["shop.tools"].TOOLS
    monkeypatch.setitem(sys.modules, "shop.tools", fake)
    with pytest.raises(NotVerified, match="is not the source proved"):
        Agent.from_file(SHOP / "agent.yaml")


def test_export_is_the_graph_the_agent_was_proved_on():
    desk = Agent.from_file(SHOP / "agent.yaml")
    doc = desk.export()
    from proof.engine import graph_digest

    assert doc["format"] == "qls-graph/1"
    assert graph_digest(doc) == desk.report.graph_digest
