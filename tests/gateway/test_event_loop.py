"""The gateway's event loop: uvloop's where the `gateway` extra installed it, asyncio's otherwise.

The gateway's own tests (`test_through_mcp.py` and the rest) start `stalwart gateway` as a process,
so they run every transport on the loop chosen here."""

from __future__ import annotations

import asyncio
import importlib.util

import anyio
import pytest

from stalwart_agents.cli_gateway import event_loop_options


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_the_gateway_runs_on_uvloop_when_it_is_installed() -> None:
    pytest.importorskip("uvloop")
    options = event_loop_options()
    assert options == {"use_uvloop": True}
    assert anyio.run(_loop_module, backend_options=options).startswith("uvloop")


def test_without_uvloop_the_gateway_runs_on_asyncio_s_own_loop(monkeypatch) -> None:  # noqa: ANN001
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvloop" else real(name, *a)
    )
    options = event_loop_options()
    assert options == {"use_uvloop": False}
    assert anyio.run(_loop_module, backend_options=options).startswith("asyncio")
