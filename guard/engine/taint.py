"""Origins of argument values and the trust of outside content (taint).

Origins: each argument of a call says where its value came from: `typed` (the person typed it),
`tool` (a tool returned it), or `model` (the model wrote it). An argument with no origin, or any
other word, counts as `model`: nobody vouched for it.

Labels: content from outside (a web page, an e-mail) carries a label (`web`, `email`, ...). A tool
that `reads_outside` marks the session with its labels once it has run, and a call may carry labels
of its own. Each label has a trust level, lowest first: `outside`, `internal`, `trusted`. A label
the settings do not rank is `outside`. A write requires `trusted` unless its `requires_trust` says
less, so by default any label taints a write; a label ranked below what the tool requires makes the
call tainted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

ORIGINS = ("typed", "tool", "model")
TRUSTED_ORIGINS = frozenset({"typed", "tool"})
TRUST_LEVELS = ("outside", "internal", "trusted")
_RANK = {level: rank for rank, level in enumerate(TRUST_LEVELS)}
DEFAULT_REQUIRED_TRUST = "trusted"


def unvouched_arguments(arguments: Iterable[str], origins: Mapping[str, str]) -> list[str]:
    """The arguments whose value nobody typed and no tool returned, sorted by name."""
    return sorted(name for name in arguments if origins.get(name) not in TRUSTED_ORIGINS)


def tainting_labels(
    labels: Iterable[str], *, required: str | None, label_trust: Mapping[str, str]
) -> list[str]:
    """The labels less trusted than a tool requires, sorted."""
    needed = _RANK[required or DEFAULT_REQUIRED_TRUST]
    return sorted({label for label in labels if _RANK[label_trust.get(label, "outside")] < needed})
