"""The closed vocabularies of the firewall language: stages, verdicts, operators and fields.

Everything the validator accepts and the evaluators act on is listed here once, so the console's
tables and the documentation can be generated from the engine itself.
"""

from __future__ import annotations

#: Where a call meets the firewall; a rule with an empty stage matches all three.
STAGES: tuple[str, ...] = ("inbound", "tool_call", "egress")

#: What a rule (or the policy's default) can answer.
VERDICTS: tuple[str, ...] = ("allow", "audit", "deny", "sanitize", "require_approval", "cap_cost")

#: Verdicts a policy may use as its default: `sanitize` and `cap_cost` need a rule's payload.
DEFAULT_VERDICTS: tuple[str, ...] = ("allow", "audit", "deny", "require_approval")

#: Verdicts a sequence rule may carry: it lights up the feed, it cannot rewrite or price a call.
SEQUENCE_VERDICTS: tuple[str, ...] = ("audit", "deny", "require_approval")

#: How a verdict reads as the guard's three answers.
DECISION_OF_VERDICT: dict[str, str] = {
    "allow": "allow",
    "audit": "allow",
    "sanitize": "allow",
    "cap_cost": "allow",
    "deny": "refuse",
    "require_approval": "confirm",
}

#: Argument clause operators.
OPERATORS: tuple[str, ...] = (
    "eq",
    "neq",
    "in",
    "not_in",
    "contains",
    "starts_with",
    "ends_with",
    "regex",
    "cidr",
    "exists",
    "gt",
    "gte",
    "lt",
    "lte",
)

#: A rule either decides (`enforce`) or only reports what it would have decided (`shadow`).
MODES: tuple[str, ...] = ("enforce", "shadow")

POLICY_FIELDS: frozenset[str] = frozenset({"name", "default_verdict", "rules"})
RULE_FIELDS: frozenset[str] = frozenset(
    {
        "id",
        "priority",
        "name",
        "enabled",
        "mode",
        "stage",
        "tool_name_glob",
        "skill_glob",
        "args_match",
        "verdict",
        "sanitize",
        "egress",
        "cap_cost_cents",
        "sequence",
        "notes",
    }
)
CLAUSE_FIELDS: frozenset[str] = frozenset({"path", "op", "value"})
SANITIZE_FIELDS: frozenset[str] = frozenset({"presets", "patterns"})
EGRESS_FIELDS: frozenset[str] = frozenset({"allow", "deny"})
SEQUENCE_FIELDS: frozenset[str] = frozenset({"steps", "window_seconds", "on_match"})

#: What a matched sequence may set off besides its alert: hold the session for a person, switch
#: the completing tool off for the agent, or POST a signed notification.
SEQUENCE_ACTIONS: tuple[str, ...] = ("hold_session", "disable_tool", "notify")
STEP_FIELDS: frozenset[str] = frozenset({"tool_glob", "min_count", "egress"})

#: Priorities are stored in a 32-bit integer column.
PRIORITY_MIN = -(2**31)
PRIORITY_MAX = 2**31 - 1
