"""One upstream MCP server: reached over stdio (a command the gateway starts) or streamable HTTP.

Each server is held open by a task of its own for the life of the gateway (`run`), so a server
that cannot be reached, or fails later, marks only itself: `error` then says why, and every call
to its tools is answered with that reason and never made. Header and environment values are
filled from the environment when the connection opens and are never logged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import anyio
import httpx2
import mcp
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND

from . import pins as pinning
from .config import MissingVariable, ServerConfig, resolve, resolve_headers

log = logging.getLogger("stalwart.gateway")

MAX_PAGES = 100

#: What a server lists, by the name the pins give it: the client's method, the page's field, and
#: the pinned definition of one item.
LISTINGS: dict[str, tuple[str, str, Callable[[Any], dict[str, Any]]]] = {
    "tools": ("list_tools", "tools", pinning.definition),
    "prompts": ("list_prompts", "prompts", pinning.prompt_definition),
    "resources": ("list_resources", "resources", pinning.resource_definition),
    "templates": ("list_resource_templates", "resource_templates", pinning.template_definition),
}


#: The largest body of one answer the gateway reads from a server over HTTP (a JSON answer; an
#: event stream's events the SDK bounds one by one): the bound of a client's message on stdio.
MAX_RESPONSE_BYTES = 32 * 1024 * 1024


class _Bounded(httpx2.AsyncByteStream):
    """A response's body as the transport gives it, cut off past `limit` bytes (an
    `httpx2.StreamError`, which the SDK answers the call with, as a body it cannot read)."""

    def __init__(self, stream: Any, limit: int, encoded: bool) -> None:
        self.stream = stream
        self.limit = limit
        self.encoded = encoded

    async def __aiter__(self) -> Any:
        if self.encoded:  # asked for as it is: a compressed body could be any size unpacked
            raise httpx2.StreamError("the server's answer is compressed, which was not asked for")
        read = 0
        async for chunk in self.stream:
            read += len(chunk)
            if read > self.limit:
                raise httpx2.StreamError(f"the server's answer is over {self.limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self.stream.aclose()


async def _bound_answer(response: Any) -> None:
    """The HTTP client's response hook: every answer but an event stream is read within
    `MAX_RESPONSE_BYTES`, and as it is (`Accept-Encoding: identity`)."""
    kind = response.headers.get("content-type", "").lower()
    if kind.startswith("text/event-stream"):
        return
    encoded = response.headers.get("content-encoding", "identity").lower() not in ("", "identity")
    response.stream = _Bounded(response.stream, MAX_RESPONSE_BYTES, encoded)


#: The most of a server's own words an error hands on (to the client, the log, the console).
MAX_SAID = 500


def server_said(text: str) -> str:
    """What a server said (an error's message) as the gateway hands it on: on one line, every
    credential the one table of recognisers knows replaced by `[redacted:<shape>]`, at most
    `MAX_SAID` characters. A failing server's message may spell out its own secrets (a
    connection string, a key); the client is a model, and the log and the console keep it."""
    from firewall.engine.credentials import redact_text

    text = redact_text(" ".join(text.split()))[0]
    return text if len(text) <= MAX_SAID else f"{text[:MAX_SAID]}..."


def _reason(exc: BaseException) -> str:
    """A one-line reason, without class names or secrets (header values never reach here, and
    what the server said goes through `server_said`)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = server_said(str(exc).splitlines()[0]) if str(exc) else ""
    if isinstance(exc, TimeoutError):
        return text or "it did not answer in time"
    if isinstance(exc, (FileNotFoundError, PermissionError)):
        return f"its command cannot be started: {exc.strerror or text}"
    if isinstance(exc, OSError):
        return f"{exc.strerror or text or 'the connection failed'}"
    return text or "the connection failed"


#: The most of one line of a server's stderr read at once (a longer one is read in parts).
MAX_STDERR_LINE = 4096


@contextlib.contextmanager
def _stderr_logged(name: str) -> Iterator[Any]:
    """A pipe for the stderr of the server `name` the gateway starts, whose lines are logged as
    that server's, quoted (`server_said`, as JSON text), from a thread of their own until the
    server closes it. Left as it was, the server's stderr is the gateway's own, where a line it
    writes reads as the gateway's (`gateway event: {...}`, a forged event)."""
    import json
    import threading

    read_end, write_end = os.pipe()

    def relay() -> None:
        with os.fdopen(read_end, "rb") as lines:
            while line := lines.readline(MAX_STDERR_LINE):
                said = server_said(line.decode("utf-8", errors="replace"))
                if said:
                    log.info(
                        "gateway: the server `%s` wrote on stderr: %s",
                        name,
                        json.dumps(said, ensure_ascii=False),
                    )

    threading.Thread(target=relay, name=f"stalwart-stderr-{name}", daemon=True).start()
    errlog = os.fdopen(write_end, "w")
    try:
        yield errlog
    finally:
        errlog.close()  # the server holds its own end until it exits: then the relay ends


#: Reconnection: the first attempt after a loss is made on the next call; after each failed
#: attempt the next waits twice as long (BACKOFF, 2 x BACKOFF, ...), at most MAX_BACKOFF.
BACKOFF = 1.0
MAX_BACKOFF = 60.0


def _lost(exc: BaseException) -> bool:
    """Whether a call's failure means the connection itself is gone (not a tool's error)."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    if isinstance(exc, MCPError):
        return exc.error.code == CONNECTION_CLOSED
    if isinstance(exc, (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError)):
        return True
    return type(exc).__name__ in ("ConnectError", "RemoteProtocolError", "ReadError", "WriteError")


class Upstream:
    """A connection to one configured server, its tools as last listed, and its state.

    A connection that is lost (the server exits, the socket closes) marks the server down with
    why; the next call asks for a new connection (`reconnect`: a stdio server is started again,
    an HTTP one reached again), with backoff between failed attempts. While it is down, and
    between attempts, every call of its tools fails closed naming why and when it is tried again.
    """

    def __init__(self, config: ServerConfig, *, environ: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.name = config.name
        self.environ = dict(os.environ if environ is None else environ)
        self.client: mcp.Client | None = None
        self.error: str | None = None
        self.tools: list[dict[str, Any]] = []
        self.ready = anyio.Event()  # the first attempt has ended, connected or not
        self.connections = 0  # connections opened, the first included
        self.failures = 0  # attempts failed (or connections lost) since the last that worked
        self.next_attempt = 0.0  # time.monotonic() from which a call may ask for a new one
        self.configured = True  # False: a missing variable, which no retry can fix
        #: Called (awaited) with this upstream after each connection opens and lists its tools.
        self.on_connect: Callable[[Upstream], Awaitable[None]] | None = None
        #: Called with this upstream when its open connection is found lost.
        self.on_lost: Callable[[Upstream], None] | None = None
        self._stop = anyio.Event()
        self._lose = anyio.Event()
        self._retry = anyio.Event()
        self._changed = (
            anyio.Event()
        )  # set (and replaced) when a connection opens or an attempt ends
        self._begun = 0  # attempts begun
        self._ended = 0  # attempts ended (the connection failed, was lost or was closed)
        self._connecting = False
        self._scope: anyio.CancelScope | None = None
        self._attempt_scope: anyio.CancelScope | None = None

    def _transport(self) -> Any:
        server = self.config
        where = f"servers.{server.name}"
        if server.command:
            env = resolve(server.env, self.environ, f"{where}.env") if server.env else None
            return StdioServerParameters(
                command=server.command, args=list(server.args), env=env, cwd=server.cwd
            )
        headers = resolve_headers(server.headers, self.environ, f"{where}.headers")
        http = create_mcp_http_client(headers={"Accept-Encoding": "identity", **headers})
        http.event_hooks["response"].append(_bound_answer)
        return http, streamable_http_client(server.url or "", http_client=http)

    async def run(self) -> None:
        """Open the connection and hold it until `close`; once lost, open it again each time a
        call asks (`reconnect`). A task of its own for the life of the gateway."""
        with anyio.CancelScope() as scope:
            self._scope = scope
            while not self._stop.is_set():
                self._retry = anyio.Event()
                self._begun += 1
                self._connecting = True
                try:
                    await self._attempt()
                finally:
                    self._connecting = False
                    self._ended += 1
                    self._signal()
                self.ready.set()
                if self._stop.is_set() or not self.configured:
                    break
                await self._retry.wait()
        self.ready.set()

    def _signal(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def _attempt(self) -> None:
        self._lose = anyio.Event()
        with anyio.CancelScope() as self._attempt_scope:
            await self._connect()
        if self.error is not None and not self._stop.is_set():
            self.failures += 1
            wait = (
                0.0 if self.failures == 1 else min(MAX_BACKOFF, BACKOFF * 2 ** (self.failures - 2))
            )
            self.next_attempt = time.monotonic() + wait
            log.warning("gateway: %s", self.error)

    async def _connect(self) -> None:
        try:
            transport = self._transport()
            if isinstance(transport, tuple):
                http, transport = transport
                async with http:
                    await self._serve(transport)
            else:
                with _stderr_logged(self.name) as errlog:
                    await self._serve(stdio_client(transport, errlog=errlog))
        except MissingVariable as exc:
            self.error = f"the server `{self.name}` is not configured: {exc}"
            self.configured = False
        except Exception as exc:  # noqa: BLE001 - one server down never stops the others
            if not self._lose.is_set():  # a lost connection keeps the reason it was lost for
                self.error = f"the server `{self.name}` cannot be reached: {_reason(exc)}"
        finally:
            self.client = None
            if self.error is None and not self._stop.is_set():
                self.error = f"the server `{self.name}` closed its connection"

    async def _serve(self, transport: Any) -> None:
        client = mcp.Client(
            transport, read_timeout_seconds=self.config.timeout, cache=None, mode="auto"
        )
        async with client:
            # Listed and held against the pins (`on_connect`) before any call may use it: a
            # server back with a changed tool is never called in between.
            self.tools = await self.list_tools(client)
            self.error = None
            self.failures = 0
            self.connections += 1
            if self.connections > 1:
                log.info("gateway: the server `%s` is connected again", self.name)
            if self.on_connect is not None:
                await self.on_connect(self)
            self.client = client
            self._connecting = False
            self.ready.set()
            self._signal()
            async with anyio.create_task_group() as group:

                async def stop_on(event: anyio.Event) -> None:
                    await event.wait()
                    group.cancel_scope.cancel()

                group.start_soon(stop_on, self._stop)
                group.start_soon(stop_on, self._lose)

    async def list_tools(self, client: mcp.Client | None = None) -> list[dict[str, Any]]:
        """The server's tools now, as pinned definitions (every page, within bounds); through
        `client` while the connection is being opened, else the open one."""
        return await self.listed("tools", client)

    async def listed(self, kind: str, client: mcp.Client | None = None) -> list[dict[str, Any]]:
        """What the server lists now of `kind` (`tools`, `prompts`, `resources`, `templates`), as
        pinned definitions: every page, at most `MAX_PAGES`, within its `timeout`. None of a kind
        the server does not declare (no prompts, no resources) or has no method for."""
        client = client or self.connected()
        method, field, defined = LISTINGS[kind]
        capabilities = client.server_capabilities
        declared = kind == "tools" or capabilities is None
        if not declared:
            declared = (
                capabilities.prompts if kind == "prompts" else capabilities.resources
            ) is not None
        found: list[dict[str, Any]] = []
        if not declared:
            return found
        cursor = None
        with anyio.fail_after(self.config.timeout):
            for _ in range(MAX_PAGES):
                try:
                    page = await getattr(client, method)(cursor=cursor)
                except MCPError as exc:
                    if kind != "tools" and exc.error.code == METHOD_NOT_FOUND:
                        return found  # resources, say, but no templates
                    raise
                found.extend(defined(item) for item in getattr(page, field))
                cursor = page.next_cursor
                if not cursor:
                    break
        return found

    def connected(self) -> mcp.Client:
        """The open client, or `ConnectionError` saying why there is none."""
        if self.client is None:
            raise ConnectionError(self.error or f"the server `{self.name}` is not connected")
        return self.client

    def down(self) -> str | None:
        """Why a call of this server cannot be made now (None: it can), with when it is retried."""
        if self.client is not None:
            return None
        why = self.error or f"the server `{self.name}` is not connected"
        if not self.configured or self._stop.is_set():
            return why
        wait = self.next_attempt - time.monotonic()
        if wait > 0:
            return f"{why} (tried {self.failures} time{'s' if self.failures != 1 else ''}; the next attempt in {wait:.0f} s)"  # noqa: E501
        return why

    async def reconnect(self) -> bool:
        """Open a new connection for a call, where backoff allows one now; True when connected."""
        if self.client is not None:
            return True
        if not self.configured or self._stop.is_set() or time.monotonic() < self.next_attempt:
            return False
        # An attempt under way (the first, or one another call asked for) is waited for; else
        # one more is asked for -- also while a lost connection is still being torn down.
        target = self._begun if self._connecting else self._begun + 1
        if not self._connecting:
            self._retry.set()
        with anyio.move_on_after(self.config.timeout):
            while self.client is None and self._ended < target and not self._stop.is_set():
                await self._changed.wait()
        if self.client is None and self.error is None:
            self.error = (
                f"the server `{self.name}` cannot be reached: it did not answer within "
                f"{self.config.timeout:g} s"
            )
        return self.client is not None

    def lose(self, why: str) -> None:
        """The open connection is gone: mark the server down and tear the connection down."""
        if self.client is None:
            return
        self.error = f"the server `{self.name}` closed its connection: {why}"
        self.client = None
        self._lose.set()
        if self.on_lost is not None:
            self.on_lost(self)

    async def call_tool(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        client = self.connected()
        try:
            return await client.call_tool(tool, dict(arguments))
        except Exception as exc:
            if _lost(exc):
                self.lose(_reason(exc))
            raise

    async def close(self) -> None:
        self._stop.set()
        self._retry.set()

    def abandon(self) -> None:
        """Give up the connection being opened (it did not answer in time): the server is down
        with the reason already set, and a later call may try again (`reconnect`)."""
        if self._attempt_scope is not None:
            self._attempt_scope.cancel()
