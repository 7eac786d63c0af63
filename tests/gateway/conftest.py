"""A gateway.yaml in front of the test servers (tests/gateway/servers.py), approved once."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FIREWALL = {
    "name": "gateway test",
    "default_verdict": "allow",
    "rules": [
        {
            "priority": 10,
            "name": "no account closing",
            "stage": "tool_call",
            "tool_name_glob": "shop.close_account",
            "verdict": "deny",
        },
        {
            "priority": 20,
            "name": "no card numbers upstream",
            "stage": "tool_call",
            "tool_name_glob": "shop.get_order",
            "verdict": "sanitize",
            "sanitize": {"patterns": ["SECRET-[0-9]+"]},
        },
        {
            "priority": 30,
            "name": "pages need a yes",
            "stage": "tool_call",
            "tool_name_glob": "web.fetch_page",
            "verdict": "require_approval",
        },
    ],
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_block(kind: str, extra: str = "") -> str:
    return (
        f"  {kind}:\n"
        f"    command: {sys.executable}\n"
        f"    args: [-m, tests.gateway.servers, {kind}]\n"
        f"    cwd: {ROOT}\n"
        "    env: {GATEWAY_TEST_CALLS: '${GATEWAY_TEST_CALLS}'}\n"
        f"{extra}"
    )


def write_config(folder: Path, *, down_port: int) -> Path:
    (folder / "firewall.json").write_text(json.dumps(FIREWALL), encoding="utf-8")
    text = (
        "agent: desk\n"
        "firewall: ./firewall.json\n"
        "servers:\n"
        + server_block("shop", "    resources_outside: [shop_docs]\n")
        + server_block("web", "    reads_outside: [web]\n")
        + server_block("drift")
        + "  down:\n"
        f"    url: http://127.0.0.1:{down_port}/mcp\n"
        "    timeout: 10\n"
    )
    path = folder / "gateway.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def approved_gateway(tmp_path_factory):  # noqa: ANN001, ANN201
    """gateway.yaml, its firewall, the call counter, and the pins `stalwart gateway approve` wrote."""
    import os

    from stalwart_agents import cli

    folder = tmp_path_factory.mktemp("gateway")
    calls = folder / "calls.txt"
    calls.write_text("", encoding="utf-8")
    config = write_config(folder, down_port=free_port())
    before = os.environ.get("GATEWAY_TEST_CALLS")
    os.environ["GATEWAY_TEST_CALLS"] = str(calls)
    try:
        code = cli.main(["gateway", "approve", "--config", str(config)])
    finally:
        if before is None:
            os.environ.pop("GATEWAY_TEST_CALLS", None)
        else:
            os.environ["GATEWAY_TEST_CALLS"] = before
    return {"config": config, "calls": calls, "approve_code": code, "folder": folder}


def calls_of(path: Path) -> list[tuple[str, str, dict]]:
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        server, tool, arguments = line.split(" ", 2)
        found.append((server, tool, json.loads(arguments)))
    return found
