"""The decision record both evaluators return, and how a verdict becomes one.

Reasons are short codes with a detail after a colon:

- `rule: <name>`: the rule that decided;
- `default_verdict: <verdict>`: no rule matched and the policy's default answered;
- `sanitize_escalated: inbound`: a `sanitize` verdict met the `inbound` stage, where there are
  no call-time arguments to clean, and became a block (`deny`);
- `redacted: <preset>` (or `redacted: custom`): a redaction that changed the arguments;
- `sanitize_failed: <why>`: the arguments could not be cleaned, so the call is refused;
- `malformed_call: <why>`: the call could not be read, so it is refused;
- `invalid_default_verdict`: a stored policy's default is unusable, so the call is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from firewall.engine.sanitize import SanitizeFailed, Sanitizer
from firewall.engine.vocabulary import DECISION_OF_VERDICT


@dataclass(slots=True)
class Decision:
    """What the firewall answers for one call."""

    verdict: str
    decision: str
    rule: str | None = None
    rule_id: int | str | None = None
    arguments: Any = None
    reasons: list[str] = field(default_factory=list)
    shadow: list[dict[str, Any]] = field(default_factory=list)
    cap_cost_cents: int | None = None
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The decision as the API, the CLI and the audit rows write it."""
        return {
            "verdict": self.verdict,
            "decision": self.decision,
            "rule": self.rule,
            "rule_id": self.rule_id,
            "arguments": self.arguments,
            "reasons": list(self.reasons),
            "shadow": [dict(entry) for entry in self.shadow],
            "cap_cost_cents": self.cap_cost_cents,
            "errors": list(self.errors),
        }


def effective_verdict(verdict: str, stage: str) -> str:
    """The verdict after stage escalation: `sanitize` on `inbound` blocks."""
    if verdict == "sanitize" and stage == "inbound":
        return "deny"
    return verdict


def refused(reason: str, arguments: Any = None, errors: list[str] | None = None) -> Decision:
    """A refusal that no rule made: a malformed call, a broken default or a failed redaction."""
    return Decision(
        verdict="deny",
        decision="refuse",
        arguments=arguments,
        reasons=[reason],
        errors=list(errors or []),
    )


def from_rule(
    *,
    verdict: str,
    name: str,
    rule_id: int | str | None,
    stage: str,
    arguments: Any,
    sanitizer: Sanitizer | None,
    cap_cost_cents: int | None,
    shadow: list[dict[str, Any]],
    errors: list[str],
) -> Decision:
    """The decision of the rule that fired."""
    reasons = [f"rule: {name}"]
    final = effective_verdict(verdict, stage)
    if final != verdict:
        reasons.append(f"sanitize_escalated: {stage}")
    elif verdict == "sanitize" and sanitizer is not None:
        try:
            arguments, labels = sanitizer.redact(arguments)
        except SanitizeFailed as exc:
            decision = refused(f"sanitize_failed: {exc}", None, errors)
            decision.rule, decision.rule_id, decision.shadow = name, rule_id, shadow
            decision.reasons.insert(0, reasons[0])
            return decision
        reasons.extend(f"redacted: {label}" for label in labels)
    return Decision(
        verdict=final,
        decision=DECISION_OF_VERDICT[final],
        rule=name,
        rule_id=rule_id,
        arguments=arguments,
        reasons=reasons,
        shadow=shadow,
        cap_cost_cents=cap_cost_cents if final == "cap_cost" else None,
        errors=errors,
    )


def from_default(
    verdict: str, arguments: Any, shadow: list[dict[str, Any]], errors: list[str]
) -> Decision:
    """The decision when no enforcing rule fired."""
    return Decision(
        verdict=verdict,
        decision=DECISION_OF_VERDICT[verdict],
        arguments=arguments,
        reasons=[f"default_verdict: {verdict}"],
        shadow=shadow,
        errors=errors,
    )


def dedupe(errors: list[str]) -> list[str]:
    """Errors without repeats, first occurrence kept."""
    return list(dict.fromkeys(errors)) if len(errors) > 1 else errors
