"""The place for the checks of what was said: post-checks that can only make an answer stricter.

S1, S2, the confirmation reading and `grounded`'s reading of the person's turns run after the 13
steps as `PostCheck`s given to `ToolCheck(post_checks=[...])`. Whatever a post-check answers goes
through `stricter_only`, so a refusal stays a refusal and a confirmation never becomes an allow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .decision import CONFIRM, REFUSE, STRICTNESS, Decision

PostCheckFunction = Callable[..., "Decision | None"]


@dataclass(frozen=True)
class PostCheck:
    """A check of what was said, run after the 13 steps; it can only make the answer stricter.

    `run(call, decision, *, session, context)` gets the read `Call`, the answer so far, the verified
    `History` and the context, and returns a stricter `Decision`, or None for no opinion. `name` is
    its registry name (`s1_veto`, `s2_veto`, `confirm_read`, `grounded`): it runs only where that
    check is switched on.
    """

    name: str
    run: PostCheckFunction


def stricter_only(current: Decision, proposed: Any, name: str) -> Decision:
    """Apply a post-check's answer: refuse stays refuse, confirm never becomes allow.

    A looser answer is ignored; a stricter one replaces the current answer; a second `confirm` adds
    its reasons. Anything that is not a `Decision` refuses (a broken post-check fails closed).
    """
    if proposed is None or current.decision == REFUSE:
        return current
    if not isinstance(proposed, Decision):
        return Decision(REFUSE, ("post_check_error",), {"check": name}, name)
    if STRICTNESS[proposed.decision] > STRICTNESS[current.decision]:
        return Decision(
            proposed.decision,
            proposed.reasons,
            {**proposed.detail, "check": name},
            proposed.rule or name,
        )
    if proposed.decision == CONFIRM and current.decision == CONFIRM:
        reasons = current.reasons + tuple(r for r in proposed.reasons if r not in current.reasons)
        return Decision(CONFIRM, reasons, current.detail, current.rule)
    return current
