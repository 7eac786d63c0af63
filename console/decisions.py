"""Reading the decision-log records a runtime sends (`POST /v1/decisions`): validated and bounded.

A runtime (`stalwart_agents.spool`) ships the records its sessions wrote (one per decision, one
per call that ran; see `stalwart_agents.runtime.decision_record`). Each record is read here on
its own: a record that cannot be read is refused with the field path of its first problem, and
is still stored, as an `unreadable` event, so that the feed shows the attempt. Nothing here
touches the database; `console.services.decisions_ingest` writes what this reads.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from console.api.parsers import too_deep
from console.redaction import redact

KINDS = ("decision", "execution")
DECISIONS = ("allow", "confirm", "refuse")
#: Every field a record may carry, with whether it must be there.
FIELDS = {
    "id": True,
    "session": True,
    "sequence": True,
    "kind": True,
    "at": True,
    "agent": False,
    "tool": True,
    "decision": True,
    "reasons": False,
    "rule": False,
    "policy_version": False,
    "outcome": False,
    "detail": False,
    # A firewall's decision (a runtime's `evaluate`): its stage and verdict.
    "stage": False,
    "verdict": False,
}
#: The stages a firewall's decision may be made at (an empty one is the tool check's).
STAGES = ("tool_call", "egress", "inbound")
MAX_REASONS = 64
#: A record's time may be at most this far ahead of the console's clock (clocks drift).
AHEAD_SECONDS = 300
#: The earliest time a record may carry (2020-01-01): older means a clock that was never set.
EARLIEST = 1_577_836_800.0
#: Names the ids of records whose own id cannot be read (derived from their content).
UNREADABLE_NAMESPACE = uuid.UUID("7f1d3b9e-52a4-4c61-9d0e-3c2b8f6a1e57")
STORED_TEXT = 2_000


class Unreadable(Exception):
    """A record the console cannot read: the field path of the first problem and what it is."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass
class Reading:
    """One record of a batch, read: the event's fields, or the problem that made it unreadable."""

    index: int
    record_id: uuid.UUID
    event: dict[str, Any] = field(default_factory=dict)
    problem: Unreadable | None = None


def max_batch() -> int:
    return int(settings.STALWART_DECISIONS_MAX_BATCH)


def _depth_problem(value: Any, path: str, limit: int) -> str | None:
    """The path of the first subtree nested deeper than `limit` levels, if any (iteratively)."""
    stack: list[tuple[Any, str, int]] = [(value, path, 1)]
    while stack:
        node, where, depth = stack.pop()
        if isinstance(node, dict | list) and depth > limit:
            return where
        if isinstance(node, dict):
            stack.extend((child, f"{where}.{key}", depth + 1) for key, child in node.items())
        elif isinstance(node, list):
            stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(node))
    return None


def _text(record: dict[str, Any], name: str, path: str, *, most: int, least: int = 0) -> str:
    value = record.get(name, "")
    if value is None and least == 0:
        return ""
    if not isinstance(value, str):
        raise Unreadable(f"{path}.{name}", "must be text")
    if len(value) < least:
        raise Unreadable(f"{path}.{name}", "must not be empty")
    if len(value) > most:
        raise Unreadable(f"{path}.{name}", f"is longer than {most} characters")
    return value


def _read(record: Any, path: str) -> dict[str, Any]:
    """The event's fields for one record, or `Unreadable` naming the first problem's path."""
    if not isinstance(record, dict):
        raise Unreadable(path, "a record is a JSON object")
    for name in record:
        if name not in FIELDS:
            raise Unreadable(f"{path}.{name}", "not a field of a record")
    for name, required in FIELDS.items():
        if required and name not in record:
            raise Unreadable(f"{path}.{name}", "this field is required")
    size = len(json.dumps(record, separators=(",", ":")).encode())
    if size > int(settings.STALWART_DECISIONS_MAX_RECORD_BYTES):
        raise Unreadable(
            path,
            f"is {size} bytes, more than {settings.STALWART_DECISIONS_MAX_RECORD_BYTES}",
        )
    most = int(settings.STALWART_DECISIONS_MAX_DEPTH)
    deep = _depth_problem(record, path, most) if too_deep(record, most) else None
    if deep is not None:
        raise Unreadable(
            deep, f"nests deeper than {settings.STALWART_DECISIONS_MAX_DEPTH} levels in a record"
        )
    session = _text(record, "session", path, most=128, least=1)
    sequence = record["sequence"]
    if not isinstance(sequence, int) or isinstance(sequence, bool) or sequence < 1:
        raise Unreadable(f"{path}.sequence", "must be a whole number from 1")
    kind = record["kind"]
    if kind not in KINDS:
        raise Unreadable(f"{path}.kind", "is `decision` or `execution`")
    at = record["at"]
    if not isinstance(at, int | float) or isinstance(at, bool) or not math.isfinite(at):
        raise Unreadable(f"{path}.at", "must be a time in seconds since 1970")
    if not EARLIEST <= at <= time.time() + AHEAD_SECONDS:
        raise Unreadable(f"{path}.at", "is not a time this console can take (clock not set?)")
    agent = _text(record, "agent", path, most=128)
    tool = _text(record, "tool", path, most=200, least=1)
    decision = record["decision"]
    if decision not in DECISIONS:
        raise Unreadable(f"{path}.decision", "is `allow`, `confirm` or `refuse`")
    reasons = record.get("reasons") or []
    if not isinstance(reasons, list) or len(reasons) > MAX_REASONS:
        raise Unreadable(f"{path}.reasons", f"must be a list of at most {MAX_REASONS} texts")
    for i, reason in enumerate(reasons):
        if not isinstance(reason, str) or len(reason) > 300:
            raise Unreadable(f"{path}.reasons[{i}]", "must be text of at most 300 characters")
    rule = _text(record, "rule", path, most=200)
    version = record.get("policy_version")
    if version is not None and not (
        (isinstance(version, int) and not isinstance(version, bool))
        or (isinstance(version, str) and len(version) <= 64)
    ):
        raise Unreadable(f"{path}.policy_version", "must be a number or text of 64 characters")
    outcome = _text(record, "outcome", path, most=32)
    if kind == "execution" and not outcome:
        raise Unreadable(f"{path}.outcome", "a call that ran has an outcome")
    stage = _text(record, "stage", path, most=32)
    if stage and (kind != "decision" or stage not in STAGES):
        raise Unreadable(f"{path}.stage", f"a decision's stage is one of {', '.join(STAGES)}")
    verdict = _text(record, "verdict", path, most=32)
    if verdict and not stage:
        raise Unreadable(f"{path}.verdict", "only a firewall's decision (with a stage) has one")
    detail = record.get("detail") or {}
    if not isinstance(detail, dict):
        raise Unreadable(f"{path}.detail", "must be a JSON object")
    return {
        "source": "runtime",
        "session": session,
        "agent": agent,
        "tool": tool,
        "stage": (stage or "tool_call") if kind == "decision" else "execute",
        "decision": decision,
        "verdict": verdict or outcome.lower(),
        "reasons": reasons,
        "rule": rule,
        "at": dt.datetime.fromtimestamp(at, tz=dt.UTC),
        "detail": {
            **detail,
            "record": {"kind": kind, "sequence": sequence, "policy_version": version},
        },
        # A call that ran is already in the feed as its decision: only decisions feed the
        # sequence matchers, so that a chain is not counted twice.
        **({} if kind == "decision" else {"match_state": "skipped"}),
    }


def _record_id(record: Any) -> uuid.UUID:
    """The record's own id, or for a record whose id cannot be read one derived from its content
    (so that an unreadable record sent twice is stored once too)."""
    if isinstance(record, dict) and isinstance(record.get("id"), str):
        try:
            return uuid.UUID(record["id"])
        except ValueError:
            pass
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":"), default=str)
    return uuid.uuid5(UNREADABLE_NAMESPACE, canonical)


def read_batch(records: list[Any]) -> list[Reading]:
    """Every record of a batch read (in the batch's order), the unreadable ones with their problem."""
    readings = []
    for index, record in enumerate(records):
        path = f"records[{index}]"
        reading = Reading(index, _record_id(record))
        try:
            if isinstance(record, dict) and isinstance(record.get("id"), str):
                try:
                    uuid.UUID(record["id"])
                except ValueError as exc:
                    raise Unreadable(f"{path}.id", "must be a UUID") from exc
            elif isinstance(record, dict) and "id" in record:
                raise Unreadable(f"{path}.id", "must be a UUID")
            reading.event = _read(record, path)
        except Unreadable as exc:
            reading.problem = exc
            reading.event = unreadable_event(record, exc)
        readings.append(reading)
    return readings


def unreadable_event(record: Any, problem: Unreadable) -> dict[str, Any]:
    """The event that keeps a record the console could not read: refused, `unreadable`, its text
    cut to a bound. The record is redacted before it becomes text (the values of its secret keys
    masked, as in a readable record's detail) and before the text is cut (a credential cut in
    two is no longer recognised); the event's detail is redacted again when it is written."""
    text = json.dumps(redact(record), separators=(",", ":"), default=str)
    given = record if isinstance(record, dict) else {}

    def said(name: str, most: int) -> str:
        value = given.get(name)
        return value[:most] if isinstance(value, str) else ""

    return {
        "source": "runtime",
        "session": said("session", 128),
        "agent": said("agent", 128),
        "tool": said("tool", 200),
        "stage": "tool_call",
        "decision": "refuse",
        "reasons": [f"malformed_record: {problem.field}"],
        "detail": {
            "record_text": text[:STORED_TEXT],
            "truncated": len(text) > STORED_TEXT,
            "field": problem.field,
            "problem": problem.problem,
        },
        "match_state": "unreadable",
        "match_note": f"{problem.field}: {problem.problem}",
    }
