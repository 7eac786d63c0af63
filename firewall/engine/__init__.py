"""The firewall engine: rules, validation, evaluation and sequence matching, in pure Python.

Read a policy with `validate_policy`, compile it with `compile_policy`, and decide calls with
`CompiledPolicy.evaluate`; `reference_evaluate` is the plain scan the compiled engine must
agree with. Sequence rules are matched event by event with `advance`.
"""

from __future__ import annotations

from firewall.engine.compiled import CompiledPolicy, compile_policy
from firewall.engine.decision import Decision
from firewall.engine.errors import (
    FirewallError,
    OperandInvalid,
    PolicyInvalid,
    SequenceError,
    UnknownPreset,
)
from firewall.engine.presets import AUTONOMY_LEVELS, PRESETS, preset_rules
from firewall.engine.reference import reference_evaluate
from firewall.engine.resolver import SystemResolver
from firewall.engine.sanitize import SANITIZE_PRESETS
from firewall.engine.sequences import (
    CompiledSequence,
    advance,
    match_events,
    parse_sequence,
    sequence_problems,
)
from firewall.engine.validator import (
    MAX_RULES_PER_POLICY,
    ValidationIssue,
    too_many_rules,
    validate_policy,
    validate_rule,
)
from firewall.engine.vocabulary import DEFAULT_VERDICTS, OPERATORS, STAGES, VERDICTS

__all__ = [
    "AUTONOMY_LEVELS",
    "DEFAULT_VERDICTS",
    "MAX_RULES_PER_POLICY",
    "OPERATORS",
    "PRESETS",
    "SANITIZE_PRESETS",
    "STAGES",
    "VERDICTS",
    "CompiledPolicy",
    "CompiledSequence",
    "Decision",
    "FirewallError",
    "OperandInvalid",
    "PolicyInvalid",
    "SequenceError",
    "SystemResolver",
    "UnknownPreset",
    "ValidationIssue",
    "advance",
    "compile_policy",
    "match_events",
    "parse_sequence",
    "preset_rules",
    "reference_evaluate",
    "sequence_problems",
    "too_many_rules",
    "validate_policy",
    "validate_rule",
]
