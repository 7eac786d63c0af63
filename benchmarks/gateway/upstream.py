"""The upstream of the gateway benchmark: one read tool, over stdio or streamable HTTP (`PORT`)."""

from __future__ import annotations

import sys

import mcp_types as types
from mcp.server.mcpserver import MCPServer

app = MCPServer("bench")


@app.tool(description="Look up an order.", annotations=types.ToolAnnotations(read_only_hint=True))
def get_order(order_id: str) -> dict[str, str]:
    return {"order_id": order_id, "status": "paid"}


if __name__ == "__main__":
    if len(sys.argv) > 1:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        app.run("stdio")
