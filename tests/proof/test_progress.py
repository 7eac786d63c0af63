"""The optional `progress` callback of `prove`: told as the questions are answered, changing nothing."""

from __future__ import annotations

from proof.engine import ProofCache, prove, render_json, verify_agent_file

from .conftest import SHOP, shop_files, verify_shop


def test_progress_is_told_as_each_engine_answers_and_ends_at_the_total():
    told: list[tuple[int, int]] = []
    text = (SHOP / "agent.yaml").read_text(encoding="utf-8")
    report = verify_agent_file(
        text, files=shop_files(), cache=ProofCache(), progress=lambda a, t: told.append((a, t))
    )
    total = told[0][1]
    assert total > 0 and all(t == total for _, t in told)
    assert [a for a, _ in told] == [0, total // 2, total]
    assert total == 2 * sum(report.answers.values())


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
