"""Loading a policy leniently: the rules both evaluators walk, in first-match order.

`compile_policy` validates strictly first; this loader is what runs after, and what runs for a
stored policy that no longer validates (an RE2 upgrade, a row written before a check existed),
because a broken rule must never break the relay. Its error policy, pinned by tests:

- a rule whose *shape* cannot be read (not an object; `priority` not an integer; `id`, `name`,
  `stage`, a glob, `args_match`, `enabled` or `mode` of the wrong type or value; an unknown
  `verdict`) is left out and listed in the policy's `issues`; it never fires;
- a rule whose *content* is broken (a clause, the egress lists, the sanitizer, the cost cap)
  is kept; when evaluation reaches the broken part the rule does not fire, as if absent, and
  the problem is added to the decision's `errors`;
- a default verdict that is missing or unusable refuses every call that no rule decides.

Disabled rules and sequence rules (matched asynchronously elsewhere) are left out silently.
Order is `priority` ascending, then `id` ascending (integer ids before string ids), then
rules without an id in their file position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from firewall.engine.clauses import clause_problems
from firewall.engine.egress import egress_problems
from firewall.engine.sanitize import sanitizer_problems
from firewall.engine.vocabulary import DEFAULT_VERDICTS, MODES, STAGES, VERDICTS


@dataclass(slots=True)
class LoadedRule:
    """A rule whose shape is sound, with its content as written."""

    rank: int
    position: int
    id: int | str | None
    name: str
    priority: int
    shadow: bool
    stage: str
    tool_glob: str
    skill_glob: str
    clauses: list[Any]
    verdict: str
    egress: Any
    sanitize: Any
    cap_cost_cents: Any


@dataclass(slots=True)
class LoadedPolicy:
    """The rules to walk, the default, and what was left out."""

    name: str
    default_verdict: str | None
    default_error: str | None
    rules: list[LoadedRule]
    issues: list[str] = field(default_factory=list)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def shape_problem(raw: object) -> str | None:
    """Why a rule's shape cannot be read (so it is left out), or None."""
    if not isinstance(raw, dict):
        return "not an object"
    if not _is_int(raw.get("priority")):
        return "`priority` is not an integer"
    rule_id = raw.get("id")
    if rule_id is not None and not (_is_int(rule_id) or (isinstance(rule_id, str) and rule_id)):
        return "`id` is not an integer or a non-empty string"
    if not isinstance(raw.get("name"), str):
        return "`name` is not a string"
    if not isinstance(raw.get("enabled", True), bool):
        return "`enabled` is not a boolean"
    if raw.get("mode", "enforce") not in MODES:
        return "`mode` is not `enforce` or `shadow`"
    stage = raw.get("stage")
    if stage is not None and stage != "" and stage not in STAGES:
        return "`stage` is not a stage"
    for key in ("tool_name_glob", "skill_glob"):
        if raw.get(key) is not None and not isinstance(raw.get(key), str):
            return f"`{key}` is not a string"
    if raw.get("args_match") is not None and not isinstance(raw.get("args_match"), list):
        return "`args_match` is not a list"
    if raw.get("verdict") not in VERDICTS:
        return "`verdict` is not a verdict"
    return None


def content_problem(rule: LoadedRule) -> str | None:
    """The first broken part of a rule's content, as `where: message`, or None.

    Clauses come first (in order), then the egress lists, then the verdict's payload. The
    evaluators check the same parts in the same order and report the first one they reach.
    """
    for index, clause in enumerate(rule.clauses):
        problem = clause_content_problem(clause, index)
        if problem:
            return problem
    if rule.egress is not None:
        problem = egress_content_problem(rule)
        if problem:
            return problem
    return payload_problem(rule)


def _join(prefix: str, field_name: str) -> str:
    if not field_name:
        return prefix
    return f"{prefix}{field_name}" if field_name.startswith("[") else f"{prefix}.{field_name}"


def clause_content_problem(clause: Any, index: int) -> str | None:
    problems = clause_problems(clause)
    if not problems:
        return None
    field_name, message = problems[0]
    return f"{_join(f'args_match[{index}]', field_name)}: {message}"


def egress_content_problem(rule: LoadedRule) -> str | None:
    problems = egress_problems(rule.egress, rule.verdict)
    if not problems:
        return None
    field_name, message = problems[0]
    return f"{_join('egress', field_name)}: {message}"


def payload_problem(rule: LoadedRule) -> str | None:
    """What the verdict needs and lacks: a sanitizer for `sanitize`, a cap for `cap_cost`."""
    if rule.verdict == "sanitize":
        if rule.sanitize is None:
            return "sanitize: is required for the `sanitize` verdict"
        problems = sanitizer_problems(rule.sanitize)
        if problems:
            field_name, message = problems[0]
            return f"{_join('sanitize', field_name)}: {message}"
    if rule.verdict == "cap_cost":
        cents = rule.cap_cost_cents
        if not _is_int(cents) or cents <= 0:
            return "cap_cost_cents: must be a positive integer for the `cap_cost` verdict"
    return None


def rule_error(rule: LoadedRule, problem: str) -> str:
    """A problem met while evaluating, as it appears in a decision's errors."""
    return f"rule `{rule.name}`: {problem}"


def _order_key(rule: LoadedRule) -> tuple[int, int, int, str, int]:
    rule_id = rule.id
    if rule_id is None:
        return (rule.priority, 2, 0, "", rule.position)
    if isinstance(rule_id, str):
        return (rule.priority, 1, 0, rule_id, rule.position)
    return (rule.priority, 0, rule_id, "", rule.position)


def load_policy(data: object, *, validated: bool = False) -> LoadedPolicy:
    """The policy's enabled inline rules in first-match order, leniently (see the module).

    `validated`: `validate_policy(data)` found no issue, so no rule has a shape problem (the
    validator's checks of each field are stricter than `shape_problem`'s) and none is looked for.
    """
    if not isinstance(data, dict):
        return LoadedPolicy("", None, "the policy is not a JSON object", [], [])
    name = data.get("name") if isinstance(data.get("name"), str) else ""
    default = data.get("default_verdict")
    default_error = None
    if default not in DEFAULT_VERDICTS:
        shown = default if isinstance(default, str) else repr(default)
        default_error = f"default verdict `{shown}` is not one of {', '.join(DEFAULT_VERDICTS)}"
        default = None
    issues: list[str] = []
    raw_rules = data.get("rules")
    if raw_rules is None:
        raw_rules = []
    if not isinstance(raw_rules, list):
        issues.append("rules: not a list, no rule loaded")
        raw_rules = []
    rules: list[LoadedRule] = []
    for position, raw in enumerate(raw_rules):
        problem = None if validated else shape_problem(raw)
        if problem:
            issues.append(f"rules[{position}]: left out: {problem}")
            continue
        assert isinstance(raw, dict)
        if not raw.get("enabled", True) or raw.get("sequence") is not None:
            continue
        rules.append(
            LoadedRule(
                rank=0,
                position=position,
                id=raw.get("id"),
                name=raw["name"],
                priority=raw["priority"],
                shadow=raw.get("mode", "enforce") == "shadow",
                stage=raw.get("stage") or "",
                tool_glob=raw.get("tool_name_glob") or "",
                skill_glob=raw.get("skill_glob") or "",
                clauses=list(raw.get("args_match") or []),
                verdict=raw["verdict"],
                egress=raw.get("egress"),
                sanitize=raw.get("sanitize"),
                cap_cost_cents=raw.get("cap_cost_cents"),
            )
        )
    rules.sort(key=_order_key)
    for rank, rule in enumerate(rules):
        rule.rank = rank
    return LoadedPolicy(name, default, default_error, rules, issues)
