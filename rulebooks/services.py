"""Compiling uploads into records and keeping them as versions; every upload is audited.

The compiler is the one judge: a source it refuses is never stored, and every error comes back
located (file, line, column; row and column for a rule sheet) with its source line. An upload is
at most `MAX_UPLOAD_BYTES`, and it is compiled in a child process under a time and memory budget
(`budget.py`); one too large for either is refused as `rulebook_too_large`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from console.access import Actor, require
from console.models import Organisation, OrganisationSettings
from console.services import audit_record
from rulebooks import budget, compiler
from rulebooks.models import Rulebook, RulebookVersion

MAX_UPLOAD_BYTES = 2_000_000
SOURCE_SUFFIXES = (".co", ".csv", ".xlsx")
RECORD_SUFFIXES = (".json",)


@dataclass
class Rejected(Exception):
    """What could not be compiled or accepted: a code and every located error."""

    code: str
    errors: list[dict[str, Any]] = field(default_factory=list)
    rendered: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "; ".join(e["text"] for e in self.errors) or self.code


def _error(code: str, message: str, filename: str, **extra: Any) -> dict[str, Any]:
    return {
        "code": code,
        "message": message,
        "file": filename,
        "line": None,
        "column": None,
        "construct": None,
        "field": None,
        "text": f"{filename}: {message}",
        **extra,
    }


def _suffix(filename: str) -> str:
    return PurePath(filename or "").suffix.lower()


def records_only(organisation: Organisation) -> bool:
    return bool(
        OrganisationSettings.objects.filter(organisation=organisation)
        .values_list("compiled_records_only", flat=True)
        .first()
    )


def compile_upload(
    *,
    organisation: Organisation,
    data: bytes,
    filename: str,
    colang_version: str | None = None,
    sheets_only: bool = False,
) -> dict:
    """The record of an upload (a `.co` file, a rule sheet, or a compiled record's JSON)."""
    filename = PurePath(filename or "").name or "upload"
    suffix = _suffix(filename)
    if len(data) > MAX_UPLOAD_BYTES:
        raise Rejected(
            compiler.TOO_LARGE,
            [
                _error(
                    compiler.TOO_LARGE,
                    f"the file is larger than {MAX_UPLOAD_BYTES:,} bytes",
                    filename,
                )
            ],
        )
    allowed = (".csv", ".xlsx") if sheets_only else SOURCE_SUFFIXES + RECORD_SUFFIXES
    if suffix not in allowed:
        raise Rejected(
            compiler.UNSUPPORTED,
            [
                _error(
                    compiler.UNSUPPORTED,
                    f"`{suffix or filename}` is not a rulebook file: send {', '.join(allowed)}",
                    filename,
                )
            ],
        )
    if suffix in RECORD_SUFFIXES:
        return _accept_record(data, filename)
    if records_only(organisation):
        raise Rejected(
            compiler.POLICY_INPUT_REFUSED,
            [
                _error(
                    compiler.POLICY_INPUT_REFUSED,
                    "this organisation accepts compiled rulebook records only; compile the source with "
                    "`stalwart rules compile` and send its record.json",
                    filename,
                )
            ],
        )
    try:
        return budget.compile_within_budget(
            data, filename=filename, colang_version=colang_version if suffix == ".co" else None
        )
    except budget.BudgetExceeded as exc:
        raise Rejected(
            compiler.TOO_LARGE, [_error(compiler.TOO_LARGE, str(exc), filename)]
        ) from exc
    except compiler.RulebookUnsupported as exc:
        text = data.decode("utf-8", errors="replace") if suffix in (".co", ".csv") else None
        codes = {e.code for e in exc.errors}
        raise Rejected(
            compiler.TOO_LARGE if compiler.TOO_LARGE in codes else compiler.UNSUPPORTED,
            [{**e.to_dict(), "text": str(e)} for e in exc.errors],
            [e.render(text) for e in exc.errors],
        ) from exc
    except compiler.RulebookError as exc:
        raise Rejected(
            getattr(exc, "code", compiler.UNSUPPORTED),
            [_error(compiler.UNSUPPORTED, str(exc), filename)],
        ) from exc


def _accept_record(data: bytes, filename: str) -> dict:
    try:
        record = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        where = f"line {exc.lineno}, column {exc.colno}: " if hasattr(exc, "lineno") else ""
        raise Rejected(
            compiler.RECORD_INVALID,
            [_error(compiler.RECORD_INVALID, f"{where}not a JSON record", filename)],
        ) from exc
    problems = compiler.record_problems(record)
    if problems:
        raise Rejected(
            compiler.RECORD_INVALID,
            [_error(compiler.RECORD_INVALID, p, filename) for p in problems],
        )
    return record


@transaction.atomic
def rulebook_upload(
    *, actor: Actor, name: str, data: bytes, filename: str, colang_version: str | None = None
) -> RulebookVersion:
    """Compile an upload and keep it as the next version of the named rulebook, or keep nothing."""
    require(actor, "rulebooks.write")
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise ValidationError({"name": ["a rulebook needs a name of at most 100 characters"]})
    if not name.isprintable():
        # a NUL is no text PostgreSQL keeps; a line break would break the download's header
        raise ValidationError({"name": ["a rulebook's name must not contain control characters"]})
    record = compile_upload(
        organisation=actor.organisation, data=data, filename=filename, colang_version=colang_version
    )
    rulebook, created = Rulebook.objects.get_or_create(organisation=actor.organisation, name=name)
    if created:
        audit_record(
            actor=actor,
            action="rulebook.create",
            object_type="rulebook",
            object_id=rulebook.pk,
            changes={"name": {"old": None, "new": name}},
        )
    Rulebook.objects.select_for_update().filter(pk=rulebook.pk).first()
    number = (rulebook.versions.aggregate(top=Max("number"))["top"] or 0) + 1
    is_record = _suffix(filename) in RECORD_SUFFIXES
    sha = record.get("policy_sha256") or hashlib.sha256(data).hexdigest()
    version = RulebookVersion.objects.create(
        organisation=actor.organisation,
        rulebook=rulebook,
        number=number,
        filename=PurePath(filename).name,
        format=record.get("format", ""),
        source=b"" if is_record else data,
        sha256=sha,
        record=record,
        uploaded_by=actor.label,
        uploaded_by_id=actor.user_id,
    )
    audit_record(
        actor=actor,
        action="rulebook.upload",
        object_type="rulebook_version",
        object_id=version.pk,
        changes={
            "rulebook": {"old": None, "new": name},
            "version": {"old": number - 1 or None, "new": number},
            "sha256": {"old": None, "new": sha},
            "format": {"old": None, "new": version.format},
            "filename": {"old": None, "new": version.filename},
            "source": {"redacted": True},
        },
    )
    return version


def record_summary(record: dict) -> dict[str, Any]:
    """What the record governs, for people: each tool, the flows or rows, the facts they read."""
    tools = []
    for tool, entry in sorted((record.get("tools") or {}).items()):
        routes = entry.get("routes") or []
        rules = entry.get("rules") or []
        facts = sorted(
            {
                c["test"]["fact"]
                for r in routes
                for c in r.get("conditions", [])
                if isinstance(c.get("test"), dict) and "fact" in c["test"]
            }
        )
        tools.append(
            {
                "tool": tool,
                "flows": sorted({r.get("flow") for r in routes if r.get("flow")}),
                "conditions": [
                    {
                        "flow": c.get("flow"),
                        "line": c.get("line"),
                        "condition": c.get("condition"),
                        "holds": c.get("holds"),
                        "otherwise": c.get("otherwise"),
                    }
                    for r in routes
                    for c in r.get("conditions", [])
                ],
                "rows": [
                    {
                        "row": r.get("row"),
                        "condition": r.get("condition"),
                        "decision": r.get("decision"),
                        "reason": r.get("reason"),
                        "at_most": r.get("at_most"),
                        "per": r.get("per"),
                        "spend": r.get("spend"),
                    }
                    for r in rules
                ],
                "facts": facts,
            }
        )
    return {
        "format": record.get("format"),
        "sha256": record.get("policy_sha256"),
        "tools": tools,
        "intents": record.get("user_intents") or [],
        "flows": [f.get("name") for f in record.get("flows") or []],
        "facts": record.get("facts") or [],
    }
