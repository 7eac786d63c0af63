"""The record folder `stalwart rules compile` writes, and reading it back as it is.

A folder holds two files:

- `record.json`: the record, as canonical JSON (`record.canonical_json`);
- `manifest.json`: `{"version": "stalwart-rulebook-folder/1", "record": "record.json",
  "record_sha256": <SHA-256 of record.json's bytes>, "record_version", "format",
  "filename", "policy_sha256"}`.

`read_record_folder` reads the record without compiling anything, after checking that
`record.json` still has the bytes the manifest names: a record edited by hand after it was
compiled is refused (`RulebookRecordInvalid`), because the rules it holds are no longer the ones
that were proved.

This is the package's only module that touches files; the compiler itself is I/O-free.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import RulebookRecordInvalid
from .record import RECORD_VERSION, canonical_json, record_problems
from .sources import compile_source

MANIFEST_VERSION = "stalwart-rulebook-folder/1"
RECORD_FILE = "record.json"
MANIFEST_FILE = "manifest.json"
MAX_RECORD_BYTES = 50_000_000


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_record_folder(record: Mapping[str, Any], folder: str | os.PathLike[str]) -> Path:
    """Write `record.json` and `manifest.json` into `folder` (created if needed)."""
    problems = record_problems(record)
    if problems:
        raise RulebookRecordInvalid("the record is not valid: " + "; ".join(problems))
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    data = canonical_json(record).encode("utf-8")
    manifest = {
        "version": MANIFEST_VERSION,
        "record": RECORD_FILE,
        "record_sha256": hashlib.sha256(data).hexdigest(),
        "record_version": record["version"],
        "format": record["format"],
        "filename": record.get("filename"),
        "policy_sha256": record["policy_sha256"],
    }
    _write_atomically(target / RECORD_FILE, data)
    _write_atomically(target / MANIFEST_FILE, canonical_json(manifest).encode("utf-8"))
    return target


def read_record_folder(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The record a folder holds, as it is; `RulebookRecordInvalid` if it is not intact."""
    base = Path(folder)
    where = str(base)
    manifest_path = base / MANIFEST_FILE
    if not manifest_path.is_file():
        raise RulebookRecordInvalid(
            f"there is no `{MANIFEST_FILE}`: compile the rulebook with `stalwart rules compile`",
            path=where,
        )
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RulebookRecordInvalid(
            f"`{MANIFEST_FILE}` cannot be read: {exc}", path=where
        ) from None
    if not isinstance(manifest, dict) or manifest.get("version") != MANIFEST_VERSION:
        raise RulebookRecordInvalid(
            f"`{MANIFEST_FILE}` is not a `{MANIFEST_VERSION}` manifest", path=where
        )
    if manifest.get("record") != RECORD_FILE or manifest.get("record_version") != RECORD_VERSION:
        raise RulebookRecordInvalid(
            f"`{MANIFEST_FILE}` names a record this version cannot read", path=where
        )
    record_path = base / RECORD_FILE
    try:
        if record_path.stat().st_size > MAX_RECORD_BYTES:
            raise RulebookRecordInvalid(f"`{RECORD_FILE}` is too large", path=where)
        data = record_path.read_bytes()
    except OSError as exc:
        raise RulebookRecordInvalid(f"`{RECORD_FILE}` cannot be read: {exc}", path=where) from None
    if hashlib.sha256(data).hexdigest() != manifest.get("record_sha256"):
        raise RulebookRecordInvalid(
            f"`{RECORD_FILE}` does not match `{MANIFEST_FILE}`: it was changed after it was "
            "compiled; compile the rulebook again",
            path=where,
        )
    try:
        record = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RulebookRecordInvalid(f"`{RECORD_FILE}` is not JSON: {exc}", path=where) from None
    problems = record_problems(record)
    if problems:
        raise RulebookRecordInvalid("the record is not valid: " + "; ".join(problems), path=where)
    if record["policy_sha256"] != manifest.get("policy_sha256"):
        raise RulebookRecordInvalid(
            "the record's `policy_sha256` does not match the manifest", path=where
        )
    return record


def compile_file_to_folder(
    source: str | os.PathLike[str],
    folder: str | os.PathLike[str],
    *,
    colang_version: str | None = None,
) -> dict[str, Any]:
    """What `stalwart rules compile <source> <folder>` does: compile, then write the folder."""
    path = Path(source)
    record = compile_source(path.read_bytes(), filename=path.name, colang_version=colang_version)
    write_record_folder(record, folder)
    return record
