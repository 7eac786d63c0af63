"""The corpus: Colang files of both versions with the record each compiles to, and refused files.

`corpus/<name>.co` compiles to exactly `corpus/<name>.json`; `refused/<name>.co` is refused with
the code, line, column and construct in `refused/<name>.json`. After a deliberate change to the
record, regenerate the expectations with `STALWART_UPDATE_CORPUS=1` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rulebooks.compiler import RulebookUnsupported, canonical_json, compile_colang

HERE = Path(__file__).parent
CORPUS = sorted((HERE / "corpus").glob("*.co"))
REFUSED = sorted((HERE / "refused").glob("*.co"))
UPDATE = os.environ.get("STALWART_UPDATE_CORPUS") == "1"


def test_the_corpus_has_files_of_both_versions() -> None:
    names = [p.name for p in CORPUS]
    assert sum(n.startswith("v1_") for n in names) >= 5
    assert sum(n.startswith("v2_") for n in names) >= 5
    assert len(REFUSED) >= 20


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_corpus_file_compiles_to_its_expected_record(path: Path) -> None:
    record = compile_colang(path.read_bytes(), filename=path.name)
    expected_path = path.with_suffix(".json")
    if UPDATE:
        expected_path.write_text(canonical_json(record), encoding="utf-8")
    expected = json.loads(expected_path.read_text(encoding="utf-8"))
    assert json.loads(canonical_json(record)) == expected


@pytest.mark.parametrize("path", REFUSED, ids=lambda p: p.name)
def test_refused_file_is_refused_at_its_expected_line(path: Path) -> None:
    with pytest.raises(RulebookUnsupported) as caught:
        compile_colang(path.read_bytes(), filename=path.name)
    first = caught.value.errors[0]
    got = {
        "code": first.code,
        "line": first.line,
        "column": first.column,
        "construct": first.construct,
    }
    expected_path = path.with_suffix(".json")
    if UPDATE:
        expected_path.write_text(json.dumps(got, indent=2) + "\n", encoding="utf-8")
    assert got == json.loads(expected_path.read_text(encoding="utf-8"))
    assert first.code == "rulebook_unsupported"
    assert str(first).startswith(path.name)
