"""A plan: what the router read in a turn and where the turn goes -- a record, not a string.

Kinds, exactly the spec's table of what the router reads:

    tool         a tool step that resolves: `call` is written from the person's words (each value's
                 origin `typed`), and goes straight to the guarded tool step; no model call
    chain        a question whose missing values the catalogue's listing tools produce: `steps` are
                 the reads of this round; the caller runs them (through the tool check), then plans
                 the same turn again with their results, and the plan they make replaces the
                 question; `call` is the call being completed
    ask          a fixed `question` naming what is `missing` (or the tools to choose from, in
                 `options`); the model is not called
    confirm      a write put to the person: `call` is the call their yes would make
    declined     a refusal naming the `rule` (`reasons` say why); the model is never visited
    calculation  `steps` are the reads it draws on (none left once they ran); then the agent's
                 model writes a function and the sandbox runs it (with no sandbox, the router
                 declines instead, its reason starting `compute off:`)
    unread       nothing read the turn; `action` says where it goes: `say_again` (the one request
                 to say it again), then what `on_unread` says -- `refuse`, `model` (the turn goes
                 to the agent's model and every call it asks for is checked), `ask` (the person is
                 asked whether the model may have it) or `answer` (`answer` holds the grounded
                 answer from the organisation's documents; without one, `refuse`; with a model
                 composer, `answer` holds the grounded `passages` the model writes from)

`why` is a short trace of what matched, for people; `said` maps each argument to the text the
person typed for it. `to_dict()` is the shape `POST /v1/plan` and `stalwart plan` print.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

TOOL = "tool"
CHAIN = "chain"
ASK = "ask"
CONFIRM = "confirm"
DECLINED = "declined"
CALCULATION = "calculation"
UNREAD = "unread"
KINDS = (TOOL, CHAIN, ASK, CONFIRM, DECLINED, CALCULATION, UNREAD)

SAY_AGAIN = "say_again"
REFUSE = "refuse"
MODEL = "model"
ASK_MODEL = "ask"
ANSWER = "answer"
ACTIONS = (SAY_AGAIN, REFUSE, MODEL, ASK_MODEL, ANSWER)
ON_UNREAD = (REFUSE, MODEL, ASK_MODEL, ANSWER)


@dataclass(frozen=True)
class Plan:
    """Where one turn goes (see the module docstring)."""

    kind: str
    language: str
    turn: str
    call: Mapping[str, Any] | None = None
    steps: tuple[Mapping[str, Any], ...] = ()
    missing: tuple[str, ...] = ()
    options: tuple[Any, ...] = ()
    question: str | None = None
    reasons: tuple[str, ...] = ()
    rule: str | None = None
    action: str | None = None
    answer: Mapping[str, Any] | None = None
    said: Mapping[str, str] = field(default_factory=dict)
    detail: Mapping[str, Any] = field(default_factory=dict)
    why: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"a plan's kind is one of {', '.join(KINDS)}, not `{self.kind}`")
        if self.action is not None and self.action not in ACTIONS:
            raise ValueError(f"an unread plan's action cannot be `{self.action}`")

    @property
    def tool(self) -> str | None:
        return self.call.get("tool") if self.call else None

    @property
    def needs_model(self) -> bool:
        """Whether carrying this plan out calls the agent's model."""
        if self.kind == CALCULATION:
            return True
        if self.kind == UNREAD and self.action == ANSWER and self.answer is not None:
            return self.answer.get("composer", "extract") != "extract"
        return self.kind == UNREAD and self.action == MODEL

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "language": self.language,
            "turn": self.turn,
            "call": copy.deepcopy(dict(self.call)) if self.call is not None else None,
            "steps": [copy.deepcopy(dict(step)) for step in self.steps],
            "missing": list(self.missing),
            "options": list(self.options),
            "question": self.question,
            "reasons": list(self.reasons),
            "rule": self.rule,
            "action": self.action,
            "answer": dict(self.answer) if self.answer is not None else None,
            "said": dict(self.said),
            "detail": copy.deepcopy(dict(self.detail)),
            "why": list(self.why),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Plan:
        """A plan back from `to_dict()` (as a conversation's history carries it)."""
        return cls(
            kind=data["kind"],
            language=data.get("language", "en"),
            turn=data.get("turn", ""),
            call=data.get("call"),
            steps=tuple(data.get("steps") or ()),
            missing=tuple(data.get("missing") or ()),
            options=tuple(data.get("options") or ()),
            question=data.get("question"),
            reasons=tuple(data.get("reasons") or ()),
            rule=data.get("rule"),
            action=data.get("action"),
            answer=data.get("answer"),
            said=dict(data.get("said") or {}),
            detail=dict(data.get("detail") or {}),
            why=tuple(data.get("why") or ()),
        )
