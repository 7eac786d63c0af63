"""The gateway as an MCP server to the client, over stdio or streamable HTTP (the `mcp` SDK's).

A thin adapter: each request is handed to `core.Gateway`, which decides. The person's turns a
client sends with a call (`_meta` `stalwart/turns`, see `turns`) are handed on with whether the
transport vouches for the client: over stdio it is the process that started the gateway; over
HTTP only a request `BearerOnly` let in (it marks the request's scope) is vouched for. A confirm
is asked through elicitation in the client's era: on a handshake-era connection (`initialize`) with a
back-channel, as an `elicitation/create` request the gateway sends; on a 2026-07-28 connection,
as an `InputRequiredResult` the client answers by calling again (SEP-2322). A client that did
not declare elicitation is never asked this way.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .core import Gateway, Refusal
from .turns import META_KEY as TURNS_KEY

NAME = "stalwart-gateway"


def _elicits(ctx: Any) -> bool:
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


#: The scope's state key `BearerOnly` sets on a request that carried the bearer token.
VOUCHED = "stalwart_bearer"


def _vouched(ctx: Any, transport: str) -> bool:
    """Whether the client of this request is vouched for: stdio's, or HTTP's with the token."""
    if transport == "stdio":
        return True
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None) or {}
    return bool((scope.get("state") or {}).get(VOUCHED))


def build_server(gateway: Gateway, *, transport: str = "stdio") -> Server[Any]:
    """The MCP server whose every request goes through `gateway` (`transport`: stdio, http)."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await gateway.list_tools())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        elicit = None
        if _elicits(ctx) and not modern and ctx.session.can_send_request:

            async def elicit(message: str, schema: dict[str, Any]) -> types.ElicitResult:
                return await ctx.session.elicit_form(
                    message, schema, related_request_id=ctx.request_id
                )

        meta = params.meta or {}
        turns = meta.get(TURNS_KEY)
        return await gateway.call_tool(
            params.name,
            params.arguments,
            elicit=elicit,
            input_required=modern and _elicits(ctx),
            input_responses=params.input_responses,
            request_state=params.request_state,
            turns=turns,
            turns_vouched=turns is not None and _vouched(ctx, transport),
        )

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await gateway.list_resources())

    async def list_resource_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        templates = await gateway.list_resource_templates()
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
        try:
            return await gateway.read_resource(str(params.uri))
        except Refusal as refused:
            raise _error(refused) from None

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=await gateway.list_prompts())

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> Any:
        try:
            return await gateway.get_prompt(params.name, params.arguments)
        except Refusal as refused:
            raise _error(refused) from None

    server = Server(
        NAME,
        version="1",
        instructions="Stalwart checks every tool call before it reaches the server behind it.",
        get_tool_input_schema=gateway.input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    if not _tracing():
        # The SDK wraps every request in an OpenTelemetry span; with no tracer set up in this
        # process the span records nothing, yet costs a few per cent of the gateway's CPU a call.
        server.middleware = [
            m for m in server.middleware if type(m).__name__ != "OpenTelemetryMiddleware"
        ]
    return server


def _tracing() -> bool:
    """Whether OpenTelemetry traces are set up here: a tracer provider, or `OTEL_*` settings
    for an exporter (an auto-instrumented process)."""
    import os

    from opentelemetry import trace

    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return True
    return any(name.startswith("OTEL_") for name in os.environ)


def _error(refused: Refusal) -> Exception:
    from mcp.shared.exceptions import MCPError

    return MCPError(types.INVALID_PARAMS, str(refused), {"reasons": refused.reasons})


#: The longest line (one JSON-RPC message) the stdio transport reads from the client.
MAX_LINE = 32 * 1024 * 1024


class _Lines:
    """The client's stdin as lines, read on the event loop (the SDK's reader uses a thread)."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        import asyncio

        try:
            line = await self.reader.readline()
        except (asyncio.LimitOverrunError, ValueError):
            # A message over MAX_LINE: dropped up to its end, answered as a parse error.
            while True:
                try:
                    await self.reader.readuntil(b"\n")
                    break
                except asyncio.LimitOverrunError as exc:
                    await self.reader.readexactly(exc.consumed)
                except asyncio.IncompleteReadError:
                    break
            return "\n"
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Out:
    """The client's stdout, written on the event loop."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()


async def _loop_stdio() -> tuple[Any, Any, Any] | None:
    """stdin and stdout as event-loop pipes, with fd 0 and 1 diverted (/dev/null, stderr) so
    nothing else in the process writes on the wire; None where they are not pipes (a file, a
    terminal), and the SDK's own transport serves them."""
    import asyncio
    import os
    import sys

    loop = asyncio.get_running_loop()
    try:
        wire_in, wire_out = os.dup(0), os.dup(1)
    except OSError:
        return None
    stdin = os.fdopen(wire_in, "rb", buffering=0, closefd=False)
    stdout = os.fdopen(wire_out, "wb", buffering=0, closefd=False)
    try:
        reader = asyncio.StreamReader(limit=MAX_LINE, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, stdout
        )
    except (OSError, ValueError):  # not a pipe: the SDK's transport, as it is
        os.close(wire_in)
        os.close(wire_out)
        return None
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(sys.stderr.fileno(), 1)

    def restore() -> None:
        transport.close()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)

    return _Lines(reader), _Out(writer), restore


async def serve_stdio(gateway: Gateway) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(gateway)
    pipes = await _loop_stdio()
    if pipes is None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return
    lines, out, restore = pipes
    try:
        async with stdio_server(lines, out) as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        restore()


class BearerOnly:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`; any other
    is answered 401 before the MCP app (or any upstream) sees it. The token is compared in
    constant time and never logged or echoed."""

    def __init__(self, app: Any, token: str) -> None:
        if not token:
            raise ValueError("an empty token would let anyone in")
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        import hmac

        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope.get("headers") or ():
            if name == b"authorization":
                given = value
                break
        if hmac.compare_digest(given, self.expected):
            scope = {**scope, "state": {**(scope.get("state") or {}), VOUCHED: True}}
            await self.app(scope, receive, send)
            return
        why = (
            "a bearer token is required" if not given else "the bearer token is not this gateway's"
        )
        body = json.dumps({"error": "unauthorized", "detail": why}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="stalwart-gateway"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


#: Seconds a connection has to send a request's headers, from when it opens or its last answer
#: ends. uvicorn has no such bound, and the bearer token is read only once the headers are
#: complete: anyone who can reach the port could otherwise hold connections (file descriptors
#: of the gateway's) for ever, sending nothing, or a byte of headers now and then.
HEADERS_WITHIN = 10.0


def _headers_within(seconds: float) -> type:
    """uvicorn's HTTP protocol (`auto`: httptools where installed), closing a connection with no
    request under way `seconds` after it opened or its last answer ended."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class HeadersWithin(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
        _deadline: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self.loop.call_later(seconds, self._late)

        def _late(self) -> None:
            cycle = getattr(self, "cycle", None)
            under_way = cycle is not None and not cycle.response_complete
            if not under_way and not self.transport.is_closing():
                self.transport.close()

    return HeadersWithin


async def serve_http(
    gateway: Gateway, *, host: str, port: int, token: str, ready: Any = None
) -> None:
    """Streamable HTTP on `host:port` (127.0.0.1 unless told otherwise), for clients that send
    the bearer `token`."""
    import uvicorn

    server = build_server(gateway, transport="http")
    app = BearerOnly(server.streamable_http_app(host=host), token)
    # uvicorn's `http="auto"` takes httptools where it is installed (the `gateway` extra).
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        access_log=False,
        http=_headers_within(HEADERS_WITHIN),
    )
    web = uvicorn.Server(config)
    if ready is not None:
        ready(web)
    await web.serve()
