"""The tool-check engine: pure Python, no Django, no I/O.

Build a `ToolCheck` once from a catalogue, a compiled rulebook record, settings and a signing key,
then `check(call, session=history, ...)` every call; `record(history, call, result)` after a call
ran; `issue_token(call, session=history)` when a person said yes.
"""

from __future__ import annotations

from .agent_yaml import AgentFile, load_agent_yaml
from .call import Call, MalformedCall, read_call
from .canonical import NotJSON, canonical_bytes, canonical_json
from .catalogue import Agent, Catalogue, Compensation, OrderRule, Tool, load_catalogue
from .check import ToolCheck, check_call
from .checks import REGISTRY, CheckInfo, Setting, render_reference, render_table, switched_on
from .decision import ALLOW, CONFIRM, REFUSE, Decision
from .errors import (
    CatalogueInvalid,
    GuardError,
    HistoryInvalid,
    Issue,
    KeyTooShort,
    SettingsInvalid,
    UnknownCheck,
)
from .history import Entry, History
from .kinds import KINDS, infer_kind, parse_tool_kinds
from .lints import Lint, lint_catalogue, render_lints
from .post_checks import PostCheck, stricter_only
from .settings import Licence, Settings, load_settings

__all__ = [
    "ALLOW",
    "CONFIRM",
    "KINDS",
    "REFUSE",
    "REGISTRY",
    "Agent",
    "AgentFile",
    "Call",
    "Catalogue",
    "CatalogueInvalid",
    "CheckInfo",
    "Compensation",
    "Decision",
    "Entry",
    "GuardError",
    "History",
    "HistoryInvalid",
    "Issue",
    "KeyTooShort",
    "Licence",
    "Lint",
    "MalformedCall",
    "NotJSON",
    "OrderRule",
    "PostCheck",
    "Setting",
    "Settings",
    "SettingsInvalid",
    "Tool",
    "ToolCheck",
    "UnknownCheck",
    "canonical_bytes",
    "canonical_json",
    "check_call",
    "infer_kind",
    "lint_catalogue",
    "load_agent_yaml",
    "load_catalogue",
    "load_settings",
    "parse_tool_kinds",
    "read_call",
    "render_lints",
    "render_reference",
    "render_table",
    "stricter_only",
    "switched_on",
]
