"""One upstream MCP server: reached over stdio (a command the gateway starts) or streamable HTTP.

Each server is held open by a task of its own for the life of the gateway (`run`), so a server
that cannot be reached, or fails later, marks only itself: `error` then says why, and every call
to its tools is answered with that reason and never made. Header and environment values are
filled from the environment when the connection opens and are never logged.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

import anyio
import mcp
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from . import pins as pinning
from .config import MissingVariable, ServerConfig, resolve

log = logging.getLogger("stalwart.gateway")

MAX_PAGES = 100


def _reason(exc: BaseException) -> str:
    """A one-line reason, without class names or secrets (header values never reach here)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).splitlines()[0] if str(exc) else ""
    if isinstance(exc, TimeoutError):
        return text or "it did not answer in time"
    if isinstance(exc, (FileNotFoundError, PermissionError)):
        return f"its command cannot be started: {exc.strerror or text}"
    if isinstance(exc, OSError):
        return f"{exc.strerror or text or 'the connection failed'}"
    return text or "the connection failed"


class Upstream:
    """A connection to one configured server, its tools as last listed, and its state."""

    def __init__(self, config: ServerConfig, *, environ: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.name = config.name
        self.environ = dict(os.environ if environ is None else environ)
        self.client: mcp.Client | None = None
        self.error: str | None = None
        self.tools: list[dict[str, Any]] = []
        self.ready = anyio.Event()
        self._stop = anyio.Event()
        self._scope: anyio.CancelScope | None = None

    def _transport(self) -> Any:
        server = self.config
        where = f"servers.{server.name}"
        if server.command:
            env = resolve(server.env, self.environ, f"{where}.env") if server.env else None
            return StdioServerParameters(
                command=server.command, args=list(server.args), env=env, cwd=server.cwd
            )
        headers = resolve(server.headers, self.environ, f"{where}.headers")
        http = create_mcp_http_client(headers=headers or None)
        return http, streamable_http_client(server.url or "", http_client=http)

    async def run(self) -> None:
        """Open the connection, list the tools, and hold it until `close` (a task of its own)."""
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                transport = self._transport()
                if isinstance(transport, tuple):
                    http, transport = transport
                    async with http:
                        await self._serve(transport)
                else:
                    await self._serve(transport)
            except MissingVariable as exc:
                self.error = f"the server `{self.name}` is not configured: {exc}"
            except Exception as exc:  # noqa: BLE001 - one server down never stops the others
                self.error = self.error or (
                    f"the server `{self.name}` cannot be reached: {_reason(exc)}"
                )
            finally:
                self.client = None
                if self.error is None and not self._stop.is_set():
                    self.error = f"the server `{self.name}` closed its connection"
                self.ready.set()
        if self.error:
            log.warning("gateway: %s", self.error)

    async def _serve(self, transport: Any) -> None:
        client = mcp.Client(
            transport, read_timeout_seconds=self.config.timeout, cache=None, mode="auto"
        )
        async with client:
            self.client = client
            self.tools = await self.list_tools()
            self.ready.set()
            await self._stop.wait()

    async def list_tools(self) -> list[dict[str, Any]]:
        """The server's tools now, as pinned definitions (every page, within bounds)."""
        client = self.connected()
        tools: list[dict[str, Any]] = []
        cursor = None
        with anyio.fail_after(self.config.timeout):
            for _ in range(MAX_PAGES):
                page = await client.list_tools(cursor=cursor)
                tools.extend(pinning.definition(tool) for tool in page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
        return tools

    def connected(self) -> mcp.Client:
        """The open client, or `ConnectionError` saying why there is none."""
        if self.client is None:
            raise ConnectionError(self.error or f"the server `{self.name}` is not connected")
        return self.client

    async def call_tool(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        return await self.connected().call_tool(tool, dict(arguments))

    async def close(self) -> None:
        self._stop.set()

    def abandon(self) -> None:
        """Stop a connection that is still being opened (it did not answer in time)."""
        self._stop.set()
        if self._scope is not None:
            self._scope.cancel()
