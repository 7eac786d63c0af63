"""The record folder: written by `stalwart rules compile`, read back as it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rulebooks.compiler import (
    RulebookRecordInvalid,
    compile_colang,
    compile_file_to_folder,
    gate,
    read_record_folder,
    write_record_folder,
)
from rulebooks.compiler.folder import MANIFEST_FILE, RECORD_FILE

from .conftest import SHOP


def test_a_written_folder_is_read_back_as_the_same_record(tmp_path: Path) -> None:
    record = compile_colang(SHOP)
    write_record_folder(record, tmp_path / "rules")
    assert read_record_folder(tmp_path / "rules") == record
    assert sorted(p.name for p in (tmp_path / "rules").iterdir()) == [MANIFEST_FILE, RECORD_FILE]


def test_the_folder_is_read_without_compiling_the_source_again(tmp_path: Path) -> None:
    source = tmp_path / "policy.co"
    source.write_text(SHOP, encoding="utf-8")
    compile_file_to_folder(source, tmp_path / "rules")
    source.unlink()
    record = read_record_folder(tmp_path / "rules")
    answer = gate(record, tool="refund_card", arguments={}, facts={"order_paid": False})
    assert answer is not None and answer.reasons == ["refuse"]


def test_the_manifest_names_the_hash_of_the_record_and_of_the_policy(tmp_path: Path) -> None:
    record = compile_colang(SHOP)
    write_record_folder(record, tmp_path)
    manifest = json.loads((tmp_path / MANIFEST_FILE).read_text())
    assert manifest["policy_sha256"] == record["policy_sha256"]
    assert manifest["format"] == "colang-1.0"
    assert len(manifest["record_sha256"]) == 64


def test_a_record_edited_after_it_was_compiled_is_refused(tmp_path: Path) -> None:
    write_record_folder(compile_colang(SHOP), tmp_path)
    path = tmp_path / RECORD_FILE
    edited = json.loads(path.read_text())
    edited["tools"]["refund_card"]["routes"][0]["conditions"] = []
    path.write_text(json.dumps(edited, sort_keys=True, indent=2) + "\n")
    with pytest.raises(RulebookRecordInvalid, match="changed after it was compiled"):
        read_record_folder(tmp_path)


def test_a_manifest_edited_to_match_a_foreign_record_is_refused(tmp_path: Path) -> None:
    write_record_folder(compile_colang(SHOP), tmp_path)
    manifest = json.loads((tmp_path / MANIFEST_FILE).read_text())
    manifest["policy_sha256"] = "0" * 64
    (tmp_path / MANIFEST_FILE).write_text(json.dumps(manifest))
    with pytest.raises(RulebookRecordInvalid, match="does not match the manifest"):
        read_record_folder(tmp_path)


def test_a_folder_without_a_manifest_is_refused(tmp_path: Path) -> None:
    (tmp_path / RECORD_FILE).write_text(json.dumps(compile_colang(SHOP)))
    with pytest.raises(RulebookRecordInvalid, match="stalwart rules compile"):
        read_record_folder(tmp_path)


def test_a_folder_whose_record_is_not_a_record_is_refused(tmp_path: Path) -> None:
    write_record_folder(compile_colang(SHOP), tmp_path)
    manifest = json.loads((tmp_path / MANIFEST_FILE).read_text())
    data = b'{"version": "something-else"}'
    import hashlib

    manifest["record_sha256"] = hashlib.sha256(data).hexdigest()
    (tmp_path / MANIFEST_FILE).write_text(json.dumps(manifest))
    (tmp_path / RECORD_FILE).write_bytes(data)
    with pytest.raises(RulebookRecordInvalid, match="not valid"):
        read_record_folder(tmp_path)


def test_an_invalid_record_is_never_written(tmp_path: Path) -> None:
    with pytest.raises(RulebookRecordInvalid):
        write_record_folder({"version": "x"}, tmp_path / "out")
    assert not (tmp_path / "out" / RECORD_FILE).exists()


def test_writing_again_replaces_the_folder_contents(tmp_path: Path) -> None:
    write_record_folder(compile_colang(SHOP), tmp_path)
    other = compile_colang(SHOP.replace("refuse", "decline"))
    write_record_folder(other, tmp_path)
    assert read_record_folder(tmp_path) == other
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
