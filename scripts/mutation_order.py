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
- A surviving mutant runs every test that reaches its function to the end, and in the firewall's
  engine those are mostly property tests of 100-300 examples each (a minute of CPU per survivor of
  `compiled.py`). While mutants are run (not while the statistics are taken, so that which tests
  reach which function is learnt from the full runs), each Hypothesis test is given at most
  `MUTATION_MAX_EXAMPLES` examples (default 25; 0 leaves the tests' own settings), and a failing
  example is not shrunk: a mutant needs one failing input, not the smallest, and shrinking one can
  take minutes of a mutant's CPU limit. Fewer examples can only make a kill rarer, never invent one
  (a kill is a real failing input), so the score of a capped run is a lower bound of the full one
  up to the seed: with a fixed seed the first examples of a short run are drawn like those of a
  long one, but Hypothesis does not promise the same ones.

- A mutant's process is forked from mutmut's fork server, which has imported the tests and the
  engines to collect them (`forkserver_warmup = "collect"` in pyproject.toml) but run nothing.
  What collection computed is still there, though: the engines' `functools` caches filled by the
  tests' module-level tables, whose cached answers come from the unmutated code, so a mutant of a
  function behind a cache (the address parsers) would never be reached. Before a mutant's tests
  run, every `functools` cache of the engines is emptied, and while the statistics are taken, before
  each test (so that every test reaching a function behind a cache is tied to it, not only the
  first). (mutmut's default forked each mutant from a process that had run the whole suite, with
  every cache full: mutants reported as survivors were killed by the same tests in a fresh
  process.)

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
    state = _mutmut_state()
    if state is not None and _collecting_stats():
        # Each test reaches the functions behind the engines' caches itself, so that the stats
        # tie it to them (with the cache a test before it filled, it would never call them).
        _clear_caches()
    yield
    if state is None or not _collecting_stats():
        return
    for name in getattr(item, "fixturenames", ()):
        state._stats.update(_FIXTURE_CALLS.get(name, ()))


#: The packages whose caches a mutant's run starts without.
ENGINES = ("guard.engine", "firewall.engine")


def _clear_caches() -> int:
    """Empty every `functools.lru_cache`/`cache` of the engines' imported modules; how many."""
    import sys

    cleared = 0
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(ENGINES):
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and hasattr(value, "cache_info"):
                clear()
                cleared += 1
    return cleared


def pytest_sessionstart(session: Any) -> None:
    if _mutmut_state() is not None and not _collecting_stats():
        _clear_caches()


def _max_examples() -> int:
    try:
        return max(0, int(os.environ.get("MUTATION_MAX_EXAMPLES", "25")))
    except ValueError:
        return 25


def _cap_examples(items: list[Any], cap: int) -> None:
    """Give each Hypothesis test at most `cap` examples and no shrinking (read when it runs)."""
    from hypothesis import Phase, settings

    for item in items:
        test = getattr(item, "obj", None)
        test = getattr(test, "__func__", test)
        current = getattr(test, "_hypothesis_internal_use_settings", None)
        if current is None:
            continue
        phases = [phase for phase in current.phases if phase is not Phase.shrink]
        test._hypothesis_internal_use_settings = settings(
            current, max_examples=min(current.max_examples, cap), phases=phases
        )


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    state = _mutmut_state()
    if state is None:
        return
    cap = _max_examples()
    if cap and not _collecting_stats():
        _cap_examples(items, cap)
    durations = state.duration_by_test
    if durations:
        items.sort(key=lambda item: durations.get(item.nodeid, 0.0))
