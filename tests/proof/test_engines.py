"""The two engines: they agree on random graphs; a disagreement is a finding (QG312); a search
that runs out of states answers `undecided`, never clean (QG006)."""

from __future__ import annotations

import dataclasses
import importlib
import random

import pytest
from hypothesis import HealthCheck, given, settings

from proof.engine import ProofCache, hunt, load_graph, prove
from proof.engine import fixpoint as fixpoint_module
from proof.engine.fixpoint import fixpoint
from proof.engine.model import REACHABLE, UNDECIDED, Answer, build_model
from proof.engine.questions import ask
from proof.engine.search import search

from .conftest import load_case
from .strategies import agents, random_graph

prove_module = importlib.import_module("proof.engine.prove")

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _model(example):
    graph = load_graph(random_graph(example))
    questions = ask(graph)
    return build_model(
        graph,
        questions.obligations,
        questions.cycles,
        depth=example["depth"],
        turns=example["turns"],
    )


@FAST
@given(agents())
def test_search_and_fixpoint_give_the_same_answers_on_random_graphs(example) -> None:
    model = _model(example)
    a = search(model, max_states=20_000)
    b = fixpoint(model, max_states=20_000)
    if a.exhausted or b.exhausted:
        return
    assert a.states == b.states
    for index, obligation in enumerate(model.obligations):
        assert a.answers[index].same_as(b.answers[index]), obligation.key
    assert [c.status for c in a.cycles] == [c.status for c in b.cycles]


@FAST
@given(agents())
def test_a_witness_ends_on_the_edge_its_question_asks_about(example) -> None:
    model = _model(example)
    found = search(model, max_states=20_000)
    for index, path in found.witnesses.items():
        edges = {edge for edge, _ in model.obligations[index].targets}
        assert path[-1][1] in edges
        assert path[0][1] is None and path[0][0].node in model.graph.entries


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agents())
def test_forgetting_dead_parts_of_the_state_changes_no_answer(example) -> None:
    model = _model(example)
    keeping = dataclasses.replace(model, dead=(0,) * len(model.graph.nodes))
    reduced, full = search(model, max_states=20_000), search(keeping, max_states=20_000)
    if reduced.exhausted or full.exhausted:
        return
    assert reduced.states <= full.states
    for index, obligation in enumerate(model.obligations):
        assert reduced.answers[index].same_as(full.answers[index]), obligation.key
    # A loop the full state repeats is a loop the reduced one repeats; the reduced state may see
    # it a lap sooner (a dead part that differs on the first lap only), within a tight depth.
    for mine, theirs in zip(reduced.cycles, full.cycles, strict=True):
        assert theirs.status != "reachable" or mine.status == "reachable"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agents())
def test_adding_an_unchecked_route_to_a_tool_always_produces_qg001(example) -> None:
    doc = random_graph(example)
    tools = [n for n in doc["nodes"] if n["kind"] == "tool"]
    if not tools:
        return
    rnd = random.Random(example["seed"])
    target = rnd.choice(tools)
    entry = rnd.choice(doc["entries"])
    doc["edges"].append({"from": entry, "to": target["id"], "on": "shortcut"})
    result = prove(doc, depth=max(example["depth"], 2), turns=example["turns"], cache=None)
    found = hunt(result).findings
    assert any(f.rule == "QG001" and f.subject == target["tool"] for f in found)


def test_a_disagreement_between_the_engines_is_a_qg312_finding_that_fails_the_gate(
    monkeypatch,
) -> None:
    real = fixpoint_module.fixpoint

    def broken(model, **options):
        result = real(model, **options)
        result.answers = [Answer("unreachable") for _ in result.answers]
        return result

    monkeypatch.setattr(prove_module, "fixpoint", broken)
    text, files, overlay, _ = load_case("qg014_fires")
    from proof.engine import build_agent_graph

    doc = build_agent_graph(text, files=files)
    result = prove(doc, cache=None)
    assert result.disagreements
    findings = hunt(result).findings
    disagreement = [f for f in findings if f.rule == "QG312"]
    assert disagreement and all(f.fails_gate for f in disagreement)
    assert any(f.rule == "QG014" for f in findings)  # the search's finding is kept


def test_engines_agree_on_the_planted_corpus_without_any_qg312() -> None:
    from .conftest import corpus_cases, run_case

    for case in corpus_cases():
        report, _ = run_case(case)
        assert "QG312" not in {f.rule for f in report.findings}, case


def test_a_search_out_of_states_answers_undecided_and_reports_qg006_not_clean() -> None:
    text, files, overlay, _ = load_case("qg105_fires")
    from proof.engine import build_agent_graph

    doc = build_agent_graph(text, files=files)
    result = prove(doc, max_states=5, cache=None)
    assert result.stats["search"]["exhausted"] and result.stats["fixpoint"]["exhausted"]
    assert any(a.status == UNDECIDED for a in result.answers)
    findings = hunt(result).findings
    undecided = [f for f in findings if f.rule == "QG006"]
    assert undecided and all(f.status == "undecided" for f in undecided)
    assert all(a.status in (REACHABLE, UNDECIDED) for a in result.answers), (
        "an exhausted search never says unreachable"
    )


def test_a_proof_is_cached_by_the_graphs_digest_depth_and_turns() -> None:
    text, files, overlay, _ = load_case("qg023_fires")
    from proof.engine import build_agent_graph

    cache = ProofCache()
    first = prove(build_agent_graph(text, files=files), cache=cache)
    again = prove(build_agent_graph(text, files=files), cache=cache)
    assert again is first and cache.hits == 1
    deeper = prove(build_agent_graph(text, files=files), depth=61, cache=cache)
    assert deeper is not first and cache.misses == 2


def test_the_cache_forgets_the_least_recently_used_proof() -> None:
    cache = ProofCache(size=1)
    text, files, _, _ = load_case("qg023_fires")
    from proof.engine import build_agent_graph

    doc = build_agent_graph(text, files=files)
    prove(doc, cache=cache)
    prove(doc, depth=5, cache=cache)
    prove(doc, cache=cache)
    assert cache.hits == 0 and cache.misses == 3


def test_prove_refuses_a_depth_below_one() -> None:
    from proof.engine import ProofError

    text, files, _, _ = load_case("qg023_fires")
    from proof.engine import build_agent_graph

    with pytest.raises(ProofError):
        prove(build_agent_graph(text, files=files), depth=0, cache=None)
