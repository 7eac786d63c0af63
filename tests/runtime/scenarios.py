"""The scenarios every door runs: each example of the guardrail-checks page, with its check alone
and with every check on, and the checks of what was said in their three modes.

A scenario is plain data: the session's settings, the person's turns, the calls that ran (with
their results), the call to decide, and how a person's yes is given (`yes`: the call approved
first), plus what the page says of it (`barred`: the check bars it; `allowed`: it does not).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from guard.engine import REGISTRY

SAID_MODAL = ("s1_veto", "s2_veto", "confirm_read")
#: How the page's examples need a session prepared (the engine's own test does the same).
REFUND = "refund_card"


@dataclass
class Scenario:
    name: str
    check: str
    barred: bool
    call: dict[str, Any]
    settings: dict[str, Any] = field(default_factory=dict)
    checks: list[str] | None = None
    turns: list[str] = field(default_factory=list)
    ran: list[tuple[dict[str, Any], Any]] = field(default_factory=list)
    yes: dict[str, Any] | None = None  # the call a person said yes to before this one
    plan: dict[str, Any] | None = None
    tamper: bool = False
    mode: str | None = None

    @property
    def needs(self) -> frozenset[str]:
        wanted = set()
        if self.yes is not None:
            wanted.add("token")
        if self.plan is not None:
            wanted.add("plan_token")
        if self.tamper:
            wanted.add("tamper")
        if self.mode == "off":
            wanted.add("said_off")
        return frozenset(wanted)


def _prepare(info: Any, example: dict[str, Any], barred: bool) -> dict[str, Any]:
    """The session an example needs, as the page's extra fields say."""
    call = dict(example)
    out: dict[str, Any] = {"ran": [], "turns": list(call.pop("turns", []) or [])}
    if call["tool"] == REFUND and not (info.name == "order" and barred):
        out["ran"].append(
            ({"tool": "get_order", "arguments": {"order_id": "A1"}}, {"order_id": "A1"})
        )
    if call.pop("tampered", False):
        out["ran"].append(
            ({"tool": "get_order", "arguments": {"order_id": "A1"}}, {"order_id": "A1"})
        )
        out["tamper"] = True
    if call.pop("approved", False):
        out["yes"] = dict(call)
    if call.pop("approved_for_other", False):
        out["yes"] = {**call, "arguments": {**call["arguments"], "amount": 20}}
    if "compensation_of" in call:
        out["ran"].append(
            (
                {"tool": REFUND, "arguments": {"order_id": "A1", "amount": 20}},
                {"refund_id": "R1"},
            )
        )
    if info.name == "plan_step":
        out["plan"] = {
            "id": "p1",
            "steps": [{"tool": REFUND, "arguments": {"order_id": "A1", "amount": 20}}],
        }
    if not out["turns"]:
        # Where no turns are given, the host's claim stands: the page's calls are typed.
        call.setdefault("origins", {name: "typed" for name in call.get("arguments", {})})
    out["call"] = call
    return out


def scenarios() -> list[Scenario]:
    found: list[Scenario] = []
    for info in REGISTRY:
        for barred, example in ((False, info.allowed), (True, info.barred)):
            if example is None:
                continue
            modes = ("off", "refuse", "confirm") if info.name in SAID_MODAL else (None,)
            for mode in modes:
                for alone in (True, False):
                    prepared = _prepare(info, example, barred)
                    settings = {"said": {info.name: mode}} if mode else {}
                    label = "barred" if barred else "allowed"
                    scope = "alone" if alone else "all"
                    name = f"{info.name}-{label}-{scope}" + (f"-{mode}" if mode else "")
                    found.append(
                        Scenario(
                            name=name,
                            check=info.name,
                            barred=barred,
                            settings=settings,
                            checks=[info.name] if alone else None,
                            mode=mode,
                            **prepared,
                        )
                    )
    return found
