"""The compiled engine: a policy indexed once, so a decision touches only the rules it could.

How it works. `compile_policy` validates the policy (strictly, unless told to load a stored
policy leniently), loads its rules in first-match order and gives each its rank. For each call
stage it builds an index of the rules that apply there (their stage is empty or that stage):

- rules whose tool glob is `""` or `*` in one list;
- exact tool names in a dict `name -> rules`;
- prefix globs (`foo.*`) in a dict keyed by `foo.`, looked up with every dot-prefix of the
  tool name (`a.b.c` -> `a.`, `a.b.`); suffix globs (`*.exec`) likewise with every
  dot-suffix (`.b.c`, `.c`);
- infix globs (`*.shell.*`) in a dict keyed by `.shell.`, looked up with every dot-to-dot
  slice strictly inside the name; a name with very many dots is matched against an RE2
  `Set` of the infix globs instead, so the cost stays linear in the name.

A bucket that holds many rules with argument clauses (broad rules: `*` and a clause on `$.url`)
is split: the rules that have a clause an index can answer go into a `ClauseIndex`
(`clause_index.py`: hash tables for `eq`/`in`/`contains` over arrays, one RE2 set per path for
regexes and string literals, tables per prefix length for `cidr`), the others stay a plain
list. A call then walks the plain lists and, for each split bucket, the few rules the index
finds from its argument values, in rank order, each still tested clause by clause.

The lists found for a tool name are remembered (for at least 8,192 names, or twice the names
the rules spell out; forgotten all at once when full), since agents call the same tools over
and over. Names that find the same buckets share one plan, so a remembered name costs its
string and a table slot, not lists of its own.

Every list is kept in rank order, and every rule sits in exactly one list, so the candidates of
a call are a handful of short sorted lists. They are walked with a bound: once some rule has
fired, no list goes past its rank. Shadow rules and errors met on the way are kept with their
rank and only those ranked before the deciding rule are reported, in rank order; so the answer
is exactly the reference scan's (`reference.py`), at a cost that grows with the rules that
share the call's tool name and not with the size of the policy.

Clause tests, egress scopes and sanitizers are compiled once; a stored rule with a broken
part keeps the part's problem and reports it when evaluation reaches it (see `rules.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import re2

from firewall.engine.calls import read_call
from firewall.engine.clause_index import ClauseIndex, split_bucket
from firewall.engine.clauses import compile_clause
from firewall.engine.decision import (
    Decision,
    dedupe,
    effective_verdict,
    from_rule,
    refused,
)
from firewall.engine.destinations import Destination, argument_destinations, parse_destination
from firewall.engine.egress import EgressScope, Lookup, build_egress
from firewall.engine.errors import OperandInvalid, PolicyInvalid
from firewall.engine.globs import ANY, EXACT, INFIX, PREFIX, SUFFIX, classify, compile_glob
from firewall.engine.resolver import default_resolver
from firewall.engine.rules import (
    LoadedRule,
    clause_content_problem,
    egress_content_problem,
    load_policy,
    payload_problem,
    rule_error,
)
from firewall.engine.sanitize import Sanitizer, build_sanitizer
from firewall.engine.validator import ValidationIssue, validate_policy
from firewall.engine.values import utf8_safe
from firewall.engine.vocabulary import DECISION_OF_VERDICT, STAGES

#: Above this many dots in a tool name, infix globs are matched with the RE2 set.
_MAX_DOTS_FOR_PAIRS = 12

_NO_RANK = 1 << 62

#: The index remembers the candidates of at least this many tool names (twice the names its
#: rules spell out, if more), each of at most this length.
_MIN_CACHED_NAMES = 8192
_MAX_CACHED_NAME = 256

#: A bucket is split into a clause index when at least this many of its rules can be filed.
MIN_INDEXED_RULES = 12

_SET_OPTIONS = re2.Options()
_SET_OPTIONS.log_errors = False


@dataclass(slots=True, eq=False)
class _Rule:
    """A rule ready to evaluate."""

    rank: int
    name: str
    id: int | str | None
    shadow: bool
    verdict: str
    cap_cost_cents: int | None
    skill: Callable[[str], bool] | None
    clauses: tuple[Callable[[dict[str, Any]], bool], ...]
    broken: str | None
    egress: EgressScope | None
    payload_error: str | None
    sanitizer: Sanitizer | None
    simple: bool
    decision: str = ""
    reason: str = ""


def _compile_rule(rule: LoadedRule, validated: bool) -> _Rule:
    """`validated`: the policy passed `validate_policy` without an issue, so no clause has a
    problem (the validator runs `clause_problems` on every clause of every rule)."""
    tests: list[Callable[[dict[str, Any]], bool]] = []
    broken = None
    for index, clause in enumerate(rule.clauses):
        if not validated:
            problem = clause_content_problem(clause, index)
            if problem:
                broken = rule_error(rule, problem)
                break
        tests.append(compile_clause(clause, checked=True))
    egress = None
    if broken is None and rule.egress is not None:
        problem = egress_content_problem(rule)
        if problem:
            broken = rule_error(rule, problem)
        else:
            egress = build_egress(rule.egress, rule.verdict)
    sanitizer = None
    payload_error = None
    if broken is None:
        problem = payload_problem(rule)
        if problem:
            payload_error = rule_error(rule, problem)
        elif rule.verdict == "sanitize":
            sanitizer = build_sanitizer(rule.sanitize)
    skill = compile_glob(rule.skill_glob) if rule.skill_glob else None
    compiled = _Rule(
        rank=rule.rank,
        name=rule.name,
        id=rule.id,
        shadow=rule.shadow,
        verdict=rule.verdict,
        cap_cost_cents=rule.cap_cost_cents if rule.verdict == "cap_cost" else None,
        skill=skill,
        clauses=tuple(tests),
        broken=broken,
        egress=egress,
        payload_error=payload_error,
        sanitizer=sanitizer,
        simple=broken is None and egress is None and payload_error is None,
        decision=DECISION_OF_VERDICT[rule.verdict],
        reason=f"rule: {rule.name}",
    )
    return compiled


_Plan = tuple[list[list[_Rule]], list[ClauseIndex]]


class _Index:
    """The rules of one stage, bucketed by the shape of their tool glob."""

    __slots__ = (
        "any",
        "exact",
        "prefix",
        "suffix",
        "infix",
        "infix_set",
        "infix_keys",
        "split",
        "_seen",
        "_plans",
        "_capacity",
    )

    def __init__(
        self,
        rules: list[tuple[LoadedRule, _Rule]],
        min_indexed: int,
        shared: dict[tuple[int, ...], tuple[list[_Rule], ClauseIndex | None]],
    ) -> None:
        self.any: list[_Rule] = []
        self.exact: dict[str, list[_Rule]] = {}
        self.prefix: dict[str, list[_Rule]] = {}
        self.suffix: dict[str, list[_Rule]] = {}
        self.infix: dict[str, list[_Rule]] = {}
        for loaded, compiled in rules:
            kind, key = classify(loaded.tool_glob)
            if kind == ANY:
                self.any.append(compiled)
            else:
                table = {
                    EXACT: self.exact,
                    PREFIX: self.prefix,
                    SUFFIX: self.suffix,
                    INFIX: self.infix,
                }[kind]
                table.setdefault(key, []).append(compiled)
        self.infix_keys: list[str] = list(self.infix)
        self.infix_set: Any = None
        clauses = {id(compiled): loaded.clauses for loaded, compiled in rules}

        def fileable(rule: _Rule) -> list[Any] | None:
            return clauses[id(rule)] if rule.broken is None else None

        #: The buckets split into (plain rules, clause index), by the bucket's identity.
        self.split: dict[int, tuple[list[_Rule], ClauseIndex]] = {}
        buckets = [self.any, *self.exact.values(), *self.prefix.values()]
        buckets += [*self.suffix.values(), *self.infix.values()]
        for bucket in buckets:
            if len(bucket) >= min_indexed:
                # a bucket with the same rules in another stage (rules with no stage sit in
                # every stage) shares its split
                members = tuple(id(rule) for rule in bucket)
                parts = shared.get(members)
                if parts is None:
                    parts = shared[members] = split_bucket(bucket, fileable, min_indexed)
                plain, index = parts
                if index is not None:
                    self.split[id(bucket)] = (plain, index)
        self._seen: dict[str, _Plan] = {}
        #: The plans by the identities of the buckets they were made of.
        self._plans: dict[tuple[int, ...], _Plan] = {}
        keys = len(self.exact) + len(self.prefix) + len(self.suffix) + len(self.infix)
        self._capacity = max(_MIN_CACHED_NAMES, 2 * keys)

    def _infix_matches(self, tool: str) -> list[int]:
        """The infix keys inside `tool`, found in one pass by an RE2 set (built on first use)."""
        if self.infix_set is None:
            infix_set = re2.Set.FullMatchSet(_SET_OPTIONS)
            for key in self.infix_keys:
                infix_set.Add("(?s).+" + re2.escape(key) + ".+")
            infix_set.Compile()
            self.infix_set = infix_set
        return self.infix_set.Match(utf8_safe(tool)) or []

    def candidates(self, tool: str) -> list[list[_Rule]]:
        """The rank-ordered lists of rules whose tool glob matches `tool`."""
        return self._lookup(tool)

    def plan(self, tool: str) -> _Plan:
        """The plain lists to walk for `tool` and the clause indexes to ask (cached per name).

        Names that find the same buckets (every tool no rule names finds only the `*` bucket)
        share one plan, so remembering a new name keeps no new list alive: the garbage
        collector, which runs when live containers pile up, is not woken by a stream of
        unknown tool names, and forgetting them all at once frees only the names.
        """
        found = self._seen.get(tool)
        if found is None:
            buckets = self._lookup(tool)
            key = tuple([id(bucket) for bucket in buckets])
            found = self._plans.get(key)
            if found is None:
                lists: list[list[_Rule]] = []
                indexes: list[ClauseIndex] = []
                split = self.split
                for bucket in buckets:
                    parts = split.get(id(bucket)) if split else None
                    if parts is None:
                        lists.append(bucket)
                    else:
                        if parts[0]:
                            lists.append(parts[0])
                        indexes.append(parts[1])
                found = (lists, indexes)
                if len(self._plans) >= self._capacity:
                    self._plans.clear()
                self._plans[key] = found
            if len(tool) <= _MAX_CACHED_NAME:
                if len(self._seen) >= self._capacity:
                    self._seen.clear()
                self._seen[tool] = found
        return found

    def _lookup(self, tool: str) -> list[list[_Rule]]:
        found: list[list[_Rule]] = []
        if self.any:
            found.append(self.any)
        exact = self.exact.get(tool)
        if exact is not None:
            found.append(exact)
        if not (self.prefix or self.suffix or self.infix):
            return found
        # the dots strictly inside the name: each ends a prefix key and starts a suffix key
        last = len(tool) - 1
        inner = []
        at = tool.find(".", 1)
        while 0 < at < last:
            inner.append(at)
            at = tool.find(".", at + 1)
        if not inner:
            return found
        prefix = self.prefix
        if prefix:
            for at in inner:
                rules = prefix.get(tool[: at + 1])
                if rules is not None:
                    found.append(rules)
        suffix = self.suffix
        if suffix:
            for at in inner:
                rules = suffix.get(tool[at:])
                if rules is not None:
                    found.append(rules)
        if self.infix and len(inner) > 1:
            if len(inner) <= _MAX_DOTS_FOR_PAIRS:
                infix = self.infix
                keys = {
                    tool[start : end + 1]
                    for number, start in enumerate(inner)
                    for end in inner[number + 1 :]
                    if end - start >= 2
                }
                for key in keys:
                    rules = infix.get(key)
                    if rules is not None:
                        found.append(rules)
            else:
                for number in self._infix_matches(tool):
                    found.append(self.infix[self.infix_keys[number]])
        return found


class _Evaluation:
    """The lazily built state of one decision that needs more than the fast path."""

    __slots__ = ("view", "resolver", "shadow", "errors", "_destinations", "_lookup")

    def __init__(self, view: Any, resolver: Callable[[str], Iterable[str]] | None) -> None:
        self.view = view
        self.resolver = resolver
        self.shadow: list[tuple[int, dict[str, Any]]] = []
        self.errors: list[tuple[int, str]] = []
        self._destinations: list[Destination] | None = None
        self._lookup: Lookup | None = None

    def egress_fires(self, rule: _Rule) -> bool:
        view = self.view
        if self._destinations is None:
            if view.destination is not None:
                self._destinations = parse_destination(view.destination)
            else:
                self._destinations = argument_destinations(view.arguments)
            resolver = self.resolver if self.resolver is not None else default_resolver()
            self._lookup = Lookup(resolver, self._destinations)
        if view.destination is not None and not self._destinations:
            self.errors.append(
                (
                    rule.rank,
                    f"rule `{rule.name}`: destination `{view.destination}` names no host or IP",
                )
            )
        notes: list[str] = []
        assert rule.egress is not None and self._lookup is not None
        fired = rule.egress.fires(self._destinations, self._lookup, notes)
        for note in notes:
            self.errors.append((rule.rank, f"rule `{rule.name}`: {note}"))
        return fired


class CompiledPolicy:
    """A policy compiled into an index; `evaluate(call)` decides a call."""

    def __init__(
        self,
        data: object,
        *,
        resolver: Callable[[str], Iterable[str]] | None = None,
        issues: list[ValidationIssue] | None = None,
        min_indexed: int = MIN_INDEXED_RULES,
        validated: bool = False,
    ) -> None:
        """`validated`: `validate_policy(data)` found no issue (`compile_policy` knows), so the
        rules' clauses are not checked again."""
        loaded = load_policy(data, validated=validated)
        self.name = loaded.name
        #: Validation issues (strict compile: none) and rules left out while loading.
        self.issues: list[str] = [str(issue) for issue in issues or []] + loaded.issues
        self._default = loaded.default_verdict
        self._default_error = loaded.default_error
        self._default_reason = f"default_verdict: {self._default}"
        self._resolver = resolver
        pairs = [(rule, _compile_rule(rule, validated)) for rule in loaded.rules]
        self.rule_count = len(pairs)
        shared: dict[tuple[int, ...], tuple[list[_Rule], ClauseIndex | None]] = {}
        if any(rule.stage for rule in loaded.rules):
            self._by_stage = {
                stage: _Index(
                    [pair for pair in pairs if pair[0].stage in ("", stage)], min_indexed, shared
                )
                for stage in STAGES
            }
        else:  # every rule applies at every stage: one index serves them all
            index = _Index(pairs, min_indexed, shared)
            self._by_stage = dict.fromkeys(STAGES, index)

    def evaluate(self, call: object) -> Decision:
        """Decide one call. Never raises for anything a caller can send."""
        view = read_call(call)
        if view.__class__ is str:
            arguments = call.get("arguments") if isinstance(call, dict) else None
            return refused(f"malformed_call: {view}", arguments)
        stage = view.stage
        tool = view.tool
        skill = view.skill
        arguments = view.arguments
        is_object = isinstance(arguments, dict)
        evaluation: _Evaluation | None = None
        best: _Rule | None = None
        best_rank = _NO_RANK
        buckets, indexes = self._by_stage[stage].plan(tool)
        if indexes and is_object:
            buckets = [*buckets]
            for index in indexes:
                found = index.lookup(arguments)
                if found:
                    buckets.append(found)
        for bucket in buckets:
            for rule in bucket:
                if rule.rank >= best_rank:
                    break
                test = rule.skill
                if test is not None and (skill is None or not test(skill)):
                    continue
                clauses = rule.clauses
                if clauses:
                    if not is_object:
                        continue
                    for clause in clauses:
                        if not clause(arguments):
                            break
                    else:
                        clauses = ()
                    if clauses:
                        continue
                if not rule.simple:
                    if evaluation is None:
                        evaluation = _Evaluation(view, self._resolver)
                    if rule.broken is not None:
                        evaluation.errors.append((rule.rank, rule.broken))
                        continue
                    if rule.egress is not None and not evaluation.egress_fires(rule):
                        continue
                    if rule.payload_error is not None:
                        evaluation.errors.append((rule.rank, rule.payload_error))
                        continue
                if rule.shadow:
                    if evaluation is None:
                        evaluation = _Evaluation(view, self._resolver)
                    entry = {
                        "rule": rule.name,
                        "rule_id": rule.id,
                        "verdict": effective_verdict(rule.verdict, stage),
                    }
                    evaluation.shadow.append((rule.rank, entry))
                    continue
                best = rule
                best_rank = rule.rank
                break
        shadow: list[dict[str, Any]] = []
        errors: list[str] = []
        if evaluation is not None:
            if evaluation.shadow:
                shadow = [
                    entry
                    for rank, entry in sorted(evaluation.shadow, key=_first)
                    if rank < best_rank
                ]
            if evaluation.errors:
                errors = dedupe(
                    [
                        text
                        for rank, text in sorted(evaluation.errors, key=_first)
                        if rank < best_rank
                    ]
                )
        if best is not None:
            if best.verdict != "sanitize":
                return Decision(
                    best.verdict,
                    best.decision,
                    best.name,
                    best.id,
                    arguments,
                    [best.reason],
                    shadow,
                    best.cap_cost_cents,
                    errors,
                )
            return from_rule(
                verdict=best.verdict,
                name=best.name,
                rule_id=best.id,
                stage=stage,
                arguments=arguments,
                sanitizer=best.sanitizer,
                cap_cost_cents=best.cap_cost_cents,
                shadow=shadow,
                errors=errors,
            )
        if self._default is None:
            assert self._default_error is not None
            return refused(
                "invalid_default_verdict", arguments, dedupe([*errors, self._default_error])
            )
        return Decision(
            self._default,
            DECISION_OF_VERDICT[self._default],
            None,
            None,
            arguments,
            [self._default_reason],
            shadow,
            None,
            errors,
        )


def _first(pair: tuple[int, Any]) -> int:
    return pair[0]


def compile_policy(
    data: object,
    *,
    strict: bool = True,
    resolver: Callable[[str], Iterable[str]] | None = None,
) -> CompiledPolicy:
    """Compile a policy; with `strict` (the default) an invalid one raises `PolicyInvalid`.

    `strict=False` is for policies already stored: they compile whatever their state, and the
    parts that no longer validate behave as the error policy in `rules.py` says.
    """
    issues = validate_policy(data)
    if issues and strict:
        raise PolicyInvalid(issues)
    try:
        return CompiledPolicy(data, resolver=resolver, issues=issues, validated=not issues)
    except OperandInvalid as exc:  # pragma: no cover - every part is checked before it is built
        raise PolicyInvalid([ValidationIssue("", str(exc))]) from None
