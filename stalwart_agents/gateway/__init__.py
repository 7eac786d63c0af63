"""The gateway: Stalwart in front of any MCP server (`stalwart gateway --config gateway.yaml`).

An MCP server to the client and an MCP client to the real servers, with the session's tool check
and the firewall deciding every `tools/call` in between. `config` reads gateway.yaml, `catalogue`
turns the servers' tools into catalogue entries, `pins` keeps the approved definitions, `core`
is the path of a call, `server` speaks MCP to the client (stdio or streamable HTTP).
"""

from __future__ import annotations

from .config import GatewayConfig, GatewayConfigInvalid, load_config
from .core import Gateway

__all__ = ["Gateway", "GatewayConfig", "GatewayConfigInvalid", "load_config"]
