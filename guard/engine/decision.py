"""The answer of the tool check: a record, not a boolean.

`decision` is `allow`, `confirm` or `refuse`; `reasons` are the reason codes (`unknown_tool`,
`argument_origin: amount`, ...); `detail` says what was seen (`step`, `check`, a JSON `pointer`, the
rulebook's `flow`, ...); `rule` names the rule that decided where there is one (`after get_order`,
the rulebook flow, or the check's setting name), else None. `to_dict()` is the DESIGN.md shape.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ALLOW = "allow"
CONFIRM = "confirm"
REFUSE = "refuse"
ANSWERS = (ALLOW, CONFIRM, REFUSE)
STRICTNESS = {ALLOW: 0, CONFIRM: 1, REFUSE: 2}


@dataclass(frozen=True)
class Decision:
    """What the tool check answers for one call."""

    decision: str
    reasons: tuple[str, ...] = ()
    detail: Mapping[str, Any] = field(default_factory=dict)
    rule: str | None = None

    def __post_init__(self) -> None:
        if self.decision not in ANSWERS:
            raise ValueError(f"a decision is allow, confirm or refuse, not `{self.decision}`")
        object.__setattr__(self, "reasons", tuple(self.reasons))

    @property
    def allowed(self) -> bool:
        return self.decision == ALLOW

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "reasons": list(self.reasons),
            "detail": copy.deepcopy(dict(self.detail)),
            "rule": self.rule,
        }


def stricter(first: Decision, second: Decision) -> bool:
    """Say whether `second` is stricter than `first` (refuse > confirm > allow)."""
    return STRICTNESS[second.decision] > STRICTNESS[first.decision]
