"""The validator: the one gate every rule passes, whichever way it enters (API, editor, file).

It returns every problem at once, each with the path of the field at fault
(`rules[2].args_match[1].value`) and a one-line message (`not a valid CIDR`). It never raises,
whatever JSON it is given. What it refuses, beyond wrong types and unknown fields (at every
level):

- clauses: unknown operators, paths outside the subset, `in`/`not_in` values that are not
  arrays, non-numbers for `gt`/`gte`/`lt`/`lte`, regexes RE2 cannot compile, invalid CIDRs;
- pairings of verdict and stage that make no sense (our decisions, the spec leaves them open):
  an `egress` object belongs to a rule on the `egress` stage only; `cap_cost` does not apply
  on the `egress` stage (a hop to a host has no cost of its own; cost is capped per call or
  run); `sanitize` on `inbound` is accepted, and blocks when it fires (there are no call-time
  arguments to clean there); a sequence rule has an empty stage, tool and skill globs that
  are empty or `*`, no clauses, no egress lists, and the verdict `audit`, `deny` or
  `require_approval` (it lights up the feed, it cannot rewrite a call or price it);
- payloads: `sanitize` without a usable sanitizer (empty, unknown preset, bad pattern, or a
  pattern that matches the empty string), or on another verdict; `cap_cost` without a positive
  integer `cap_cost_cents`, or `cap_cost_cents` on another verdict; an egress object with no
  entry, or without entries in the list its verdict reads (`allow` for `allow`, else `deny`);
- sequences: no steps, `min_count` below 1, a negative window, a step glob that is not a glob
  (empty, whitespace, not a string), unknown step fields;
- policies: a missing or duplicated rule name, a duplicated rule id, a `priority` that is not
  a 32-bit integer, a `default_verdict` that is not `allow`, `audit`, `deny` or
  `require_approval`;
- sizes (the module's `MAX_*` constants, so that saving, compiling and evaluating a policy stay
  bounded whoever writes it): rules per policy, clauses per rule, values of an `in` / `not_in`
  clause, the length of a regex or sanitize pattern, patterns per sanitizer, entries per egress
  list, steps per sequence. A policy over `MAX_RULES_PER_POLICY` is refused before any of its
  rules is read.

References. The spec lists "resolution of references" among the save-time checks without
saying what a reference is. In this language the names that must resolve are the sanitize
preset names (to the built-in library); rules never refer to one another, and rule names and
ids are checked for uniqueness so that a decision's `rule` and `rule_id` name one rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from firewall.engine.clauses import MAX_REGEX_LENGTH, clause_problems
from firewall.engine.egress import egress_problems
from firewall.engine.globs import glob_problem
from firewall.engine.sanitize import MAX_PATTERN_LENGTH as MAX_SANITIZE_PATTERN_LENGTH
from firewall.engine.sanitize import sanitizer_problems
from firewall.engine.sequences import MAX_STEPS, sequence_problems
from firewall.engine.vocabulary import (
    DEFAULT_VERDICTS,
    MODES,
    POLICY_FIELDS,
    PRIORITY_MAX,
    PRIORITY_MIN,
    RULE_FIELDS,
    SEQUENCE_VERDICTS,
    STAGES,
    VERDICTS,
)

MAX_NAME_LENGTH = 200
MAX_ID_LENGTH = 64
MAX_NOTES_LENGTH = 10_000
#: Rules one policy may hold (checked first: a longer list is refused before its rules are read).
MAX_RULES_PER_POLICY = 10_000
#: Argument clauses of one rule.
MAX_CLAUSES_PER_RULE = 64
#: Values of one `in` / `not_in` clause.
MAX_CLAUSE_VALUES = 1_000
#: Characters of one regex clause or sanitize pattern (checked by `clauses` and `sanitize`).
MAX_PATTERN_LENGTH = MAX_REGEX_LENGTH
#: Custom patterns of one sanitizer.
MAX_SANITIZE_PATTERNS = 64
#: Entries of one egress list (`allow` or `deny`).
MAX_EGRESS_ENTRIES = 1_000
#: Steps of one sequence (checked by `sequences`).
MAX_SEQUENCE_STEPS = MAX_STEPS

assert MAX_SANITIZE_PATTERN_LENGTH == MAX_PATTERN_LENGTH, "one pattern length for both"


@dataclass(frozen=True, slots=True)
class ValidationIssue:
    """One problem: where (a field path, empty for the whole document) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


def _join(path: str, field: str) -> str:
    if not field:
        return path
    if not path:
        return field
    return f"{path}{field}" if field.startswith("[") else f"{path}.{field}"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _name_problem(value: object, what: str) -> str | None:
    if not isinstance(value, str):
        return f"{what} must be a string"
    if not value.strip():
        return f"{what} must not be blank"
    if len(value) > MAX_NAME_LENGTH:
        return f"{what} must be at most {MAX_NAME_LENGTH} characters"
    if not value.isprintable():
        return f"{what} must not contain control characters"
    return None


def too_many_rules(count: int) -> str:
    """The message for a policy of `count` rules, more than it may hold."""
    return f"a policy holds at most {MAX_RULES_PER_POLICY} rules, not {count}"


def _present(rule: dict[str, Any], key: str) -> bool:
    """A field counts as given when it is there and not null."""
    return rule.get(key) is not None


def validate_rule(data: object, path: str = "") -> list[ValidationIssue]:
    """Every problem of one rule; `path` prefixes the field paths (e.g. `rules[2]`)."""
    issues: list[ValidationIssue] = []

    def add(field: str, message: str) -> None:
        issues.append(ValidationIssue(_join(path, field), message))

    if not isinstance(data, dict):
        add("", "a rule must be a JSON object")
        return issues
    for key in data:
        if key not in RULE_FIELDS:
            add(str(key), "unknown field")

    if "id" in data and data["id"] is not None:
        rule_id = data["id"]
        if _is_int(rule_id):
            if rule_id < 0:
                add("id", "must not be negative")
        elif isinstance(rule_id, str):
            if not rule_id or len(rule_id) > MAX_ID_LENGTH or not rule_id.isprintable():
                add("id", f"must be 1 to {MAX_ID_LENGTH} printable characters")
        else:
            add("id", "must be an integer or a string")

    if "name" not in data:
        add("name", "is required")
    else:
        problem = _name_problem(data["name"], "the name")
        if problem:
            add("name", problem)

    if "priority" not in data:
        add("priority", "is required")
    elif not _is_int(data["priority"]):
        add("priority", "must be an integer")
    elif not PRIORITY_MIN <= data["priority"] <= PRIORITY_MAX:
        add("priority", f"must be between {PRIORITY_MIN} and {PRIORITY_MAX}")

    if "enabled" in data and not isinstance(data["enabled"], bool):
        add("enabled", "must be `true` or `false`")
    if "mode" in data and (not isinstance(data["mode"], str) or data["mode"] not in MODES):
        add("mode", f"must be one of {', '.join(MODES)}")

    stage = data.get("stage", "")
    if "stage" in data and (not isinstance(stage, str) or (stage and stage not in STAGES)):
        add("stage", f"must be one of {', '.join(STAGES)}, or empty for every stage")
        stage = None

    for key in ("tool_name_glob", "skill_glob"):
        if key in data:
            problem = glob_problem(data[key])
            if problem:
                add(key, f"is not a glob: {problem}")

    clauses = data.get("args_match")
    if "args_match" in data:
        if not isinstance(clauses, list):
            add("args_match", "must be a list of clauses")
        elif len(clauses) > MAX_CLAUSES_PER_RULE:
            add("args_match", f"holds {len(clauses)} clauses, more than {MAX_CLAUSES_PER_RULE}")
        else:
            for index, clause in enumerate(clauses):
                values = clause.get("value") if isinstance(clause, dict) else None
                if isinstance(values, list) and len(values) > MAX_CLAUSE_VALUES:
                    add(
                        f"args_match[{index}].value",
                        f"holds {len(values)} values, more than {MAX_CLAUSE_VALUES}",
                    )
                    continue
                for field, message in clause_problems(clause):
                    add(_join(f"args_match[{index}]", field), message)

    verdict = data.get("verdict")
    if "verdict" not in data:
        add("verdict", "is required")
    elif not isinstance(verdict, str) or verdict not in VERDICTS:
        add("verdict", f"unknown verdict `{_shown(verdict)}` (known: {', '.join(VERDICTS)})")
        verdict = None

    if verdict == "sanitize":
        if not _present(data, "sanitize"):
            add("sanitize", "is required for the `sanitize` verdict")
        else:
            patterns = (
                data["sanitize"].get("patterns") if isinstance(data["sanitize"], dict) else None
            )
            if isinstance(patterns, list) and len(patterns) > MAX_SANITIZE_PATTERNS:
                add(
                    "sanitize.patterns",
                    f"holds {len(patterns)} patterns, more than {MAX_SANITIZE_PATTERNS}",
                )
            else:
                for field, message in sanitizer_problems(data["sanitize"]):
                    add(_join("sanitize", field), message)
    elif _present(data, "sanitize") and verdict is not None:
        add("sanitize", "is used only with the `sanitize` verdict")

    if verdict == "cap_cost":
        cents = data.get("cap_cost_cents")
        if cents is None:
            add("cap_cost_cents", "is required for the `cap_cost` verdict")
        elif not _is_int(cents) or cents <= 0:
            add("cap_cost_cents", "must be a positive integer")
        elif cents > PRIORITY_MAX:
            add("cap_cost_cents", f"must be at most {PRIORITY_MAX}")
        if stage == "egress":
            add("verdict", "`cap_cost` does not apply on the `egress` stage")
    elif _present(data, "cap_cost_cents") and verdict is not None:
        add("cap_cost_cents", "is used only with the `cap_cost` verdict")

    if _present(data, "egress"):
        if stage is not None and stage != "egress":
            add("egress", "egress lists apply only to rules on the `egress` stage")
        lists = data["egress"] if isinstance(data["egress"], dict) else {}
        long = [
            (key, len(lists[key]))
            for key in ("allow", "deny")
            if isinstance(lists.get(key), list) and len(lists[key]) > MAX_EGRESS_ENTRIES
        ]
        for key, count in long:
            add(f"egress.{key}", f"holds {count} entries, more than {MAX_EGRESS_ENTRIES}")
        if not long:
            for field, message in egress_problems(data["egress"], verdict or "deny"):
                add(_join("egress", field), message)

    if "notes" in data and data["notes"] is not None:
        if not isinstance(data["notes"], str):
            add("notes", "must be a string")
        elif len(data["notes"]) > MAX_NOTES_LENGTH:
            add("notes", f"must be at most {MAX_NOTES_LENGTH} characters")

    if _present(data, "sequence"):
        for field, message in sequence_problems(data["sequence"]):
            add(_join("sequence", field), message)
        if verdict is not None and verdict not in SEQUENCE_VERDICTS:
            add(
                "verdict",
                f"a sequence rule's verdict must be one of {', '.join(SEQUENCE_VERDICTS)}",
            )
        if stage:
            add("stage", "a sequence rule has no stage: its steps say which calls count")
        for key in ("tool_name_glob", "skill_glob"):
            if data.get(key) not in (None, "", "*"):
                add(key, "a sequence rule matches tools through its steps' globs")
        if clauses:
            add("args_match", "a sequence rule has no argument clauses")
        if _present(data, "egress"):
            add("egress", "a sequence rule has no egress lists (use `egress: true` on a step)")
    return issues


def validate_policy(data: object) -> list[ValidationIssue]:
    """Every problem of a policy, in document order. Never raises."""
    issues: list[ValidationIssue] = []
    if not isinstance(data, dict):
        return [ValidationIssue("", "a policy must be a JSON object")]
    for key in data:
        if key not in POLICY_FIELDS:
            issues.append(ValidationIssue(str(key), "unknown field"))
    if "name" not in data:
        issues.append(ValidationIssue("name", "is required"))
    else:
        problem = _name_problem(data["name"], "the name")
        if problem:
            issues.append(ValidationIssue("name", problem))
    default = data.get("default_verdict")
    if "default_verdict" not in data:
        issues.append(ValidationIssue("default_verdict", "is required"))
    elif not isinstance(default, str) or default not in DEFAULT_VERDICTS:
        hint = (
            " (it needs a rule's payload)"
            if default in ("sanitize", "cap_cost")
            else f" (known: {', '.join(DEFAULT_VERDICTS)})"
        )
        issues.append(
            ValidationIssue(
                "default_verdict", f"`{_shown(default)}` cannot be the default verdict{hint}"
            )
        )
    rules = data.get("rules")
    if "rules" not in data:
        issues.append(ValidationIssue("rules", "is required (it may be an empty list)"))
        return issues
    if not isinstance(rules, list):
        issues.append(ValidationIssue("rules", "must be a list of rules"))
        return issues
    if len(rules) > MAX_RULES_PER_POLICY:
        issues.append(ValidationIssue("rules", too_many_rules(len(rules))))
        return issues
    names: dict[str, int] = {}
    ids: dict[tuple[str, Any], int] = {}
    for index, rule in enumerate(rules):
        where = f"rules[{index}]"
        issues.extend(validate_rule(rule, where))
        if not isinstance(rule, dict):
            continue
        name = rule.get("name")
        if isinstance(name, str):
            if name in names:
                issues.append(
                    ValidationIssue(
                        f"{where}.name", f"duplicate rule name `{name}` (see rules[{names[name]}])"
                    )
                )
            else:
                names[name] = index
        rule_id = rule.get("id")
        if _is_int(rule_id) or isinstance(rule_id, str):
            key = (type(rule_id).__name__, rule_id)
            if key in ids:
                issues.append(
                    ValidationIssue(
                        f"{where}.id", f"duplicate rule id `{rule_id}` (see rules[{ids[key]}])"
                    )
                )
            else:
                ids[key] = index
    return issues
