"""A door's firewall gate: its own policy file and, deciding from the console's bundle, the
organisation's published policy; a call goes on only where both let it.

`Agent.chat` (`chat.firewall_gate`) and the MCP gateway (`gateway.core.Gateway._firewall`) ask
`door_firewall(own, session)` for the firewall they put each call to. It answers as one
`LocalFirewall` does (`evaluate(call, destination=None)` -> a firewall `Decision`), or None where
nothing decides:

- **In this process** (no console, or a console's `RemoteSession`): the door's own file alone, as
  before. A `RemoteSession`'s checks are the console's; its published policy is not put to it
  from the door (the console's own sessions check does not evaluate it either).
- **Deciding from the console's bundle** (a `ConnectedSession`): the organisation's published
  version, through `ConnectedSession.evaluate` (the one place that decides it and records it in
  the decision log, as the console records an evaluation), and the door's file where one is
  named. Where the organisation has no active policy, or an active one with nothing published
  (`bundle.firewall` None, its `version` None), the organisation's gate is absent: the file alone
  decides (with no file, nothing does), and nothing is recorded for it. A bundle that cannot
  answer raises `SelectorUnavailableError`: no call is made.

**Two answers, one.** The organisation's policy judges first (so its feed and sequence rules
see every call put to the firewall), then the file. The stricter verdict wins: `deny` over
`require_approval` over `cap_cost` over `sanitize` over `audit` and `allow`. A refusal of either
ends it. Where one cleans the arguments (`sanitize`), the other judges the cleaned arguments,
and again in turn until neither changes them (at most `MAX_CLEANINGS` changes, else
`SelectorUnavailableError`: arguments that never settle are not guessed at). The answer carries
the arguments as finally cleaned, whatever its verdict (a `require_approval` of one over the
other's `sanitize` asks the person about the cleaned call), and the lower of two `cap_cost` caps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from guard.engine import canonical_json
from stalwart_agents.client import ConnectedSession, SelectorUnavailableError

#: Verdicts from the strictest: the first of two answers in this order wins.
STRICTNESS: tuple[str, ...] = ("deny", "require_approval", "cap_cost", "sanitize", "audit", "allow")

#: The most times the two policies may change the arguments in turn before the call is refused.
MAX_CLEANINGS = 4


class Firewall(Protocol):
    def evaluate(self, call: Mapping[str, Any], *, destination: str | None = None) -> Any: ...


def published(found: Any) -> bool:
    """Whether a bundle carries a published firewall version (else the organisation's gate is
    absent)."""
    firewall = found.firewall
    return isinstance(firewall, Mapping) and firewall.get("version") is not None


def firewall_rule(answer: Any) -> str:
    """What names a firewall answer in reasons: its rule, else its first reason, else verdict."""
    return str(answer.rule or (answer.reasons[0] if answer.reasons else answer.verdict))


def decision_of(result: Mapping[str, Any]) -> Any:
    """`POST /v1/firewall/evaluate`'s answer (`ConnectedSession.evaluate`'s) as a `Decision`."""
    from firewall.engine import VERDICTS, Decision

    verdict = result.get("verdict")
    if verdict not in VERDICTS or result.get("decision") not in ("allow", "confirm", "refuse"):
        raise SelectorUnavailableError("the organisation's firewall cannot answer: no verdict")
    return Decision(
        verdict=str(verdict),
        decision=str(result["decision"]),
        rule=result.get("rule"),
        rule_id=result.get("rule_id"),
        arguments=result.get("arguments"),
        reasons=[str(reason) for reason in result.get("reasons") or ()],
        shadow=[dict(entry) for entry in result.get("shadow") or ()],
        cap_cost_cents=result.get("cap_cost_cents"),
        errors=[str(error) for error in result.get("errors") or ()],
    )


class PublishedFirewall:
    """The organisation's published firewall version, as `session` decides it from its bundle."""

    def __init__(self, session: ConnectedSession) -> None:
        self.session = session

    def evaluate(self, call: Mapping[str, Any], *, destination: str | None = None) -> Any:
        """The published version's `Decision` for `call` (recorded by `session.evaluate`), or
        None where the organisation has nothing published."""
        from stalwart_agents import connected

        session = self.session
        agent = str(call.get("agent") or session.agent)
        found = connected.bundle_for(session.feed, agent, session.agent)
        if not published(found):
            return None
        given: dict[str, Any] = {"stage": "tool_call" if destination is None else "egress"}
        if destination is not None:
            given["destination"] = destination
        if call.get("skill") is not None:
            given["skill"] = call["skill"]
        if agent != session.agent:
            given["agent"] = agent
        result = session.evaluate(str(call.get("tool") or ""), call.get("arguments") or {}, **given)
        return decision_of(result)


def cleaned_arguments(answer: Any, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
    """The arguments a firewall's answer runs the call with instead of `arguments`, or None where
    it runs them as they are; `SelectorUnavailableError` for a `sanitize` that cleaned nothing."""
    cleaned = answer.arguments
    if not isinstance(cleaned, Mapping):
        if answer.verdict == "sanitize":
            raise SelectorUnavailableError("the firewall cannot answer: it cleaned no arguments")
        return None
    if canonical_json(dict(cleaned)) == canonical_json(dict(arguments)):
        return None
    return dict(cleaned)


def combined(answers: list[Any], arguments: Mapping[str, Any]) -> Any:
    """One `Decision` of several that allowed or held a call: the strictest verdict (its rule,
    its reasons first), the arguments as finally cleaned, the lowest cap."""
    from dataclasses import replace

    if len(answers) == 1:
        return answers[0]
    ranked = sorted(answers, key=lambda answer: STRICTNESS.index(answer.verdict))
    first = ranked[0]
    reasons = list(first.reasons)
    for other in ranked[1:]:
        reasons.extend(reason for reason in other.reasons if reason not in reasons)
    caps = [answer.cap_cost_cents for answer in answers if answer.cap_cost_cents is not None]
    return replace(
        first,
        arguments=dict(arguments),
        reasons=reasons,
        cap_cost_cents=min(caps) if caps else None,
        shadow=[entry for answer in ranked for entry in answer.shadow],
        errors=[error for answer in ranked for error in answer.errors],
    )


class BothFirewalls:
    """The organisation's published policy and the door's own file: the stricter answer wins."""

    def __init__(self, organisation: Firewall, own: Firewall | None) -> None:
        self.gates = [gate for gate in (organisation, own) if gate is not None]

    def evaluate(self, call: Mapping[str, Any], *, destination: str | None = None) -> Any:
        arguments = dict(call.get("arguments") or {})
        answers: dict[int, Any] = {}
        judged: set[int] = set()  # the gates that judged the arguments as they are now
        cleanings = 0
        while len(judged) < len(self.gates):
            for index, gate in enumerate(self.gates):
                if index in judged:
                    continue
                answer = gate.evaluate({**call, "arguments": arguments}, destination=destination)
                judged.add(index)
                if answer is None:
                    answers.pop(index, None)
                    continue
                if answer.decision == "refuse":
                    return answer
                answers[index] = answer
                cleaned = cleaned_arguments(answer, arguments)
                if cleaned is not None:
                    cleanings += 1
                    if cleanings > MAX_CLEANINGS:
                        raise SelectorUnavailableError(
                            "the firewall cannot answer: the policies clean the arguments in "
                            "turn without end"
                        )
                    arguments, judged = cleaned, {index}
        if not answers:
            return None
        return combined([answers[index] for index in sorted(answers)], arguments)


class Heard:
    """A door's own firewall file that keeps its last answer (None before it is asked, or where
    it said nothing), so the door reports what its own file decided: the organisation's answer
    is recorded by `ConnectedSession.evaluate`, and reported again it would reach the feed (and
    its sequence rules) twice. One per call: the answer is the call's."""

    def __init__(self, gate: Firewall) -> None:
        self.gate = gate
        self.answer: Any = None

    def evaluate(self, call: Mapping[str, Any], *, destination: str | None = None) -> Any:
        self.answer = self.gate.evaluate(call, destination=destination)
        return self.answer


def door_firewall(own: Firewall | None, session: Any) -> Firewall | None:
    """The firewall a door puts each call to: `own` (the file the door names, or None), and where
    `session` decides from the console's bundle, the organisation's published policy too."""
    if isinstance(session, ConnectedSession):
        return BothFirewalls(PublishedFirewall(session), own)
    return own
