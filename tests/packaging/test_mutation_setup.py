"""The mutation runs' own set-up: a mutant's tests start with the engines' caches empty.

A cache filled by the unmutated code answers a mutant's call without running the mutated
function, and the mutant is reported as a survivor (scripts/mutation_order.py, pyproject.toml).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from firewall.engine import addresses, jsonpath
from scripts import mutation_order

ROOT = Path(__file__).resolve().parents[2]


def test_every_engine_cache_is_emptied_before_a_mutant_runs() -> None:
    addresses.parse_ip("169.254.169.254")
    addresses.parse_network("10.0.0.0/8")
    jsonpath.parse_path("$.url")
    filled = [addresses._ip_key, addresses._parse_network, jsonpath._parse]
    assert all(cached.cache_info().currsize > 0 for cached in filled)
    assert mutation_order._clear_caches() >= len(filled)
    assert [cached.cache_info().currsize for cached in filled] == [0, 0, 0]


def test_mutants_are_forked_from_a_server_that_ran_no_test() -> None:
    mutmut = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert mutmut["process_isolation"] == "forkserver"
    assert mutmut["forkserver_warmup"] in {"collect", "import", "none"}
    assert "scripts.mutation_order" in mutmut["pytest_add_cli_args"]
