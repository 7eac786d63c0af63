"""The sequence matcher: order, interleaving, min_count, egress steps, windows, bounded state."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firewall.engine import SequenceError, advance, match_events
from firewall.engine.globs import glob_matches

from .conftest import ev

EXFIL = [
    {"tool_glob": "crm.read", "min_count": 3},
    {"tool_glob": "*.export"},
    {"tool_glob": "*", "egress": True},
]


def run(events: list[dict[str, Any]], steps: list[dict[str, Any]], window: float = 0) -> list[Any]:
    return [m["steps"] for m in match_events(events, "rule-1", steps, window)]


def test_steps_must_occur_in_order() -> None:
    steps = [{"tool_glob": "a"}, {"tool_glob": "b"}]
    assert run([ev(1, "b", 0), ev(2, "a", 1)], steps) == []
    assert run([ev(1, "a", 0), ev(2, "b", 1)], steps) == [[[1], [2]]]


def test_other_calls_may_interleave() -> None:
    steps = [{"tool_glob": "a"}, {"tool_glob": "b"}]
    events = [ev(1, "a", 0), ev(2, "x", 1), ev(3, "a", 2), ev(4, "y", 3), ev(5, "b", 4)]
    assert run(events, steps) == [[[3], [5]]]


def test_the_match_carries_the_rule_and_the_times() -> None:
    state, match = advance(None, 7, [{"tool_glob": "a"}], 0, ev("e1", "a", 12.5))
    assert match == {"rule_id": 7, "steps": [["e1"]], "started_at": 12.5, "ended_at": 12.5}


def test_min_count_needs_that_many_events_of_the_step() -> None:
    events = [ev(i, "crm.read", i) for i in range(1, 3)] + [
        ev(3, "crm.export", 3),
        ev(4, "http.post", 4, stage="egress"),
    ]
    assert run(events, EXFIL) == []
    events = [ev(i, "crm.read", i) for i in range(1, 5)] + [
        ev(5, "crm.export", 5),
        ev(6, "http.post", 6, stage="egress"),
    ]
    assert run(events, EXFIL) == [[[2, 3, 4], [5], [6]]]


def test_an_egress_step_needs_an_egress_call() -> None:
    events = [ev(i, "crm.read", i) for i in range(3)] + [
        ev(3, "crm.export", 3),
        ev(4, "http.post", 4),
    ]
    assert run(events, EXFIL) == []
    with_destination = [*events, ev(5, "http.post", 5, destination="https://x.example")]
    assert run(with_destination, EXFIL) == [[[0, 1, 2], [3], [5]]]


def test_the_whole_chain_must_fit_in_the_window() -> None:
    steps = [{"tool_glob": "a"}, {"tool_glob": "b"}]
    assert run([ev(1, "a", 0), ev(2, "b", 10)], steps, window=10) == [[[1], [2]]]
    assert run([ev(1, "a", 0), ev(2, "b", 10.5)], steps, window=10) == []


def test_a_later_start_still_matches_when_the_oldest_progress_expires() -> None:
    steps = [{"tool_glob": "a", "min_count": 2}, {"tool_glob": "b"}]
    events = [ev(1, "a", 0), ev(2, "a", 5), ev(3, "a", 8), ev(4, "b", 14)]
    assert run(events, steps, window=10) == [[[2, 3], [4]]]


def test_progress_further_ahead_is_kept_beside_a_later_start() -> None:
    # keeping only the latest start per step would lose the chain a@0, b@1, b@3
    steps = [{"tool_glob": "a"}, {"tool_glob": "b", "min_count": 2}]
    events = [ev(1, "a", 0), ev(2, "b", 1), ev(3, "a", 2), ev(4, "b", 3)]
    assert run(events, steps, window=10) == [[[1], [2, 4]]]


def test_one_event_counts_once_in_a_chain() -> None:
    steps = [{"tool_glob": "*"}, {"tool_glob": "*"}]
    assert run([ev(1, "x", 0)], steps) == []
    assert run([ev(1, "x", 0), ev(2, "y", 1)], steps) == [[[1], [2]]]


def test_progress_starts_afresh_after_a_match() -> None:
    steps = [{"tool_glob": "a"}, {"tool_glob": "b"}]
    events = [
        ev(1, "a", 0),
        ev(2, "a", 1),
        ev(3, "b", 2),
        ev(4, "b", 3),
        ev(5, "a", 4),
        ev(6, "b", 5),
    ]
    assert run(events, steps) == [[[2], [3]], [[5], [6]]]


def test_time_does_not_run_backwards() -> None:
    steps = [{"tool_glob": "a"}, {"tool_glob": "b"}]
    matches = match_events([ev(1, "a", 100), ev(2, "b", 50)], "r", steps, 10)
    assert matches[0]["ended_at"] == 100


def test_the_state_is_json_and_is_not_modified_in_place() -> None:
    state, _ = advance(None, "r", EXFIL, 600, ev(1, "crm.read", 0))
    frozen = json.dumps(state, sort_keys=True)
    assert json.loads(frozen) == state
    advance(state, "r", EXFIL, 600, ev(2, "crm.read", 1))
    assert json.dumps(state, sort_keys=True) == frozen


def test_the_state_stays_bounded_however_long_the_session() -> None:
    steps = [
        {"tool_glob": "crm.read", "min_count": 50},
        {"tool_glob": "*.export", "min_count": 2},
        {"tool_glob": "*", "egress": True},
    ]
    state = None
    sizes = []
    for number in range(5000):
        tool = "crm.read" if number % 7 else "crm.export"
        state, _ = advance(state, "r", steps, 0, ev(number, tool, number))
        sizes.append(len(json.dumps(state)))
    assert max(sizes[2500:]) <= max(sizes[:2500]) * 1.05
    assert max(sizes) < 20_000


def test_a_state_from_other_steps_or_unreadable_starts_afresh() -> None:
    state, _ = advance(
        None, "r", [{"tool_glob": "a", "min_count": 2}, {"tool_glob": "b"}], 0, ev(1, "a", 0)
    )
    _, match = advance(state, "r", [{"tool_glob": "a"}, {"tool_glob": "b"}], 0, ev(2, "b", 1))
    assert match is None
    for junk in ({"v": 1}, {"v": 99}, "state", {"v": 1, "sig": state["sig"], "buffers": "x"}):
        _, match = advance(
            junk, "r", [{"tool_glob": "a", "min_count": 2}, {"tool_glob": "b"}], 0, ev(2, "b", 1)
        )
        assert match is None


@pytest.mark.parametrize(
    "event",
    [
        None,
        {"tool": "a", "ts": 0},
        {"id": 1, "ts": 0},
        {"id": 1, "tool": "a"},
        {"id": 1, "tool": "a", "ts": "now"},
        {"id": True, "tool": "a", "ts": 0},
    ],
)
def test_malformed_events_raise_sequence_error(event: Any) -> None:
    with pytest.raises(SequenceError):
        advance(None, "r", [{"tool_glob": "a"}], 0, event)


@pytest.mark.parametrize(
    ("steps", "window"),
    [
        ([], 0),
        ([{"tool_glob": "a", "min_count": 0}], 0),
        ([{"tool_glob": "a"}], -1),
        ([{"tool_glob": ""}], 0),
        ([{"tool_glob": "a", "x": 1}], 0),
    ],
)
def test_malformed_steps_raise_sequence_error(steps: Any, window: Any) -> None:
    with pytest.raises(SequenceError):
        advance(None, "r", steps, window, ev(1, "a", 0))


# --- the brute-force reference: the definition in the module docstring, spelled out -------


def _clamped(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out, last = [], None
    for event in events:
        ts = event["ts"] if last is None or event["ts"] >= last else last
        last = ts
        out.append({**event, "ts": ts})
    return out


def _fits(step: dict[str, Any], event: dict[str, Any]) -> bool:
    egress = event.get("stage") == "egress" or bool(event.get("destination"))
    return glob_matches(step["tool_glob"], event["tool"]) and (
        egress or not step.get("egress", False)
    )


def _valid_chain(
    chain: list[int], events: list[dict[str, Any]], steps: list[dict[str, Any]], window: float
) -> bool:
    position = 0
    for step in steps:
        for _ in range(step.get("min_count", 1)):
            if not _fits(step, events[chain[position]]):
                return False
            position += 1
    return window <= 0 or events[chain[-1]]["ts"] - events[chain[0]]["ts"] <= window


def brute_force(
    events: list[dict[str, Any]], steps: list[dict[str, Any]], window: float
) -> list[int]:
    """The indices of the events at which a match is reported."""
    events = _clamped(events)
    total = sum(step.get("min_count", 1) for step in steps)
    reports, start = [], 0
    for end in range(len(events)):
        earlier = range(start, end)
        if any(
            _valid_chain([*chosen, end], events, steps, window)
            for chosen in itertools.combinations(earlier, total - 1)
        ):
            reports.append(end)
            start = end + 1
    return reports


_steps = st.lists(
    st.fixed_dictionaries(
        {"tool_glob": st.sampled_from(["a", "b", "*", "*.x"]), "min_count": st.integers(1, 2)},
        optional={"egress": st.booleans()},
    ),
    min_size=1,
    max_size=3,
)
_events = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c.x"]), st.integers(0, 4), st.booleans()),
    max_size=9,
)


@settings(max_examples=200, deadline=None)
@given(steps=_steps, raw=_events, window=st.sampled_from([0, 2, 5]))
def test_the_matcher_agrees_with_the_brute_force_definition(
    steps: list[dict[str, Any]], raw: list[tuple[str, int, bool]], window: int
) -> None:
    events = []
    ts = 0
    for index, (tool, gap, egress) in enumerate(raw):
        ts += gap
        events.append(ev(index, tool, ts, **({"stage": "egress"} if egress else {})))
    state = None
    reported = []
    for index, event in enumerate(events):
        state, match = advance(state, "r", steps, window, event)
        if match is not None:
            reported.append(index)
            chain = [i for ids in match["steps"] for i in ids]
            assert chain == sorted(chain) and chain[-1] == index
            assert [len(ids) for ids in match["steps"]] == [s["min_count"] for s in steps]
            assert _valid_chain(chain, _clamped(events), steps, window)
    assert reported == brute_force(events, steps, window)
