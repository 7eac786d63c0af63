"""The rulebook compiler: Colang 1.0 / 2.x and rule sheets into records, the gate, and facts.

Pure Python: no Django, and no I/O except in `folder` (the record folder the CLI writes).

- `compile_colang(source, filename=, colang_version=)`, `compile_rule_sheet(data, filename=)`,
  `compile_source(data, filename=)` -> the record (`record.RECORD_VERSION`), or
  `RulebookUnsupported` with every located `CompileError`;
- `gate(record, tool=, arguments=, facts=, results=, usage=)` -> `GateAnswer` or None;
- `resolve_facts(spec, arguments=, results=, reads_outside=, context=)` -> `{name: bool}`,
  `validate_facts_spec(spec)` -> issues;
- `hold_rulebook` / `ensure_record_only` -> the record an agent runs under, or
  `RulebookNotHeld` (`PolicyInputRefused` for `policy_input_refused`);
- `write_record_folder`, `read_record_folder`, `compile_file_to_folder`.
"""

from __future__ import annotations

from .colang import compile_colang
from .errors import (
    FACTS_INVALID,
    FACTS_UNAVAILABLE,
    NOT_HELD,
    POLICY_INPUT_REFUSED,
    RECORD_INVALID,
    TOO_LARGE,
    UNSUPPORTED,
    CompileError,
    FactsInvalid,
    FactsUnavailable,
    PolicyInputRefused,
    RulebookError,
    RulebookNotHeld,
    RulebookRecordInvalid,
    RulebookUnsupported,
)
from .facts import FactsIssue, resolve_facts, validate_facts_spec
from .folder import compile_file_to_folder, read_record_folder, write_record_folder
from .gate import GateAnswer, gate
from .record import RECORD_VERSION, canonical_json, record_problems
from .rule_sheet import compile_rule_sheet
from .sources import compile_source, ensure_record_only, hold_rulebook

__all__ = [
    "FACTS_INVALID",
    "FACTS_UNAVAILABLE",
    "NOT_HELD",
    "POLICY_INPUT_REFUSED",
    "RECORD_INVALID",
    "RECORD_VERSION",
    "TOO_LARGE",
    "UNSUPPORTED",
    "CompileError",
    "FactsInvalid",
    "FactsIssue",
    "FactsUnavailable",
    "GateAnswer",
    "PolicyInputRefused",
    "RulebookError",
    "RulebookNotHeld",
    "RulebookRecordInvalid",
    "RulebookUnsupported",
    "canonical_json",
    "compile_colang",
    "compile_file_to_folder",
    "compile_rule_sheet",
    "compile_source",
    "ensure_record_only",
    "gate",
    "hold_rulebook",
    "read_record_folder",
    "record_problems",
    "resolve_facts",
    "validate_facts_spec",
    "write_record_folder",
]
