"""Egress scopes: entries, polarity, hostname resolution and address spellings."""

from __future__ import annotations

from typing import Any

import pytest

from firewall.engine import compile_policy, reference_evaluate
from firewall.engine.egress import MAX_LOOKUPS_PER_CALL, egress_problems

from .conftest import FakeResolver, policy


def decide(rule: dict[str, Any], call: dict[str, Any], resolver: FakeResolver) -> Any:
    data = policy({"stage": "egress", **rule})
    compiled = compile_policy(data, resolver=resolver).evaluate(call)
    assert compiled.to_dict() == reference_evaluate(data, call, resolver=resolver).to_dict()
    return compiled


DENY_SSRF = {
    "verdict": "deny",
    "egress": {"deny": ["169.254.169.254", "10.0.0.0/8"], "allow": ["10.1.2.3"]},
}


@pytest.mark.parametrize(
    "destination",
    [
        "http://169.254.169.254/latest",
        "http://2852039166/",
        "http://0xA9FEA9FE/",
        "http://0251.0376.0251.0376/",
        "http://169.254.43518/",
        "http://[::ffff:169.254.169.254]/",
        "http://10.0.0.5/x",
    ],
)
def test_deny_polarity_blocks_listed_addresses_in_any_spelling(
    destination: str, resolver: FakeResolver
) -> None:
    decision = decide(DENY_SSRF, {"tool": "http.get", "destination": destination}, resolver)
    assert decision.verdict == "deny"


def test_allow_entries_carve_exceptions_from_a_deny_list(resolver: FakeResolver) -> None:
    call = {"tool": "http.get", "destination": "http://10.1.2.3/"}
    assert decide(DENY_SSRF, call, resolver).verdict == "allow"
    assert decide(DENY_SSRF, call, resolver).rule is None


def test_hostnames_are_resolved_and_rechecked_against_cidrs(resolver: FakeResolver) -> None:
    call = {"tool": "http.get", "destination": "http://metadata.internal/latest"}
    assert decide(DENY_SSRF, call, resolver).verdict == "deny"
    call = {"tool": "http.get", "destination": "http://v6.example/"}
    assert decide(DENY_SSRF, call, resolver).verdict == "deny"
    call = {"tool": "http.get", "destination": "http://public.example/"}
    assert decide(DENY_SSRF, call, resolver).verdict == "allow"


def test_any_resolved_address_in_a_denied_range_blocks(resolver: FakeResolver) -> None:
    call = {"tool": "http.get", "destination": "https://mixed.example/"}
    assert decide(DENY_SSRF, call, resolver).verdict == "deny"


def test_an_allowed_hostname_resolving_into_a_denied_range_is_still_blocked(
    resolver: FakeResolver,
) -> None:
    rule = {"verdict": "deny", "egress": {"deny": ["10.0.0.0/8"], "allow": ["mixed.example"]}}
    call = {"tool": "http.get", "destination": "https://mixed.example/"}
    assert decide(rule, call, resolver).verdict == "deny"


def test_an_unresolvable_host_is_a_diagnostic_not_a_verdict(resolver: FakeResolver) -> None:
    call = {"tool": "http.get", "destination": "https://nowhere.example/"}
    decision = decide(DENY_SSRF, call, resolver)
    assert decision.verdict == "allow"
    assert decision.errors == ["rule `rule 0`: hostname `nowhere.example` could not be resolved"]


def test_names_are_not_resolved_when_the_lists_hold_no_addresses(resolver: FakeResolver) -> None:
    rule = {"verdict": "deny", "egress": {"deny": ["*.evil.example"]}}
    decide(rule, {"tool": "http.get", "destination": "https://metadata.internal/"}, resolver)
    assert resolver.asked == []


def test_hostname_entries_match_exactly_or_as_a_suffix_without_case(
    resolver: FakeResolver,
) -> None:
    rule = {"verdict": "deny", "egress": {"deny": ["evil.example", "*.bad.example"]}}
    for destination, verdict in [
        ("https://EVIL.example./x", "deny"),
        ("https://sub.evil.example/x", "allow"),
        ("https://a.bad.example/", "deny"),
        ("https://a.b.bad.example/", "deny"),
        ("https://bad.example/", "allow"),
        ("https://notbad.example/", "allow"),
    ]:
        call = {"tool": "http.get", "destination": destination}
        assert decide(rule, call, resolver).verdict == verdict, destination


def test_allow_polarity_fires_only_when_every_destination_is_in_scope(
    resolver: FakeResolver,
) -> None:
    rule = {"verdict": "allow", "egress": {"allow": ["*.partner.example", "93.184.216.0/24"]}}
    data = policy({"stage": "egress", **rule}, default="deny")

    def verdict(call: dict[str, Any]) -> str:
        return compile_policy(data, resolver=resolver).evaluate(call).verdict

    assert verdict({"tool": "http.get", "destination": "https://api.partner.example/"}) == "allow"
    assert verdict({"tool": "http.get", "destination": "https://public.example/"}) == "allow"
    assert verdict({"tool": "http.get", "destination": "https://mixed.example/"}) == "deny"
    both = {"a": "https://api.partner.example/", "b": "https://evil.example/"}
    assert verdict({"tool": "http.get", "stage": "egress", "arguments": both}) == "deny"


def test_deny_entries_carve_exceptions_from_an_allow_scope(resolver: FakeResolver) -> None:
    rule = {
        "verdict": "allow",
        "egress": {"allow": ["*.partner.example"], "deny": ["admin.partner.example"]},
    }
    data = policy({"stage": "egress", **rule}, default="deny")
    evaluate = compile_policy(data, resolver=resolver).evaluate
    assert evaluate({"tool": "x", "destination": "https://api.partner.example"}).verdict == "allow"
    assert evaluate({"tool": "x", "destination": "https://admin.partner.example"}).verdict == "deny"


def test_destinations_are_read_from_arguments_when_the_call_has_none(
    resolver: FakeResolver,
) -> None:
    call = {
        "tool": "http.get",
        "stage": "egress",
        "arguments": {"request": {"url": "http://0xA9FEA9FE/latest"}},
    }
    assert decide(DENY_SSRF, call, resolver).verdict == "deny"


def test_an_egress_rule_with_no_destination_does_not_fire(resolver: FakeResolver) -> None:
    call = {"tool": "http.get", "stage": "egress", "arguments": {"text": "nothing here"}}
    decision = decide(DENY_SSRF, call, resolver)
    assert decision.verdict == "allow"
    assert decision.rule is None


def test_an_unreadable_destination_does_not_fire_and_says_why(resolver: FakeResolver) -> None:
    decision = decide(DENY_SSRF, {"tool": "http.get", "destination": "http://[oops"}, resolver)
    assert decision.verdict == "allow"
    assert decision.errors == ["rule `rule 0`: destination `http://[oops` names no host or IP"]


def test_a_call_resolves_a_bounded_number_of_hostnames(resolver: FakeResolver) -> None:
    names = [f"https://h{i}.example/" for i in range(MAX_LOOKUPS_PER_CALL + 3)]
    call = {"tool": "http.get", "stage": "egress", "arguments": {"urls": names}}
    decision = decide(DENY_SSRF, call, resolver)
    assert len(set(resolver.asked)) == MAX_LOOKUPS_PER_CALL
    assert any("at most" in error for error in decision.errors)


@pytest.mark.parametrize(
    ("egress", "verdict", "field", "fragment"),
    [
        ({}, "deny", "", "at least one entry"),
        ({"allow": [], "deny": []}, "deny", "", "at least one entry"),
        ({"allow": ["10.0.0.0/8"]}, "deny", "deny", "needs entries"),
        ({"deny": ["10.0.0.0/8"]}, "allow", "allow", "needs entries"),
        ({"deny": ["10.0.0.1/8"]}, "deny", "deny[0]", "host bits set"),
        ({"deny": ["not a host!"]}, "deny", "deny[0]", "not a CIDR"),
        ({"deny": [7]}, "deny", "deny[0]", "must be a string"),
        ({"deny": "10.0.0.0/8"}, "deny", "deny", "must be a list"),
        ({"block": ["x"], "deny": ["x.example"]}, "deny", "block", "unknown field"),
        ([], "deny", "", "must be an object"),
    ],
)
def test_egress_problems(egress: Any, verdict: str, field: str, fragment: str) -> None:
    problems = egress_problems(egress, verdict)
    assert any(f == field and fragment in m for f, m in problems), problems
