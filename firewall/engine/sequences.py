"""The sequence matcher: ordered multi-step chains of calls within a session, one event at a time.

A sequence is a list of steps, each a tool glob with a `min_count` (default 1) and an optional
`egress: true` (the event must be an egress call: stage `egress`, or a call with a
destination), and a `window_seconds` (0 means no limit). A chain matches when, in the order the
events arrive, `min_count` events matching step 1 are followed by `min_count` events matching
step 2, and so on; other events may interleave, and each event counts once in a chain. The
whole chain must fit in the window: its last event at most `window_seconds` after its first.

Semantics, exactly (the brute-force reference in the tests implements this definition):

- a match is reported at the first event that completes some chain, and lists the chain's
  event ids step by step;
- after a match, progress starts afresh: the events up to and including the completing one are
  not reused by a later match;
- time is the events' `ts` (seconds, given by the caller); a `ts` earlier than the last one
  seen in the session is taken as that last one (time does not run backwards).

How it works. With T the sum of the `min_count`s, partial progress is a point (step k, j
events of it). Of all partial chains at one point, the one that started latest dominates (it
has the most window left), and a chain that takes a matching event dominates the same chain
skipping it; so it is enough to keep, for each point, the latest-starting chain. Those chains
have a shape that keeps the state small: the events a chain holds for its current step are
always the most recent matching events of that step, so each step keeps one buffer of its last
`min_count - 1` matching events, and a chain ("run") keeps its count, its start and the ids of
the steps it has completed. For step 1 the runs are implicit in its buffer. Events are applied
to the steps from the last to the first, so the chain a step completes on an event cannot use
that same event for the next step.

The state is plain JSON (it is kept in Redis between events); its size depends on the steps
only: at most `sum(c_k - 1) + sum_k c_k * sum_{i<k} c_i` ids (T <= 200 keeps it small), and
the work per event is bounded by the same, never by the session's history. A state that does
not belong to these steps (the rule was edited) or cannot be read starts afresh.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from firewall.engine.errors import SequenceError
from firewall.engine.globs import compile_glob, glob_problem
from firewall.engine.values import is_number
from firewall.engine.vocabulary import SEQUENCE_ACTIONS, SEQUENCE_FIELDS, STEP_FIELDS

MAX_STEPS = 16
MAX_TOTAL_MIN_COUNT = 200
MAX_WINDOW_SECONDS = 366 * 24 * 3600

_STATE_VERSION = 1


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def sequence_problems(sequence: object) -> list[tuple[str, str]]:
    """Every problem of a `sequence` object, as (field inside it, message) pairs."""
    if not isinstance(sequence, dict):
        return [("", "must be an object with `steps` and `window_seconds`")]
    problems: list[tuple[str, str]] = []
    for key in sequence:
        if key not in SEQUENCE_FIELDS:
            problems.append((str(key), "unknown field"))
    window = sequence.get("window_seconds", 0)
    if not is_number(window) or (isinstance(window, float) and not math.isfinite(window)):
        problems.append(("window_seconds", "must be a number of seconds (0: no limit)"))
    elif window < 0:
        problems.append(("window_seconds", "must not be negative (0: no limit)"))
    elif window > MAX_WINDOW_SECONDS:
        problems.append(("window_seconds", f"must be at most {MAX_WINDOW_SECONDS} seconds"))
    on_match = sequence.get("on_match", [])
    if not isinstance(on_match, list):
        problems.append(("on_match", f"must be a list of actions: {', '.join(SEQUENCE_ACTIONS)}"))
    else:
        for index, action in enumerate(on_match):
            if action not in SEQUENCE_ACTIONS:
                problems.append(
                    (f"on_match[{index}]", f"must be one of {', '.join(SEQUENCE_ACTIONS)}")
                )
        if len(set(map(str, on_match))) != len(on_match):
            problems.append(("on_match", "names an action twice"))
    steps = sequence.get("steps")
    if "steps" not in sequence:
        problems.append(("steps", "is required"))
        return problems
    if not isinstance(steps, list):
        problems.append(("steps", "must be a list of steps"))
        return problems
    if not steps:
        problems.append(("steps", "must hold at least one step"))
        return problems
    if len(steps) > MAX_STEPS:
        problems.append(("steps", f"must hold at most {MAX_STEPS} steps"))
    total = 0
    for index, step in enumerate(steps):
        where = f"steps[{index}]"
        if not isinstance(step, dict):
            problems.append((where, "must be an object with `tool_glob`"))
            continue
        for key in step:
            if key not in STEP_FIELDS:
                problems.append((f"{where}.{key}", "unknown field"))
        if "tool_glob" not in step:
            problems.append((f"{where}.tool_glob", "is required"))
        else:
            problem = glob_problem(step["tool_glob"], allow_empty=False)
            if problem:
                problems.append((f"{where}.tool_glob", f"is not a glob: {problem}"))
        count = step.get("min_count", 1)
        if not _is_int(count):
            problems.append((f"{where}.min_count", "must be an integer"))
        elif count < 1:
            problems.append((f"{where}.min_count", "must be at least 1"))
        else:
            total += count
        if not isinstance(step.get("egress", False), bool):
            problems.append((f"{where}.egress", "must be `true` or `false`"))
    if total > MAX_TOTAL_MIN_COUNT:
        problems.append(
            ("steps", f"the `min_count`s add up to {total}, more than {MAX_TOTAL_MIN_COUNT}")
        )
    return problems


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a sequence, ready to test events."""

    tool_glob: str
    min_count: int
    egress: bool
    matches_tool: Callable[[str], bool]

    def matches(self, tool: str, is_egress: bool) -> bool:
        return (is_egress or not self.egress) and self.matches_tool(tool)


def parse_sequence(steps: object, window_seconds: object) -> tuple[tuple[Step, ...], float]:
    """The steps and window, checked; raise `SequenceError` with every problem otherwise."""
    problems = sequence_problems({"steps": steps, "window_seconds": window_seconds})
    if problems:
        raise SequenceError(
            "; ".join(f"{field}: {message}" if field else message for field, message in problems)
        )
    assert isinstance(steps, list) and is_number(window_seconds)
    parsed = tuple(
        Step(
            tool_glob=step["tool_glob"],
            min_count=step.get("min_count", 1),
            egress=step.get("egress", False),
            matches_tool=compile_glob(step["tool_glob"]),
        )
        for step in steps
    )
    return parsed, float(window_seconds)  # type: ignore[arg-type]


def _signature(steps: tuple[Step, ...], window: float) -> str:
    text = json.dumps(
        [[s.tool_glob, s.min_count, s.egress] for s in steps] + [window], separators=(",", ":")
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _read_event(event: object) -> tuple[int | str, str, float, bool]:
    if not isinstance(event, dict):
        raise SequenceError("the event is not a JSON object")
    event_id = event.get("id")
    if not (_is_int(event_id) or isinstance(event_id, str)):
        raise SequenceError("event `id` must be a string or an integer")
    tool = event.get("tool")
    if not isinstance(tool, str) or not tool:
        raise SequenceError("event `tool` must be a non-empty string")
    ts = event.get("ts")
    if not is_number(ts) or not math.isfinite(ts):
        raise SequenceError("event `ts` must be a finite number of seconds")
    destination = event.get("destination")
    is_egress = event.get("stage") == "egress" or (
        isinstance(destination, str) and bool(destination)
    )
    return event_id, tool, float(ts), is_egress


def _fresh(signature: str, count: int, last_ts: float | None) -> dict[str, Any]:
    return {
        "v": _STATE_VERSION,
        "sig": signature,
        "last_ts": last_ts,
        "buffers": [[] for _ in range(count)],
        "runs": [[] for _ in range(count)],
    }


def _is_id(value: object) -> bool:
    return _is_int(value) or isinstance(value, str)


def _readable(state: object, signature: str, steps: tuple[Step, ...]) -> bool:
    """Whether a stored state belongs to these steps and has the shape this module writes."""
    if not isinstance(state, dict) or state.get("v") != _STATE_VERSION:
        return False
    if state.get("sig") != signature:
        return False
    last_ts = state.get("last_ts")
    if last_ts is not None and not is_number(last_ts):
        return False
    buffers, runs = state.get("buffers"), state.get("runs")
    if not isinstance(buffers, list) or not isinstance(runs, list):
        return False
    if len(buffers) != len(steps) or len(runs) != len(steps):
        return False
    for index, step in enumerate(steps):
        buffer = buffers[index]
        if not isinstance(buffer, list) or len(buffer) > max(step.min_count - 1, 0):
            return False
        for entry in buffer:
            if not (isinstance(entry, list) and len(entry) == 2 and _is_id(entry[0])):
                return False
            if not is_number(entry[1]):
                return False
        group = runs[index]
        if not isinstance(group, list) or (index == 0 and group) or len(group) > step.min_count:
            return False
        for run in group:
            if not isinstance(run, dict) or set(run) != {"n", "start", "chain"}:
                return False
            if not _is_int(run["n"]) or not 0 <= run["n"] < step.min_count:
                return False
            if not is_number(run["start"]) or not isinstance(run["chain"], list):
                return False
            chain = run["chain"]
            if len(chain) != index:
                return False
            for position, ids in enumerate(chain):
                if not isinstance(ids, list) or len(ids) != steps[position].min_count:
                    return False
                if not all(_is_id(i) for i in ids):
                    return False
    return True


def _copy(state: dict[str, Any]) -> dict[str, Any]:
    return {
        "v": state["v"],
        "sig": state["sig"],
        "last_ts": state["last_ts"],
        "buffers": [[list(entry) for entry in buffer] for buffer in state["buffers"]],
        "runs": [
            [
                {"n": r["n"], "start": r["start"], "chain": [list(ids) for ids in r["chain"]]}
                for r in g
            ]
            for g in state["runs"]
        ],
    }


class CompiledSequence:
    """A sequence rule's steps and window, parsed once, to advance many events cheaply.

    `advance(..., trusted=True)` skips re-reading the shape of a state this module returned
    (only its signature is compared), and `in_place=True` updates the given state instead of
    copying it: both are for a caller that keeps the states it got back, such as a worker
    draining a batch. A state read from storage should be advanced once untrusted first.
    """

    def __init__(self, steps: object, window_seconds: object) -> None:
        self.steps, self.window = parse_sequence(steps, window_seconds)
        self.signature = _signature(self.steps, self.window)

    def advance(
        self,
        state: dict[str, Any] | None,
        rule_id: Any,
        event: object,
        *,
        trusted: bool = False,
        in_place: bool = False,
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Apply one event; see the module function `advance`."""
        parsed, window, signature = self.steps, self.window, self.signature
        event_id, tool, ts, is_egress = _read_event(event)
        count = len(parsed)
        if state is None:
            current = _fresh(signature, count, None)
        elif trusted and state.get("sig") == signature:
            current = state if in_place else _copy(state)
        elif _readable(state, signature, parsed):
            current = state if in_place else _copy(state)
        else:
            current = _fresh(signature, count, None)
        last_ts = current["last_ts"]
        if last_ts is not None and ts < last_ts:
            ts = float(last_ts)
        current["last_ts"] = ts
        buffers: list[list[list[Any]]] = current["buffers"]
        runs: list[list[dict[str, Any]]] = current["runs"]
        if window > 0:
            cutoff = ts - window
            buffers[0] = [entry for entry in buffers[0] if entry[1] >= cutoff]
            for index in range(1, count):
                runs[index] = [run for run in runs[index] if run["start"] >= cutoff]
        completed: tuple[float, list[list[Any]]] | None = None
        for index in range(count - 1, -1, -1):
            step = parsed[index]
            if not step.matches(tool, is_egress):
                continue
            need = step.min_count
            buffer = buffers[index]
            recent = [entry[0] for entry in buffer[len(buffer) - (need - 1) :]] if need > 1 else []
            rolled: tuple[float, list[list[Any]]] | None = None
            if index == 0:
                if need == 1:
                    rolled = (ts, [[event_id]])
                elif len(buffer) >= need - 1:
                    rolled = (float(buffer[-(need - 1)][1]), [[*recent, event_id]])
            else:
                kept = []
                for run in runs[index]:
                    if run["n"] + 1 == need:
                        rolled = (float(run["start"]), [*run["chain"], [*recent, event_id]])
                    else:
                        run["n"] += 1
                        kept.append(run)
                runs[index] = kept
            if need > 1:
                buffer.append([event_id, ts])
                del buffer[: max(len(buffer) - (need - 1), 0)]
            if rolled is None:
                continue
            if index == count - 1:
                completed = rolled
                break
            start, chain = rolled
            following = runs[index + 1]
            waiting = [run for run in following if run["n"] == 0]
            if waiting and waiting[0]["start"] > start:
                continue
            following[:] = [run for run in following if run["n"] != 0]
            following.append({"n": 0, "start": start, "chain": chain})
        if completed is None:
            return current, None
        start, chain = completed
        match = {"rule_id": rule_id, "steps": chain, "started_at": start, "ended_at": ts}
        return _fresh(signature, count, ts), match


def advance(
    state: dict[str, Any] | None,
    rule_id: Any,
    steps: object,
    window_seconds: object,
    event: object,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Apply one event of a session to a sequence rule's state.

    `state` is what the previous call returned for this session and rule (None at first);
    `event` is `{"id", "tool", "ts", "stage"?, "destination"?}`. Returns the new state (the
    given one is not modified) and, when the event completes a chain, the match:
    `{"rule_id", "steps": [[ids of step 1], [ids of step 2], ...], "started_at", "ended_at"}`.
    Raises `SequenceError` for malformed steps or events.
    """
    return CompiledSequence(steps, window_seconds).advance(state, rule_id, event)


def match_events(
    events: list[Any], rule_id: Any, steps: object, window_seconds: object
) -> list[dict[str, Any]]:
    """Every match over a list of events of one session, feeding them to `advance` in order."""
    state: dict[str, Any] | None = None
    matches = []
    for event in events:
        state, match = advance(state, rule_id, steps, window_seconds, event)
        if match is not None:
            matches.append(match)
    return matches
