"""Fixtures of the proof engine's tests: the chapter's shop and the corpus of planted flaws.

Each corpus folder is an agent (agent.yaml, a rulebook, sometimes an overlay of the team's own
steps) and `expect.json`: the exact set of rules it must raise, and for a planted flaw the
finding -- its subject, its place and the witness path -- the hunt must report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proof.engine import ProofCache, Report, verify_agent_file

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop"
CORPUS = Path(__file__).resolve().parent / "corpus"
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
SKIPPED = {"agent.yaml", "expect.json", "overlay.json"}


def shop_files() -> dict[str, str]:
    return {
        "policy.co": (SHOP / "policy.co").read_text(encoding="utf-8"),
        "tools.py": (SHOP / "tools.py").read_text(encoding="utf-8"),
    }


def verify_shop(**options: Any) -> Report:
    text = (SHOP / "agent.yaml").read_text(encoding="utf-8")
    return verify_agent_file(text, files=shop_files(), cache=ProofCache(), **options)


def corpus_cases() -> list[str]:
    return sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


def load_case(name: str) -> tuple[str, dict[str, str], Any, dict[str, Any]]:
    folder = CORPUS / name
    files = {
        p.name: p.read_text(encoding="utf-8") for p in folder.iterdir() if p.name not in SKIPPED
    }
    overlay_path = folder / "overlay.json"
    overlay = json.loads(overlay_path.read_text()) if overlay_path.exists() else None
    expect = json.loads((folder / "expect.json").read_text())
    return (folder / "agent.yaml").read_text(encoding="utf-8"), files, overlay, expect


_RUNS: dict[str, tuple[Report, dict[str, Any]]] = {}


def run_case(name: str, **extra: Any) -> tuple[Report, dict[str, Any]]:
    """Verify a corpus case (memoised when run with its own options only)."""
    if not extra and name in _RUNS:
        return _RUNS[name]
    text, files, overlay, expect = load_case(name)
    options = {**expect.get("options", {}), **extra}
    report = verify_agent_file(text, files=files, overlay=overlay, cache=ProofCache(), **options)
    if not extra:
        _RUNS[name] = (report, expect)
    return report, expect


@pytest.fixture(scope="module")
def shop_report() -> Report:
    return verify_shop()
