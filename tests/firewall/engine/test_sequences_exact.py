"""Exact behaviour of the sequence matcher: every validation message and field, the event
errors, the state signature, which stored states are read or started afresh, the trusted and
in-place paths, and the window and `min_count` boundaries of a match."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import pytest

from firewall.engine.errors import SequenceError
from firewall.engine.sequences import (
    MAX_STEPS,
    MAX_WINDOW_SECONDS,
    CompiledSequence,
    advance,
    match_events,
    parse_sequence,
    sequence_problems,
)

from .conftest import ev

ACTIONS = "hold_session, disable_tool, notify"
A2_B = [{"tool_glob": "a", "min_count": 2}, {"tool_glob": "b"}]
A_B = [{"tool_glob": "a"}, {"tool_glob": "b"}]


def sig(steps: list[list[Any]], window: float) -> str:
    text = json.dumps([*steps, window], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fresh(signature: str, count: int, last_ts: float | None) -> dict[str, Any]:
    return {
        "v": 1,
        "sig": signature,
        "last_ts": last_ts,
        "buffers": [[] for _ in range(count)],
        "runs": [[] for _ in range(count)],
    }


def one(step: dict[str, Any]) -> dict[str, Any]:
    return {"steps": [step]}


@pytest.mark.parametrize(
    ("sequence", "problems"),
    [
        ({"steps": [{"tool_glob": "a"}]}, []),
        ({"steps": [{"tool_glob": "a"}], "window_seconds": 1.5}, []),
        ({"steps": [{"tool_glob": "a"}], "window_seconds": MAX_WINDOW_SECONDS}, []),
        (
            {"steps": [{"tool_glob": "a"}], "window_seconds": MAX_WINDOW_SECONDS + 1},
            [("window_seconds", f"must be at most {MAX_WINDOW_SECONDS} seconds")],
        ),
        (
            {"steps": [{"tool_glob": "a"}], "window_seconds": math.inf},
            [("window_seconds", "must be a number of seconds (0: no limit)")],
        ),
        (
            {"steps": [{"tool_glob": "a"}], "window_seconds": math.nan},
            [("window_seconds", "must be a number of seconds (0: no limit)")],
        ),
        (
            {"steps": [{"tool_glob": "a"}], "on_match": "notify"},
            [("on_match", f"must be a list of actions: {ACTIONS}")],
        ),
        (
            {"steps": [{"tool_glob": "a"}], "on_match": ["notify", "bogus"]},
            [("on_match[1]", f"must be one of {ACTIONS}")],
        ),
        ({"steps": [{"tool_glob": "a"}], "on_match": ["hold_session", "disable_tool"]}, []),
        (
            {"steps": [{"tool_glob": "a"}], "on_match": ["notify", "notify"]},
            [("on_match", "names an action twice")],
        ),
        ({"steps": [{"tool_glob": "a"}] * MAX_STEPS}, []),
        (
            {"steps": [{"tool_glob": "a"}] * (MAX_STEPS + 1)},
            [("steps", f"must hold at most {MAX_STEPS} steps")],
        ),
        (
            {"steps": [5, {"tool_glob": ""}]},
            [
                ("steps[0]", "must be an object with `tool_glob`"),
                (
                    "steps[1].tool_glob",
                    "is not a glob: must not be empty (use `*` to match every tool)",
                ),
            ],
        ),
        (
            {
                "steps": [
                    {"tool_glob": "a", "min_count": 199},
                    {"tool_glob": "b"},
                    {"tool_glob": "c"},
                ]
            },
            [("steps", "the `min_count`s add up to 201, more than 200")],
        ),
        (
            {"steps": [{"tool_glob": "a", "min_count": 100}, {"tool_glob": "b", "min_count": 101}]},
            [("steps", "the `min_count`s add up to 201, more than 200")],
        ),
        (
            {"steps": [{"tool_glob": "a", "min_count": 100}, {"tool_glob": "b", "min_count": 100}]},
            [],
        ),
    ],
)
def test_sequence_problems_are_exact(sequence: dict[str, Any], problems: list[Any]) -> None:
    assert sequence_problems(sequence) == problems


@pytest.mark.parametrize(
    ("steps", "window", "message"),
    [
        ("x", 0, "steps: must be a list of steps"),
        (
            [5],
            -1,
            "window_seconds: must not be negative (0: no limit); "
            "steps[0]: must be an object with `tool_glob`",
        ),
    ],
)
def test_parse_sequence_raises_every_problem_joined(steps: Any, window: Any, message: str) -> None:
    with pytest.raises(SequenceError) as caught:
        parse_sequence(steps, window)
    assert str(caught.value) == message


def test_parsed_steps_keep_glob_count_egress_and_the_window_as_float() -> None:
    parsed, window = parse_sequence([{"tool_glob": "a.*"}, {"tool_glob": "b", "egress": True}], 3)
    assert [(s.tool_glob, s.min_count, s.egress) for s in parsed] == [
        ("a.*", 1, False),
        ("b", 1, True),
    ]
    assert parsed[0].egress is False
    assert window == 3.0 and isinstance(window, float)


@pytest.mark.parametrize(
    ("steps", "window", "expected"),
    [
        ([{"tool_glob": "a"}], 0, [["a", 1, False]]),
        ([{"tool_glob": "a", "min_count": 2}, {"tool_glob": "b", "egress": True}], 5, None),
    ],
)
def test_the_signature_hashes_steps_and_window_compactly(
    steps: list[dict[str, Any]], window: float, expected: Any
) -> None:
    rows = expected or [["a", 2, False], ["b", 1, True]]
    compiled = CompiledSequence(steps, window)
    assert compiled.signature == sig(rows, float(window))
    state, _ = compiled.advance(None, "r", ev(1, "zzz", 0))
    assert state == fresh(sig(rows, float(window)), len(steps), 0.0)


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ("e", "the event is not a JSON object"),
        ({"id": None, "tool": "a", "ts": 0}, "event `id` must be a string or an integer"),
        ({"id": 1, "tool": "", "ts": 0}, "event `tool` must be a non-empty string"),
        ({"id": 1, "tool": 5, "ts": 0}, "event `tool` must be a non-empty string"),
        ({"id": 1, "tool": "a", "ts": math.inf}, "event `ts` must be a finite number of seconds"),
    ],
)
def test_a_malformed_event_raises_an_exact_error(event: Any, message: str) -> None:
    with pytest.raises(SequenceError) as caught:
        advance(None, "r", A_B, 0, event)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("extra", "matched"),
    [
        ({"destination": "https://x"}, True),
        ({"stage": "egress"}, True),
        ({"destination": ""}, False),
        ({"destination": 5}, False),
        ({"stage": "input"}, False),
    ],
)
def test_only_a_string_destination_or_the_egress_stage_is_egress(
    extra: dict[str, Any], matched: bool
) -> None:
    _, match = advance(None, "r", [{"tool_glob": "*", "egress": True}], 0, ev(1, "t", 0, **extra))
    assert (match is not None) is matched


def s_a2b() -> str:
    return sig([["a", 2, False], ["b", 1, False]], 0.0)


def good_state() -> dict[str, Any]:
    """The state of A2_B after a@0, a@1: a run waits for `b`, the buffer holds a@1."""
    return {
        "v": 1,
        "sig": s_a2b(),
        "last_ts": 1.0,
        "buffers": [[[2, 1.0]], []],
        "runs": [[], [{"n": 0, "start": 0.0, "chain": [[1, 2]]}]],
    }


def test_good_state_is_what_advance_builds() -> None:
    state = None
    for event in (ev(1, "a", 0), ev(2, "a", 1)):
        state, match = advance(state, "r", A2_B, 0, event)
        assert match is None
    assert state == good_state()


def corrupt(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    state = good_state()
    target: Any = state
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return state


@pytest.mark.parametrize(
    "state",
    [
        corrupt(("v",), 2),
        corrupt(("sig",), "0" * 16),
        corrupt(("last_ts",), "x"),
        corrupt(("buffers",), "xy"),
        corrupt(("runs",), None),
        corrupt(("runs",), [[], [], []]),
        corrupt(("buffers",), [[], [], []]),
        corrupt(("buffers", 0), None),
        corrupt(("buffers", 0), [[1, 0.0], [2, 1.0]]),
        corrupt(("buffers", 0), [[1, 0.0, 5]]),
        corrupt(("buffers", 0), [[None, 0.0]]),
        corrupt(("buffers", 0), [["x", "y"]]),
        corrupt(("buffers", 0), [5]),
        corrupt(("runs", 0), [{"n": 0, "start": 0.0, "chain": []}]),
        corrupt(("runs", 1), None),
        corrupt(("runs", 1), [{"n": 0, "start": 0.0, "chain": []}, {}]),
        corrupt(("runs", 1, 0, "x"), 1),
        corrupt(("runs", 1, 0), [1]),
        corrupt(("runs", 1, 0, "n"), 5),
        corrupt(("runs", 1, 0, "n"), 1),
        corrupt(("runs", 1, 0, "n"), "0"),
        corrupt(("runs", 1, 0, "start"), "x"),
        corrupt(("runs", 1, 0, "chain"), "x"),
        corrupt(("runs", 1, 0, "chain"), []),
        corrupt(("runs", 1, 0, "chain"), [[1]]),
        corrupt(("runs", 1, 0, "chain"), [[1, 2, 3]]),
        corrupt(("runs", 1, 0, "chain"), ["xy"]),
        corrupt(("runs", 1, 0, "chain"), [[1, None]]),
    ],
)
def test_an_unreadable_state_starts_afresh(state: dict[str, Any]) -> None:
    new, match = advance(state, "r", A2_B, 0, ev(9, "zzz", 5))
    assert match is None
    assert new == fresh(s_a2b(), 2, 5.0)


def test_a_buffer_of_a_single_event_step_must_be_empty() -> None:
    signature = sig([["a", 1, False], ["b", 1, False]], 0.0)
    state = fresh(signature, 2, 0.0)
    state["buffers"][0] = [[1, 0.0]]
    new, _ = advance(state, "r", A_B, 0, ev(9, "zzz", 5))
    assert new == fresh(signature, 2, 5.0)


def test_a_readable_state_is_kept_and_a_missing_last_ts_is_readable() -> None:
    state = corrupt(("last_ts",), None)
    new, match = advance(state, "r", A2_B, 0, ev(9, "zzz", 5))
    assert match is None
    assert new == {**good_state(), "last_ts": 5.0}
    _, match = advance(state, "r", A2_B, 0, ev(3, "b", 6))
    assert match == {"rule_id": "r", "steps": [[1, 2], [3]], "started_at": 0.0, "ended_at": 6.0}


def test_a_trusted_state_is_not_reread_but_its_signature_is_compared() -> None:
    compiled = CompiledSequence(A2_B, 0)
    odd = corrupt(("v",), 99)
    new, _ = compiled.advance(odd, "r", ev(9, "zzz", 5), trusted=True)
    assert new == {**odd, "last_ts": 5.0}
    assert odd == corrupt(("v",), 99)
    assert new is not odd
    new, _ = compiled.advance(odd, "r", ev(9, "zzz", 5))
    assert new == fresh(s_a2b(), 2, 5.0)
    other = corrupt(("sig",), "0" * 16)
    new, _ = compiled.advance(other, "r", ev(9, "zzz", 5), trusted=True)
    assert new == fresh(s_a2b(), 2, 5.0)


@pytest.mark.parametrize("trusted", [True, False])
def test_in_place_updates_the_given_state_and_otherwise_copies(trusted: bool) -> None:
    compiled = CompiledSequence(A2_B, 0)
    state = good_state()
    new, _ = compiled.advance(state, "r", ev(9, "zzz", 5), trusted=trusted, in_place=True)
    assert new is state
    assert state["last_ts"] == 5.0
    state = good_state()
    new, _ = compiled.advance(state, "r", ev(9, "zzz", 5), trusted=trusted)
    assert new is not state
    assert state == good_state()
    assert new == {**good_state(), "last_ts": 5.0}


def test_the_window_prunes_only_later_steps_runs_and_the_first_buffer() -> None:
    compiled = CompiledSequence(A2_B, 10)
    state = {
        "v": 1,
        "sig": compiled.signature,
        "last_ts": 0.0,
        "buffers": [[], []],
        "runs": [[{"n": 0, "start": -100.0, "chain": []}], []],
    }
    new, _ = compiled.advance(state, "r", ev(9, "zzz", 5), trusted=True)
    assert new["runs"] == [[{"n": 0, "start": -100.0, "chain": []}], []]


def test_the_state_after_a_match_is_fresh_with_the_last_time() -> None:
    compiled = CompiledSequence(A_B, 0)
    state, _ = compiled.advance(None, "r", ev(1, "a", 1))
    state, match = compiled.advance(state, "r", ev(2, "b", 4))
    assert match == {"rule_id": "r", "steps": [[1], [2]], "started_at": 1.0, "ended_at": 4.0}
    assert state == fresh(compiled.signature, 2, 4.0)


def test_match_events_passes_the_rule_id() -> None:
    matches = match_events([ev(1, "a", 0), ev(2, "b", 1)], "rule-9", A_B, 0)
    assert [m["rule_id"] for m in matches] == ["rule-9"]


def test_an_equal_time_is_not_replaced_by_the_last_one() -> None:
    state, _ = advance(None, "r", A_B, 0, ev(1, "a", 0.0))
    _, match = advance(state, "r", A_B, 0, ev(2, "b", -0.0))
    assert match is not None
    assert math.copysign(1.0, match["ended_at"]) == -1.0


def test_a_window_below_one_second_is_applied() -> None:
    assert match_events([ev(1, "a", 0), ev(2, "b", 1)], "r", A_B, 0.5) == []
    assert len(match_events([ev(1, "a", 0), ev(2, "b", 0.5)], "r", A_B, 0.5)) == 1


def test_a_first_step_event_exactly_window_seconds_old_still_counts() -> None:
    events = [ev(1, "a", 0), ev(2, "a", 10), ev(3, "b", 10)]
    assert match_events(events, "r", A2_B, 10) == [
        {"rule_id": "r", "steps": [[1, 2], [3]], "started_at": 0.0, "ended_at": 10.0}
    ]


def test_a_first_step_of_four_lists_all_four_ids_and_starts_at_the_oldest() -> None:
    steps = [{"tool_glob": "a", "min_count": 4}]
    events = [ev(i, "a", i) for i in range(1, 5)]
    assert match_events(events, "r", steps, 0) == [
        {"rule_id": "r", "steps": [[1, 2, 3, 4]], "started_at": 1.0, "ended_at": 4.0}
    ]


def test_a_first_step_of_three_starts_at_its_oldest_event() -> None:
    steps = [{"tool_glob": "a", "min_count": 3}]
    events = [ev(i, "a", i) for i in range(1, 4)]
    assert match_events(events, "r", steps, 0) == [
        {"rule_id": "r", "steps": [[1, 2, 3]], "started_at": 1.0, "ended_at": 3.0}
    ]


def test_a_later_step_counts_every_matching_event() -> None:
    steps = [{"tool_glob": "a"}, {"tool_glob": "b", "min_count": 3}]
    events = [ev(1, "a", 0), ev(2, "b", 1), ev(3, "b", 2), ev(4, "b", 3)]
    assert match_events(events, "r", steps, 0) == [
        {"rule_id": "r", "steps": [[1], [2, 3, 4]], "started_at": 0.0, "ended_at": 3.0}
    ]


def test_of_two_chains_starting_at_once_the_later_event_is_kept() -> None:
    events = [ev(0, "b", 0), ev(1, "a", 2), ev(2, "a", 2), ev(3, "b", 3.5)]
    assert match_events(events, "r", A_B, 5) == [
        {"rule_id": "r", "steps": [[2], [3]], "started_at": 2.0, "ended_at": 3.5}
    ]
