"""A door's two firewalls (the organisation's published policy and the door's own file) as one:
the stricter answer wins, and what one cleans the other judges.

Each side is a real compiled policy; the organisation's is wrapped as `PublishedFirewall` would
give it (a `Decision`, or None where nothing is published). The doors' tests against a live
console are in tests/runtime/test_decide_local.py (`Agent.chat`) and
tests/gateway/test_decide_local.py (the gateway).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from firewall.engine import compile_policy
from stalwart_agents.client import SelectorUnavailableError
from stalwart_agents.door_firewall import (
    MAX_CLEANINGS,
    BothFirewalls,
    cleaned_arguments,
    decision_of,
    door_firewall,
)


class Policy:
    """A compiled policy, answering as a door's firewall does; counts the calls it judged."""

    def __init__(self, *rules: dict[str, Any], default: str = "allow") -> None:
        self.policy = compile_policy(
            {"name": "p", "default_verdict": default, "rules": list(rules)}
        )
        self.judged: list[dict[str, Any]] = []

    def evaluate(self, call: Mapping[str, Any], *, destination: str | None = None) -> Any:
        self.judged.append(dict(call.get("arguments") or {}))
        return self.policy.evaluate(
            {"tool": call["tool"], "arguments": dict(call["arguments"]), "stage": "tool_call"}
        )


class Nothing:
    """An organisation with nothing published."""

    def evaluate(self, call: Mapping[str, Any], *, destination: str | None = None) -> None:
        return None


def rule(name: str, verdict: str, priority: int = 10, **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "priority": priority,
        "tool_name_glob": "send",
        "verdict": verdict,
        **more,
    }


def scrub(name: str, pattern: str) -> dict[str, Any]:
    return rule(name, "sanitize", sanitize={"presets": [], "patterns": [pattern]})


CALL = {"tool": "send", "arguments": {"text": "card 4111 code ACME-123456"}}


@pytest.mark.parametrize(
    ("organisation", "own", "want"),
    [
        ("deny", "allow", "deny"),
        ("allow", "deny", "deny"),
        ("require_approval", "audit", "require_approval"),
        ("audit", "require_approval", "require_approval"),
        ("deny", "require_approval", "deny"),
        ("audit", "allow", "audit"),
    ],
)
def test_the_stricter_verdict_of_the_two_wins(organisation: str, own: str, want: str) -> None:
    both = BothFirewalls(Policy(rule("org", organisation)), Policy(rule("file", own)))
    answer = both.evaluate(CALL)
    assert answer.verdict == want
    assert answer.rule == ("org" if want == organisation else "file")


def test_a_deny_of_the_organisation_is_final_and_the_file_is_not_asked() -> None:
    own = Policy(rule("file", "allow"))
    answer = BothFirewalls(Policy(rule("no send", "deny")), own).evaluate(CALL)
    assert (answer.decision, answer.rule) == ("refuse", "no send")
    assert own.judged == []


def test_the_file_judges_the_arguments_the_organisation_cleaned() -> None:
    """The organisation redacts the code; the file denies only calls that still carry it, so the
    cleaned call goes on, with the organisation's cleaning."""
    own = Policy(
        rule("no codes", "deny", args_match=[{"path": "$.text", "op": "contains", "value": "ACME"}])
    )
    answer = BothFirewalls(Policy(scrub("org scrub", "ACME-[0-9]{6}")), own).evaluate(CALL)
    assert answer.verdict == "sanitize" and answer.decision == "allow"
    assert answer.arguments == {"text": "card 4111 code [redacted:custom]"}
    assert own.judged == [{"text": "card 4111 code [redacted:custom]"}]


def test_what_the_file_cleans_the_organisation_judges_again_and_both_cleanings_stand() -> None:
    organisation = Policy(scrub("org scrub", "ACME-[0-9]{6}"))
    own = Policy(scrub("file scrub", "[0-9]{4}"))
    answer = BothFirewalls(organisation, own).evaluate(CALL)
    assert answer.verdict == "sanitize"
    assert answer.arguments == {"text": "card [redacted:custom] code [redacted:custom]"}
    # the organisation's policy judged the original, then what the file made of it
    assert organisation.judged[-1] == answer.arguments and len(organisation.judged) == 2


def test_a_deny_of_the_cleaned_arguments_refuses_the_call() -> None:
    organisation = Policy(scrub("org scrub", "ACME-[0-9]{6}"))
    own = Policy(
        rule(
            "no redacted",
            "deny",
            args_match=[{"path": "$.text", "op": "contains", "value": "redacted"}],
        )
    )
    answer = BothFirewalls(organisation, own).evaluate(CALL)
    assert (answer.decision, answer.rule) == ("refuse", "no redacted")


def test_a_hold_over_a_cleaning_asks_about_the_cleaned_call() -> None:
    answer = BothFirewalls(
        Policy(rule("ask", "require_approval")), Policy(scrub("file scrub", "ACME-[0-9]{6}"))
    ).evaluate(CALL)
    assert (answer.verdict, answer.decision, answer.rule) == ("require_approval", "confirm", "ask")
    assert answer.arguments == {"text": "card 4111 code [redacted:custom]"}
    assert "rule: file scrub" in answer.reasons
    assert cleaned_arguments(answer, CALL["arguments"]) == answer.arguments


def test_the_lower_cap_of_two_stands() -> None:
    answer = BothFirewalls(
        Policy(rule("org cap", "cap_cost", cap_cost_cents=500)),
        Policy(rule("file cap", "cap_cost", cap_cost_cents=200)),
    ).evaluate(CALL)
    assert (answer.verdict, answer.cap_cost_cents) == ("cap_cost", 200)


def test_with_nothing_published_the_file_alone_decides_as_it_did() -> None:
    own = Policy(rule("file", "require_approval"))
    answer = BothFirewalls(Nothing(), own).evaluate(CALL)
    assert answer == own.policy.evaluate({**CALL, "stage": "tool_call"})
    assert BothFirewalls(Nothing(), None).evaluate(CALL) is None


def test_cleanings_that_never_settle_are_not_guessed_at() -> None:
    class Flip:
        def __init__(self, letter: str) -> None:
            self.letter = letter

        def evaluate(self, call: Mapping[str, Any], *, destination: str | None = None) -> Any:
            from firewall.engine import Decision

            text = call["arguments"]["text"] + self.letter
            return Decision("sanitize", "allow", "flip", arguments={"text": text})

    with pytest.raises(SelectorUnavailableError, match="without end"):
        BothFirewalls(Flip("a"), Flip("b")).evaluate(CALL)
    assert MAX_CLEANINGS >= 2


def test_an_evaluate_answer_without_a_verdict_cannot_answer() -> None:
    with pytest.raises(SelectorUnavailableError):
        decision_of({"decision": "allow"})


def test_outside_a_bundle_the_door_keeps_its_own_file() -> None:
    own = Policy(rule("file", "deny"))
    assert door_firewall(own, None) is own
    assert door_firewall(None, object()) is None


class Bundle:
    def __init__(self, firewall: dict[str, Any] | None) -> None:
        self.firewall = firewall


class Feed:
    def __init__(self, found: Any) -> None:
        self.found = found

    def current(self) -> Any:
        if isinstance(self.found, Exception):
            raise self.found
        return self.found


class Session:
    """What `PublishedFirewall` reads of a `ConnectedSession`: its agent, feed and `evaluate`."""

    def __init__(self, found: Any) -> None:
        self.agent = "desk"
        self.feed = Feed(found)
        self.evaluated: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    def evaluate(self, tool: str, arguments: Mapping[str, Any], **call: Any) -> dict[str, Any]:
        self.evaluated.append((tool, dict(arguments), call))
        return {"verdict": "deny", "decision": "refuse", "rule": "org", "reasons": ["rule: org"]}


@pytest.mark.parametrize(
    "firewall",
    [None, {"policy": "main", "version": None, "rules": []}],
    ids=["none", "unpublished"],
)
def test_with_nothing_published_the_organisation_has_no_gate_and_nothing_is_evaluated(
    firewall: Any,
) -> None:
    from stalwart_agents.door_firewall import PublishedFirewall

    session = Session(Bundle(firewall))
    assert PublishedFirewall(session).evaluate(CALL) is None  # type: ignore[arg-type]
    assert session.evaluated == []


def test_a_published_version_decides_through_the_sessions_evaluate() -> None:
    from stalwart_agents.door_firewall import PublishedFirewall

    session = Session(Bundle({"policy": "main", "version": 3, "rules": []}))
    answer = PublishedFirewall(session).evaluate(CALL, destination="https://x.example/")  # type: ignore[arg-type]
    assert (answer.decision, answer.rule) == ("refuse", "org")
    assert session.evaluated == [
        ("send", CALL["arguments"], {"stage": "egress", "destination": "https://x.example/"})
    ]


def test_a_bundle_that_cannot_answer_fails_closed() -> None:
    from stalwart_agents.door_firewall import PublishedFirewall

    session = Session(SelectorUnavailableError("the bundle is older than 60 s"))
    with pytest.raises(SelectorUnavailableError, match="older"):
        PublishedFirewall(session).evaluate(CALL)  # type: ignore[arg-type]
    assert session.evaluated == []
