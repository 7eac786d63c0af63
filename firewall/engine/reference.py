"""The reference evaluator: a straight first-match scan, written to be obviously right.

It reads the policy as stored (leniently, see `rules.py`) on every call and interprets each
rule from its JSON: no index, no precompiled tests, operators spelled out one by one. The
compiled engine (`compiled.py`) must give the same decision for every policy and call; a
property test holds them to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from firewall.engine.addresses import parse_ip, parse_network
from firewall.engine.calls import CallView, read_call
from firewall.engine.clauses import compile_regex
from firewall.engine.decision import (
    Decision,
    dedupe,
    effective_verdict,
    from_default,
    from_rule,
    refused,
)
from firewall.engine.destinations import Destination, argument_destinations, parse_destination
from firewall.engine.egress import Lookup, build_egress
from firewall.engine.globs import glob_matches
from firewall.engine.jsonpath import MISSING, parse_path, resolve
from firewall.engine.resolver import default_resolver
from firewall.engine.rules import (
    LoadedRule,
    clause_content_problem,
    egress_content_problem,
    load_policy,
    payload_problem,
    rule_error,
)
from firewall.engine.sanitize import build_sanitizer
from firewall.engine.values import is_number, json_equal, utf8_safe


def _holds(op: str, value: Any, actual: Any) -> bool:
    """One operator on an operand (already checked) and the value the path resolved to."""
    if op == "eq":
        return json_equal(actual, value)
    if op == "neq":
        return not json_equal(actual, value)
    if op == "in":
        return any(json_equal(actual, item) for item in value)
    if op == "not_in":
        return not any(json_equal(actual, item) for item in value)
    if op == "contains":
        if isinstance(actual, str):
            return isinstance(value, str) and value in actual
        if isinstance(actual, list):
            return any(json_equal(item, value) for item in actual)
        return False
    if op == "starts_with":
        return isinstance(actual, str) and actual.startswith(value)
    if op == "ends_with":
        return isinstance(actual, str) and actual.endswith(value)
    if op == "regex":
        if not isinstance(actual, str):
            return False
        return compile_regex(value).search(utf8_safe(actual)) is not None
    if op == "cidr":
        if not isinstance(actual, str):
            return False
        address = parse_ip(actual)
        network = parse_network(value)
        return address is not None and address.version == network.version and address in network
    if not is_number(actual):
        return False
    if op == "gt":
        return actual > value
    if op == "gte":
        return actual >= value
    if op == "lt":
        return actual < value
    return actual <= value  # lte


def _clause_holds(clause: dict[str, Any], arguments: Any) -> bool:
    if not isinstance(arguments, dict):
        return False
    actual = resolve(parse_path(clause["path"]), arguments)
    if clause["op"] == "exists":
        return (actual is not MISSING) == clause.get("value", True)
    return actual is not MISSING and _holds(clause["op"], clause["value"], actual)


class _Walk:
    """What one evaluation collects on the way: shadow verdicts, errors, destinations."""

    def __init__(self, view: CallView, resolver: Callable[[str], Iterable[str]] | None) -> None:
        self.view = view
        self.resolver = resolver
        self.shadow: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._destinations: list[Destination] | None = None
        self._lookup: Lookup | None = None

    def destinations(self) -> list[Destination]:
        if self._destinations is None:
            destination = self.view.destination
            if destination is not None:
                self._destinations = parse_destination(destination)
            else:
                self._destinations = argument_destinations(self.view.arguments)
            resolver = self.resolver if self.resolver is not None else default_resolver()
            self._lookup = Lookup(resolver, self._destinations)
        return self._destinations

    def fires(self, rule: LoadedRule) -> bool:
        view = self.view
        if rule.stage and rule.stage != view.stage:
            return False
        if not glob_matches(rule.tool_glob, view.tool):
            return False
        if rule.skill_glob and (
            view.skill is None or not glob_matches(rule.skill_glob, view.skill)
        ):
            return False
        for index, clause in enumerate(rule.clauses):
            problem = clause_content_problem(clause, index)
            if problem:
                self.errors.append(rule_error(rule, problem))
                return False
            if not _clause_holds(clause, view.arguments):
                return False
        if rule.egress is not None:
            problem = egress_content_problem(rule)
            if problem:
                self.errors.append(rule_error(rule, problem))
                return False
            destinations = self.destinations()
            if view.destination is not None and not destinations:
                self.errors.append(
                    rule_error(rule, f"destination `{view.destination}` names no host or IP")
                )
            notes: list[str] = []
            assert self._lookup is not None
            fired = build_egress(rule.egress, rule.verdict).fires(destinations, self._lookup, notes)
            self.errors.extend(rule_error(rule, note) for note in notes)
            if not fired:
                return False
        problem = payload_problem(rule)
        if problem:
            self.errors.append(rule_error(rule, problem))
            return False
        return True


def reference_evaluate(
    policy_data: object,
    call: object,
    *,
    resolver: Callable[[str], Iterable[str]] | None = None,
) -> Decision:
    """Decide a call against a policy as stored, by scanning its rules in order."""
    view = read_call(call)
    if isinstance(view, str):
        arguments = call.get("arguments") if isinstance(call, dict) else None
        return refused(f"malformed_call: {view}", arguments)
    policy = load_policy(policy_data)
    walk = _Walk(view, resolver)
    for rule in policy.rules:
        if not walk.fires(rule):
            continue
        if rule.shadow:
            walk.shadow.append(
                {
                    "rule": rule.name,
                    "rule_id": rule.id,
                    "verdict": effective_verdict(rule.verdict, view.stage),
                }
            )
            continue
        sanitizer = build_sanitizer(rule.sanitize) if rule.verdict == "sanitize" else None
        return from_rule(
            verdict=rule.verdict,
            name=rule.name,
            rule_id=rule.id,
            stage=view.stage,
            arguments=view.arguments,
            sanitizer=sanitizer,
            cap_cost_cents=rule.cap_cost_cents,
            shadow=walk.shadow,
            errors=dedupe(walk.errors),
        )
    if policy.default_verdict is None:
        assert policy.default_error is not None
        return refused(
            "invalid_default_verdict",
            view.arguments,
            dedupe([*walk.errors, policy.default_error]),
        )
    return from_default(policy.default_verdict, view.arguments, walk.shadow, dedupe(walk.errors))
