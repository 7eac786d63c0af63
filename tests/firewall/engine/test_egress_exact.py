"""Exact behaviour of egress scopes: the precise problems `egress_problems` reports (field and
message, and which size checks follow which problems), the error `build_egress` raises, the
caching and filtering of `Lookup`, and the allow/deny carve-outs of both polarities.
"""

from __future__ import annotations

from typing import Any

import pytest

from firewall.engine.addresses import parse_ip
from firewall.engine.destinations import parse_destination
from firewall.engine.egress import Lookup, build_egress, egress_problems
from firewall.engine.errors import OperandInvalid

NOT_A_NUMBER_HOST = "is not a valid IP address, and a hostname never ends in a number"
NOT_A_LIST = "must be a list of CIDRs, IP addresses or hostnames"
NEEDS_DENY = "a `deny` rule needs entries here to say what it blocks"
NEEDS_ALLOW = "an `allow` rule needs entries here to define its scope"


class CountingResolver:
    """Answers every name from one list and records the names it was asked."""

    def __init__(self, answer: list[str]) -> None:
        self.answer = answer
        self.asked: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.asked.append(host)
        return self.answer


@pytest.mark.parametrize(
    ("egress", "verdict", "problems"),
    [
        ("x", "deny", [("", "must be an object with `allow` and/or `deny` lists")]),
        ({"deny": [5]}, "deny", [("deny[0]", "must be a string")]),
        ({"deny": ["*.a.com"]}, "deny", []),
        (
            {"deny": ["192.168.1.300"]},
            "deny",
            [("deny[0]", f"`192.168.1.300` {NOT_A_NUMBER_HOST}")],
        ),
        (
            {"deny": ["192.168.1.300."]},
            "deny",
            [("deny[0]", f"`192.168.1.300.` {NOT_A_NUMBER_HOST}")],
        ),
        ({"deny": ["*.a.1"]}, "deny", [("deny[0]", f"`*.a.1` {NOT_A_NUMBER_HOST}")]),
        ({"deny": ["a.300.com"]}, "deny", []),
        ({"allow": "x"}, "deny", [("allow", NOT_A_LIST)]),
        (
            {"allow": "x", "deny": [5]},
            "deny",
            [("allow", NOT_A_LIST), ("deny[0]", "must be a string")],
        ),
        ({"deny": "x", "allow": ["a.com"]}, "allow", [("deny", NOT_A_LIST)]),
        ({"allow": [5]}, "deny", [("allow[0]", "must be a string"), ("deny", NEEDS_DENY)]),
        ({"deny": [5]}, "allow", [("deny[0]", "must be a string"), ("allow", NEEDS_ALLOW)]),
        ({"deny": ["10.0.0.0/8"]}, "allow", [("allow", NEEDS_ALLOW)]),
        ({"allow": ["10.0.0.0/8"]}, "deny", [("deny", NEEDS_DENY)]),
        ({}, "deny", [("", "must list at least one entry in `allow` or `deny`")]),
        ({"deny": [], "bogus": 1}, "deny", [("bogus", "unknown field")]),
    ],
)
def test_egress_problems_are_exact(egress: Any, verdict: str, problems: list[Any]) -> None:
    assert egress_problems(egress, verdict) == problems


def test_build_egress_raises_the_first_problem() -> None:
    with pytest.raises(OperandInvalid) as caught:
        build_egress({"deny": ["10.0.0.0/8"]}, "allow")
    assert (caught.value.field, caught.value.message) == ("allow", NEEDS_ALLOW)
    assert str(caught.value) == f"allow: {NEEDS_ALLOW}"


def test_build_egress_raises_for_a_bad_entry_with_its_field() -> None:
    with pytest.raises(OperandInvalid) as caught:
        build_egress({"deny": [5, "10.0.0.0/8"]}, "deny")
    assert str(caught.value) == "deny[0]: must be a string"


def test_lookup_resolves_each_name_once_and_drops_bad_and_repeated_addresses() -> None:
    resolver = CountingResolver(["bogus", "1.2.3.4", "1.2.3.4", "::1"])
    lookup = Lookup(resolver, parse_destination("http://a.example/"))
    first = lookup.addresses("a.example")
    assert first == ((parse_ip("1.2.3.4"), parse_ip("::1")), None)
    assert lookup.addresses("a.example") is first
    assert resolver.asked == ["a.example"]


def test_lookup_remembers_a_failure_too() -> None:
    asked: list[str] = []

    def failing(host: str) -> list[str]:
        asked.append(host)
        raise OSError(host)

    lookup = Lookup(failing, parse_destination("http://a.example/"))
    expected = ((), "hostname `a.example` could not be resolved")
    assert lookup.addresses("a.example") == expected
    assert lookup.addresses("a.example") == expected
    assert asked == ["a.example"]


def fires(egress: dict[str, Any], verdict: str, target: str, answer: list[str]) -> bool:
    destinations = parse_destination(target)
    notes: list[str] = []
    lookup = Lookup(CountingResolver(answer), destinations)
    return build_egress(egress, verdict).fires(destinations, lookup, notes)


@pytest.mark.parametrize(
    ("egress", "target", "answer", "expected"),
    [
        (
            {"allow": ["*.example"], "deny": ["10.0.0.0/8"]},
            "http://a.example/",
            ["10.0.0.1"],
            False,
        ),
        ({"allow": ["*.example"], "deny": ["10.0.0.0/8"]}, "http://a.example/", ["9.9.9.9"], True),
        ({"allow": ["0.0.0.0/0"], "deny": ["10.0.0.0/8"]}, "http://10.1.1.1/", [], False),
        ({"allow": ["0.0.0.0/0"], "deny": ["10.0.0.0/8"]}, "http://9.1.1.1/", [], True),
        ({"allow": ["*.example"], "deny": ["b.example"]}, "http://b.example/", [], False),
    ],
)
def test_an_allow_rule_is_out_of_scope_on_any_denied_name_or_address(
    egress: dict[str, Any], target: str, answer: list[str], expected: bool
) -> None:
    assert fires(egress, "allow", target, answer) is expected


@pytest.mark.parametrize(
    ("egress", "target", "expected"),
    [
        ({"deny": ["evil.example"], "allow": ["evil.example"]}, "http://evil.example/", False),
        ({"deny": ["evil.example"], "allow": ["other.example"]}, "http://evil.example/", True),
        ({"deny": ["*.example"], "allow": ["evil.example"]}, "http://evil.example/", False),
        ({"deny": ["*.example"], "allow": ["*.evil.example"]}, "http://a.evil.example/", False),
        ({"deny": ["*.example"], "allow": ["*.evil.example"]}, "http://a.good.example/", True),
    ],
)
def test_a_deny_rule_is_excused_by_an_allowed_name(
    egress: dict[str, Any], target: str, expected: bool
) -> None:
    assert fires(egress, "deny", target, []) is expected
