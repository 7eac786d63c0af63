"""Choosing a compiler by file name, and holding a rulebook for an agent (or refusing to).

`compile_source` is what the API and the CLI call with an uploaded or read file.
`hold_rulebook` is what an agent does at start-up: take a compiled record as it is, or compile a
source -- and when it cannot, raise `RulebookNotHeld` saying why, so the agent does not run.
`ensure_record_only` is the rule of an organisation that accepts compiled records only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .colang import compile_colang
from .errors import (
    RECORD_INVALID,
    UNSUPPORTED,
    CompileError,
    PolicyInputRefused,
    RulebookNotHeld,
    RulebookUnsupported,
)
from .record import record_problems
from .rule_sheet import compile_rule_sheet

COLANG_SUFFIXES = (".co",)
SHEET_SUFFIXES = (".csv", ".xlsx")


def compile_source(
    data: bytes | str,
    *,
    filename: str,
    colang_version: str | None = None,
) -> dict[str, Any]:
    """Compile a rulebook file into its record, choosing the compiler by its extension."""
    lowered = filename.lower()
    if lowered.endswith(COLANG_SUFFIXES):
        return compile_colang(data, filename=filename, colang_version=colang_version)
    if lowered.endswith(SHEET_SUFFIXES):
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        return compile_rule_sheet(raw, filename=filename)
    raise RulebookUnsupported(
        [
            CompileError(
                UNSUPPORTED,
                f"`{filename}` is not a rulebook: a rulebook is a `.co`, `.csv` or `.xlsx` file",
                filename,
                construct="file type",
            )
        ]
    )


def _is_source(rulebook: Any) -> bool:
    return isinstance(rulebook, str | bytes | bytearray | os.PathLike)


def ensure_record_only(rulebook: Any) -> dict[str, Any]:
    """The record itself, or `PolicyInputRefused` when given a source (text, bytes or a path).

    For an organisation that accepts compiled records only: the rulebook is compiled (and
    reviewed) elsewhere, and what reaches the agent is the record.
    """
    if isinstance(rulebook, Mapping):
        problems = record_problems(rulebook)
        if problems:
            raise RulebookNotHeld(
                "the rulebook record is not valid: " + "; ".join(problems), reason=RECORD_INVALID
            )
        return dict(rulebook)
    if _is_source(rulebook):
        raise PolicyInputRefused(
            "this organisation accepts compiled rulebook records only: compile the rulebook "
            "with `stalwart rules compile` and use the folder or the record it writes"
        )
    raise RulebookNotHeld(
        f"a rulebook is a compiled record, not `{type(rulebook).__name__}`",
        reason=RECORD_INVALID,
    )


def hold_rulebook(
    rulebook: Mapping[str, Any] | bytes | str,
    *,
    filename: str = "policy.co",
    colang_version: str | None = None,
    records_only: bool = False,
) -> dict[str, Any]:
    """The record an agent runs under, or `RulebookNotHeld` saying why there is none.

    `rulebook` is a compiled record, or a source's content (bytes or text) with its `filename`.
    With `records_only` (an organisation that accepts compiled records only), a source is
    refused with `policy_input_refused`.
    """
    if records_only or isinstance(rulebook, Mapping):
        return ensure_record_only(rulebook)
    if not isinstance(rulebook, str | bytes | bytearray):
        raise RulebookNotHeld(
            f"a rulebook is a record or a source's content, not `{type(rulebook).__name__}`",
            reason=RECORD_INVALID,
        )
    try:
        return compile_source(rulebook, filename=filename, colang_version=colang_version)
    except RulebookUnsupported as exc:
        raise RulebookNotHeld.from_error(exc) from exc
