"""The optional `progress` callback of `prove`: told as the questions are answered, changing nothing."""

from __future__ import annotations

from proof.engine import ProofCache, prove, render_json, verify_agent_file
from proof.engine.prove import PROGRESS_STEPS

from .conftest import SHOP, shop_files, verify_shop


def test_progress_is_told_as_each_engine_answers_and_ends_at_the_total():
    told: list[tuple[int, int]] = []
    text = (SHOP / "agent.yaml").read_text(encoding="utf-8")
    report = verify_agent_file(
        text, files=shop_files(), cache=ProofCache(), progress=lambda a, t: told.append((a, t))
    )
    total = told[0][1]
    assert total > 0 and all(t == total for _, t in told)
    answered = [a for a, _ in told]
    assert answered[0] == 0 and answered[-1] == total and total // 2 in answered
    assert answered == sorted(set(answered))  # it never goes back, nor says the same twice
    assert total == 2 * sum(report.answers.values()) * PROGRESS_STEPS


def test_progress_moves_while_each_engine_goes_not_only_when_it_ends(monkeypatch):
    """Ticks every state (not every few hundred), so the shop's small graph shows the steps a
    large graph takes: the bar moves inside the search's half and inside the fixpoint's."""
    from proof.engine import fixpoint as fixpoint_module
    from proof.engine import search as search_module

    monkeypatch.setattr(search_module, "TICK_EVERY", 1)
    monkeypatch.setattr(fixpoint_module, "TICK_EVERY", 1)
    told: list[tuple[int, int]] = []
    ticked = verify_shop(progress=lambda a, t: told.append((a, t)))
    total = told[0][1]
    answered = [a for a, _ in told]
    assert any(0 < a < total // 2 for a in answered), answered
    assert any(total // 2 < a < total for a in answered), answered
    assert answered == sorted(set(answered))
    assert render_json(ticked) == render_json(verify_shop())


def test_progress_changes_no_result():
    with_progress = verify_shop(progress=lambda a, t: None)
    without = verify_shop()
    assert render_json(with_progress) == render_json(without)


def test_a_cached_result_is_told_at_once_as_finished():
    from proof.engine import build_agent_graph

    doc = build_agent_graph((SHOP / "agent.yaml").read_text(encoding="utf-8"), files=shop_files())
    cache = ProofCache()
    prove(doc, cache=cache)
    told: list[tuple[int, int]] = []
    prove(doc, cache=cache, progress=lambda a, t: told.append((a, t)))
    assert len(told) == 1 and told[0][0] == told[0][1] > 0
