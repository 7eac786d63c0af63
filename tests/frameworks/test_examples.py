"""The two framework examples run as a user runs them: `python main.py`, in a process of their own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(name: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name / "main.py")],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def charges(output: str) -> list:
    line = next(line for line in output.splitlines() if line.startswith("charges that ran:"))
    return json.loads(line.partition(":")[2])


@pytest.mark.parametrize("name", ["langgraph_shop", "openai_agents_shop"])
def test_the_example_reads_confirms_refuses_and_holds_the_injected_write(name):
    output = run(name)
    assert '"status": "paid"' in output  # the read turn
    assert output.count("the person sees:") == 2  # the write, and the injected write
    assert "tainted_call" in output and "unknown_tool" in output
    (charged,) = charges(output)  # the one the person said yes to, never the injected 999
    assert charged == {"amount": 40 if name == "langgraph_shop" else 35, "order_id": "4411"}
    if name == "langgraph_shop":
        assert "graph proved == graph running: True" in output
