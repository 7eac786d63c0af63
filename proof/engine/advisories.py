"""Published advisories on rails: the ones the engine ships, and the form a caller adds more in.

An advisory names rails -- Colang flows or imports -- by a pattern on their name, says what is
wrong and what to use instead. QG022 reports every flow or import of a rulebook an advisory
names. The shipped list is Stalwart's own advisories (ids `STW-ADV-...`); pass others to
`verify_agent_file(..., advisories=[...])` in the same shape::

    {"id": "STW-ADV-0001", "rails": ["self check input", ...], "imports": ["guardrails"],
     "summary": "...", "instead": "..."}

Names are compared in lower case with runs of spaces and underscores as one space.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import Problem


@dataclass(frozen=True)
class Advisory:
    id: str
    rails: tuple[str, ...]
    imports: tuple[str, ...]
    summary: str
    instead: str


SHIPPED: tuple[Advisory, ...] = (
    Advisory(
        id="STW-ADV-0001",
        rails=(
            "self check input",
            "self check output",
            "self check facts",
            "self check hallucination",
            "check jailbreak",
            "jailbreak detection heuristics",
        ),
        imports=(),
        summary="a rail that asks a model whether to let a turn or a reply through can be argued "
        "past by the text it judges, so it must not be what stands between a turn and a tool",
        instead="guard the tool with a condition on facts or results (`if $order_paid`), which "
        "the gate decides without a model",
    ),
    Advisory(
        id="STW-ADV-0002",
        rails=("allow input", "allow output", "allow all"),
        imports=(),
        summary="a rail that answers every turn with an allow leaves the decision to whatever "
        "runs after it",
        instead="remove it, or replace it with a condition that says when the turn may go on",
    ),
)


def _norm(name: str) -> str:
    return re.sub(r"[\s_]+", " ", name.strip().lower())


#: The fields of an advisory (agent.yaml's `advisories:` items, `verify_agent_file(advisories=)`).
ADVISORY_KEYS = frozenset({"id", "rails", "imports", "summary", "instead"})


def read_advisories(raw: Iterable[Any]) -> tuple[list[Advisory], list[Problem]]:
    """Read advisories given by a caller; every problem names its index."""
    found: list[Advisory] = []
    problems: list[Problem] = []
    for index, item in enumerate(raw):
        path = f"advisories[{index}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            problems.append(Problem(path, "must be an object with an `id`"))
            continue
        rails = item.get("rails", [])
        imports = item.get("imports", [])
        if not isinstance(rails, list) or not isinstance(imports, list):
            problems.append(Problem(path, "`rails` and `imports` must be lists of names"))
            continue
        found.append(
            Advisory(
                item["id"],
                tuple(str(r) for r in rails),
                tuple(str(i) for i in imports),
                str(item.get("summary", "")),
                str(item.get("instead", "")),
            )
        )
    return found, problems


def matching(
    record: Mapping[str, Any], advisories: Sequence[Advisory]
) -> list[tuple[Advisory, str, int]]:
    """(advisory, rail or import, line) for each flow or import of the record an advisory names."""
    out: list[tuple[Advisory, str, int]] = []
    for flow in record.get("flows", []):
        name = _norm(str(flow.get("name", "")))
        for advisory in advisories:
            if name in {_norm(r) for r in advisory.rails}:
                out.append((advisory, str(flow.get("name")), int(flow.get("line") or 0)))
    for item in record.get("imports", []):
        path = _norm(str(item.get("path", "")))
        for advisory in advisories:
            if path in {_norm(i) for i in advisory.imports}:
                out.append((advisory, str(item.get("path")), int(item.get("line") or 0)))
    return out
