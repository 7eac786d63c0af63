"""A pytest plugin for mutation runs: the right tests for each mutant, fastest first.

mutmut first runs the whole suite once to learn which tests call which function ("stats"), then
runs each mutant against those tests only, with `-x`. Two things this plugin fixes:

- A session- or module-scoped fixture (the shop's catalogue, loaded once) calls the engine during
  the setup of the first test that uses it only; mutmut then ties the functions it called to that
  one test, and a mutant in the loader is run against it alone, though every test using the fixture
  depends on what it loaded. While the stats are collected, the functions a wider-scoped fixture
  called are tied to every test that uses the fixture.
- mutmut hands a mutant's tests over in no particular order, so a mutant that a quick test kills
  may first wait for a slow property test. mutmut's worker processes are forked from the process
  that timed every test, so the durations are at hand in its state: the quickest run first.

Loaded with `-p scripts.mutation_order` (see `[tool.mutmut]` in pyproject.toml); outside mutmut it
does nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

# The functions each wider-scoped fixture called while it was set up, by fixture name.
_FIXTURE_CALLS: dict[str, set[str]] = {}


def _mutmut_state() -> Any | None:
    if "MUTANT_UNDER_TEST" not in os.environ:
        return None
    try:
        from mutmut.state import state
    except ImportError:
        return None
    return state()


def _collecting_stats() -> bool:
    return os.environ.get("MUTANT_UNDER_TEST") == "stats"


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: Any) -> Iterator[None]:
    state = _mutmut_state()
    if state is None or not _collecting_stats() or fixturedef.scope == "function":
        yield
        return
    outer = state._stats
    state._stats = set()
    try:
        yield
    finally:
        called = state._stats
        state._stats = outer | called
        _FIXTURE_CALLS.setdefault(fixturedef.argname, set()).update(called)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: Any) -> Iterator[None]:
    yield
    state = _mutmut_state()
    if state is None or not _collecting_stats():
        return
    for name in getattr(item, "fixturenames", ()):
        state._stats.update(_FIXTURE_CALLS.get(name, ()))


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    state = _mutmut_state()
    if state is None:
        return
    durations = state.duration_by_test
    if durations:
        items.sort(key=lambda item: durations.get(item.nodeid, 0.0))
