"""`stalwart gateway`: serve the gateway (stdio, or streamable HTTP), or approve its servers' tools.

    stalwart gateway --config gateway.yaml                    # stdio, for a desktop or IDE client
    stalwart gateway --config gateway.yaml --http --port 8765 # streamable HTTP on 127.0.0.1,
                                                              # for clients with the bearer token
                                                              # in $GATEWAY_TOKEN (http_token_env)
    stalwart gateway approve --config gateway.yaml            # pin every server's tools, prompts
                                                              # and resources as they are

Exit codes: 0 served until stopped, or approved; 1 a gateway.yaml that cannot be used (every
problem printed with its line), or a server that could not be reached for approval; 2 usage or
internal error.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from stalwart_agents.cli import EXIT_FINDINGS, EXIT_OK, InputError, UsageError

NAME = "gateway"
HELP = "stand in front of MCP servers: every tools/call checked, approved tools pinned"


def _config(args: argparse.Namespace):  # noqa: ANN202
    from stalwart_agents.gateway.config import GatewayConfigInvalid, load_config

    if not args.config:
        raise UsageError("name the gateway's configuration with --config gateway.yaml")
    try:
        return load_config(args.config)
    except GatewayConfigInvalid as exc:
        raise InputError(f"`{args.config}` cannot be used:\n{exc}") from None


def _logging(args: argparse.Namespace) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    for noisy in ("mcp", "httpx", "httpx2", "uvicorn"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


async def _until_terminated(serve, *given) -> None:  # noqa: ANN001
    """`serve(*given)` until it ends or the process is sent SIGTERM: then it is cancelled, so the
    gateway still stops in order (its servers closed, its last report sent to the console)."""
    import signal

    import anyio

    async with anyio.create_task_group() as group:

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM) as signals:
                async for _ in signals:
                    group.cancel_scope.cancel()
                    return

        group.start_soon(watch)
        await serve(*given)
        group.cancel_scope.cancel()


def _serve(args: argparse.Namespace) -> int:
    import anyio

    from stalwart_agents.gateway import Gateway
    from stalwart_agents.gateway.server import serve_http, serve_stdio

    config = _config(args)
    _logging(args)
    if args.port is not None and not args.http:
        raise UsageError("--port is for --http")
    if args.http and args.port is None:
        raise UsageError("give --port with --http")
    if args.token_env is not None and not args.http:
        raise UsageError("--token-env is for --http")
    token = ""
    if args.http:
        variable = args.token_env or config.http_token_env
        if not variable:
            raise UsageError(
                "--http needs a bearer token: name the environment variable that holds it with "
                "`http_token_env:` in gateway.yaml or --token-env"
            )
        token = os.environ.get(variable, "")
        if not token.strip():
            raise InputError(f"the environment variable `{variable}` holds no bearer token")

    from stalwart_agents.gateway.core import console_client

    try:
        client = console_client(config)
    except ValueError as exc:
        raise InputError(f"the gateway cannot reach the console as configured: {exc}") from None

    async def main() -> None:
        import gc

        async with Gateway(config, client=client) as gateway:
            # What start-up made (modules, the SDK's models, the catalogue) lives as long as the
            # process: kept out of the collector's full passes, which otherwise walk all of it
            # again while a call waits (a few hundred ms on a loaded machine).
            gc.freeze()
            if args.http:  # uvicorn stops on SIGTERM and SIGINT by itself
                await serve_http(gateway, host=args.host, port=args.port, token=token)
            else:
                await _until_terminated(serve_stdio, gateway)

    anyio.run(main, backend_options=event_loop_options())
    return EXIT_OK


def event_loop_options() -> dict[str, bool]:
    """anyio's options for the gateway's event loop: uvloop's where it is installed (the
    `gateway` extra installs it), the standard library's otherwise.

    Every `tools/call` crosses two MCP hops in this process (the client's, the upstream's), each a
    few reads, writes and task switches of the loop: uvloop's take about 8% of the gateway's
    CPU per call off (benchmarks/README.md, "The gateway")."""
    import importlib.util

    return {"use_uvloop": importlib.util.find_spec("uvloop") is not None}


#: What `approve` pins of each server, in its words.
LISTED = {
    "tools": "tools",
    "prompts": "prompts",
    "resources": "resources",
    "templates": "resource templates",
}


def _approve(args: argparse.Namespace) -> int:
    import anyio

    from stalwart_agents.gateway import pins as pinning
    from stalwart_agents.gateway.upstream import Upstream, server_said

    config = _config(args)
    _logging(args)
    names = args.server or list(config.servers)
    unknown = [name for name in names if name not in config.servers]
    if unknown:
        raise InputError(f"`{unknown[0]}` is not a server of `{args.config}`")
    try:
        pins = pinning.load_pins(config.pins)
    except pinning.PinsInvalid as exc:
        raise InputError(str(exc)) from None

    texts: dict[str, dict[str, list]] = {}  # each server's prompts without arguments: their text
    unpinned: dict[tuple[str, str], str] = {}  # (server, prompt): why its text is not pinned

    async def listed(name: str) -> tuple[dict[str, list[dict]], str | None]:
        upstream = Upstream(config.servers[name])
        found: dict[str, list[dict]] = {}
        async with anyio.create_task_group() as group:
            group.start_soon(upstream.run)
            with anyio.move_on_after(upstream.config.timeout):
                await upstream.ready.wait()
            found["tools"], error = list(upstream.tools), upstream.error
            if not upstream.ready.is_set():
                error = f"the server `{name}` did not answer within {upstream.config.timeout:g} s"
            for kind in ("prompts", "resources", "templates"):
                if error is not None:
                    break
                try:
                    found[kind] = await upstream.listed(kind)
                except Exception as exc:  # noqa: BLE001 - that server is not approved, saying why
                    said = server_said(str(exc))
                    error = f"the server `{name}` cannot list its {LISTED[kind]}: {said}"
            texts[name] = {}
            for prompt in found.get("prompts", []) if error is None else ():
                if prompt["arguments"]:  # its text is made from them: not one text to pin
                    continue
                try:
                    with anyio.fail_after(upstream.config.timeout):
                        got = await upstream.connected().get_prompt(prompt["name"], {})
                except Exception as exc:  # noqa: BLE001 - its definition is pinned all the same
                    unpinned[(name, prompt["name"])] = server_said(str(exc))
                    continue
                dumped = got.model_dump(by_alias=True, mode="json", exclude_none=True)
                texts[name][prompt["name"]] = dumped.get("messages", [])
            await upstream.close()
            group.cancel_scope.cancel()
        return found, error

    async def every() -> dict[str, tuple[dict[str, list[dict]], str | None]]:
        found: dict[str, tuple[dict[str, list[dict]], str | None]] = {}

        async def one(name: str) -> None:
            found[name] = await listed(name)

        async with anyio.create_task_group() as group:
            for name in names:
                group.start_soon(one, name)
        return found

    failed = 0
    results = anyio.run(every)
    for name in names:
        found, error = results[name]
        if error is not None:
            sys.stdout.write(f"{name}: not approved: {error}\n")
            failed += 1
            continue
        held = {"servers": {name: pins.get("servers", {}).get(name, {})}}  # before this approval
        pins = pinning.pin_server(
            pins,
            name,
            found["tools"],
            prompts=found["prompts"],
            resources=found["resources"],
            templates=found["templates"],
            texts=texts.get(name),
        )
        counts = ", ".join(
            f"{len(found[kind])} {LISTED[kind][:-1] if len(found[kind]) == 1 else LISTED[kind]}"
            for kind in pinning.PINNED
        )
        sys.stdout.write(f"{name}: {counts} approved\n")
        for kind, key in pinning.PINNED.items():
            # tools and prompts are named after their server; resources by their own URI
            prefix = f"{name}." if key == "name" else ""
            before = {
                pinned: pinning.approved(held, name, pinned, kind)
                for pinned in held["servers"][name].get(kind, {})
            }
            for defined in found[kind]:
                old = before.pop(defined[key], None)
                mark = "new" if old is None else ("changed" if old != defined else "same")
                sys.stdout.write(
                    f"  {prefix}{defined[key]} ({mark}) {pinning.digest(defined)[:16]}\n"
                )
                if kind == "prompts" and (name, defined[key]) in unpinned:
                    why = unpinned[(name, defined[key])]
                    sys.stdout.write(f"    its text is not pinned: the server answered: {why}\n")
            for gone in sorted(before):
                sys.stdout.write(f"  {prefix}{gone} (gone)\n")
        if len(found["resources"]) > pinning.MAX_RESOURCES:
            sys.stdout.write(
                f"  {len(found['resources']) - pinning.MAX_RESOURCES} resources past the first "
                f"{pinning.MAX_RESOURCES} are not pinned: withheld unless `new_resources: allow`\n"
            )
    pinning.write_pins(config.pins, pins)
    sys.stdout.write(f"pins written to {config.pins}\n")
    return EXIT_FINDINGS if failed else EXIT_OK


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="the gateway's configuration (gateway.yaml)")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP, not stdio")
    parser.add_argument("--host", default="127.0.0.1", help="the address to serve HTTP on")
    parser.add_argument("--port", type=int, help="the port to serve HTTP on (with --http)")
    parser.add_argument(
        "--token-env",
        metavar="NAME",
        help="the environment variable holding the bearer token HTTP clients must send "
        "(default: http_token_env in gateway.yaml)",
    )
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.set_defaults(handler=_serve)
    commands = parser.add_subparsers(dest="command", metavar="<command>")
    approve = commands.add_parser(
        "approve",
        help="pin the tools, prompts and resources each server lists now (writes the pins file "
        "beside gateway.yaml)",
        description="Connect to each server, list its tools, prompts, resources and resource "
        "templates, and pin their definitions (names, descriptions, schemas, annotations, "
        "arguments, URIs, MIME types). One that changes later is withdrawn until approved again.",
    )
    approve.add_argument("--config", dest="approve_config", help="the gateway's configuration")
    approve.add_argument("--server", action="append", help="approve only this server (repeatable)")
    approve.add_argument("--verbose", action="store_true", dest="approve_verbose")
    approve.set_defaults(handler=_approve_command)


def _approve_command(args: argparse.Namespace) -> int:
    args.config = args.approve_config or args.config
    args.verbose = args.approve_verbose or args.verbose
    return _approve(args)
