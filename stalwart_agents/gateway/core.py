"""The gateway's one path for a `tools/call`: the session's tool check, the firewall, a person, once.

The gateway is a door: it opens one SDK session (`stalwart_agents.Client().session`, in this
process, or against the console with `STALWART_URL`: decided there, or here from its signed bundle
with `STALWART_DECIDE=local`; see `console_client`) over the catalogue built from the servers,
and every call the client makes takes this path:

0. the person's turns the client sent with the call (`_meta` `stalwart/turns`), where gateway.yaml
   trusts them (`turns: from_client`), read by the session as every door hands them on (`hear`);
   a value that cannot be read refuses the call;
1. the tool, known from the servers and approved as it is now (`pins`), on a server that answers;
   otherwise the call is refused, or answered with why it cannot be made;
2. the firewall policy gateway.yaml names, at the `tool_call` stage (pure, in this process), and
   deciding from the console's bundle, the organisation's published policy too, the stricter
   answer winning (`door_firewall`; its decisions recorded in the decision log);
3. where it allows the call (or there is none), the tool check is the executor's: one check per
   call. `session.execute` checks it, and runs it once per intent (the executor's idempotency key
   for writes), forwarding to the server, and records the result in the signed history, with the
   outside-content labels of the tool's marks, so a later write is `tainted_call`; a refusal comes
   back with its reasons (nothing forwarded, nothing undone), a `confirm` with its request
   (nothing run) for step 5;
4. where the firewall denies, holds, cleans or audits the call, `session.check_tool_call` first
   (`refuse` ends it, with the reasons), then the firewall's answer: `deny` refuses,
   `require_approval` asks a person, `sanitize` goes on with the cleaned arguments (checked
   again);
5. a `confirm` (of either) is put to the person: in this process through the client's MCP
   elicitation (on a yes, the session signs a token for exactly that call), or against the console
   through its approvals queue (`session.wait_for_approval`, bounded by `approval_timeout`);
   nobody to ask, or a no, and nothing runs; a yes runs it through `session.execute` with the
   token (that check, with the token, is the one that allows it).

Whatever cannot answer -- a server, the catalogue, the console, the firewall -- means the call is
not made, and the error says why (`Refusal`). An MCP tool error (`isError: true`) carries it.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types as types

from guard.engine import canonical_json
from guard.engine.canonical import is_json
from router.engine.phrases import visible
from stalwart_agents.client import (
    ApprovalDenied,
    ApprovalTimeout,
    Check,
    Client,
    ConnectedSession,
    LocalSession,
    RequestRefused,
    SelectorUnavailableError,
    Session,
)
from stalwart_agents.door_firewall import (
    Heard,
    cleaned_arguments,
    door_firewall,
    firewall_rule,
)

from . import catalogue as catalogue_builder
from . import pins as pinning
from . import turns as said
from .config import GatewayConfig
from .upstream import Upstream, server_said

log = logging.getLogger("stalwart.gateway")

#: The key of the gateway's own elicitation among a modern request's input requests.
CONFIRM_KEY = "stalwart_confirm"
CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Run this call",
            "description": "Yes runs it once, with exactly the arguments shown.",
        }
    },
    "required": ["approve"],
}
ORIGIN_WORDS = {
    "model": "written by the model",
    "typed": "typed by the person",
    "tool": "returned by a tool",
}
PENDING_TTL = 900.0
MAX_PENDING = 1_000
MAX_SHOWN = 400
#: Calls that may wait in the console's approvals queue at once, each on a worker thread of its
#: own for up to `approval_timeout`; one more is refused at once. They have threads of their own
#: (not the 40 every other `to_thread` call shares), so however many a client sends, the checks
#: against the console and the reports to it go on.
MAX_WAITING = 32

#: elicit(message, schema) -> the client's answer, for a client with a back-channel.
Elicit = Callable[[str, dict[str, Any]], Awaitable[types.ElicitResult]]


class Refusal(Exception):
    """A call not made: the reasons, for the MCP tool error."""

    def __init__(self, reasons: list[str], message: str) -> None:
        super().__init__(message)
        self.reasons = reasons


class Unchecked(Refusal):
    """A call not made that no check recorded (a withdrawn tool, a server down, a tool check or
    firewall that cannot answer, an answer to an unknown question): `Gateway.call_tool` records it
    as an event, on stderr and to the console."""


@dataclass
class Pending:
    """A confirm put to a modern client as an input request, waiting for its retry."""

    tool: str
    arguments: dict[str, Any]
    forwarded: dict[str, Any]
    check: Check
    reasons: list[str]
    created: float


def error_result(reasons: list[str], message: str) -> types.CallToolResult:
    text = message if not reasons else f"{message} ({', '.join(reasons)})"
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content={"stalwart": {"decision": "refuse", "reasons": reasons}},
        is_error=True,
    )


def outside_failure(server: str, labels: list[str], exc: BaseException | None) -> str:
    """Why a call of a server whose words are outside content failed, in the gateway's words
    only. Its error message is its words as much as a result is, but a failed call records no
    result to label: an instruction injected there would reach the client unlabelled. The
    client gets the error's code, or the gateway's own reason (no answer in time, the
    connection gone)."""
    from mcp.shared.exceptions import MCPError

    code = exc.error.code if isinstance(exc, MCPError) else None
    if code == types.REQUEST_TIMEOUT or isinstance(exc, TimeoutError):
        why = "it did not answer in time"
    elif code == types.CONNECTION_CLOSED:
        why = "its connection closed"
    elif code is not None:
        why = f"it answered with error {code}"
    elif isinstance(exc, OSError) and exc.strerror:
        why = exc.strerror
    else:
        why = "the call failed"
    return (
        f"{why} (what `{server}` writes is outside content, {', '.join(labels)}: "
        "its message is not handed on)"
    )


def unrecordable(name: str, server: str) -> types.CallToolResult:
    """What stands for a server's answer that the session's history cannot hold (canonical JSON
    has no form for an integer past 2**53, text that is not Unicode, nesting past 64 levels):
    the call ran, and its answer is not handed on."""
    return types.CallToolResult(
        content=[
            types.TextContent(
                type="text",
                text=f"`{name}` ran on `{server}`, but its answer is not handed on: it holds a "
                "value with no canonical JSON form (an integer past 2**53, text that is not "
                "Unicode, or nesting past 64 levels)",
            )
        ],
        is_error=True,
    )


def handed_on(result: Any) -> Any:
    """A server's result as the gateway hands it to the client: without its `_meta`. That is the
    answering server's word about the exchange (the 2026-07-28 `serverInfo` stamp, which the SDK
    adds only where a result has none; keys of the gateway's own `stalwart/` prefix), and the
    gateway is the one answering the client, as the client's `_meta` never reaches a server."""
    return result if result.meta is None else result.model_copy(update={"meta": None})


def _shown(value: Any) -> tuple[str, int]:
    """A value as the question shows it (every character visible), and how many characters of
    it are not shown."""
    text = visible(json.dumps(value, ensure_ascii=False, default=str))
    left = max(0, len(text) - MAX_SHOWN)
    if not left:
        return text, 0
    return f"{text[:MAX_SHOWN]}... ({left} more characters not shown)", left


def question(
    tool: str, arguments: Mapping[str, Any], reasons: list[str], check: Check, *, asked: str = ""
) -> str:
    """What the person is shown: the question in words (`asked`, from the tool's description and
    its parameters' titles), then the call, why it is held, each argument and its origin."""
    shown = (
        check.detail.get("arguments") if isinstance(check.detail.get("arguments"), dict) else None
    )
    origins = check.detail.get("origins") if isinstance(check.detail.get("origins"), dict) else {}
    lines = [asked] if asked else []
    lines += [f"Stalwart holds a call for your yes: {tool}", f"Why: {', '.join(reasons)}"]
    cut = 0
    if arguments:
        lines.append("Arguments:")
        for name, value in arguments.items():
            held = shown.get(name) if shown is not None else None
            where = None
            text, left = _shown(value)
            if isinstance(held, Mapping):
                # the check's own view: a secret argument is shown masked, with its origin
                text, left = _shown(held.get("value", value))
                where = held.get("origin")
            cut += left
            origin = origins.get(name)
            if isinstance(origin, Mapping):
                where = origin.get("origin", where)
            label = ORIGIN_WORDS.get(str(where), str(where)) if where else None
            lines.append(f"  {visible(str(name))} = {text}" + (f"  ({label})" if label else ""))
    labels = check.detail.get("labels")
    if labels:
        lines.append(f"Outside content read earlier in this session: {', '.join(labels)}")
    if cut:
        lines.append(
            f"Not shown: {cut} characters of values too long to show here, which run with the "
            "rest. Say no unless you know what they hold."
        )
    lines.append("Yes runs it once, with exactly these arguments; no runs nothing.")
    return "\n".join(lines)


def accepted(answer: Any) -> bool:
    """A yes: the form accepted, with `approve: true` (anything else is a no)."""
    if isinstance(answer, Mapping):
        action, content = answer.get("action"), answer.get("content")
    else:
        action, content = getattr(answer, "action", None), getattr(answer, "content", None)
    return action == "accept" and isinstance(content, Mapping) and content.get("approve") is True


def approve(session: Session, check: Check, tool: str, arguments: Mapping[str, Any]) -> str:
    """The session's token for a person's yes to exactly this call (in this process): the
    runtime signs it (`session.approve`), once per request; against the console it is the
    approvers' queue that answers (`SelectorUnavailableError` here)."""
    if check.approval:
        return str(session.approve(check))
    if isinstance(session, LocalSession):  # held after the check (the firewall): the host's yes
        return session.approve_call(tool, arguments)
    raise SelectorUnavailableError("this session's approvals are answered by the console")


#: What each listing the pins hold is called in the gateway's events (`gateway.<noun>_withdrawn`).
NOUNS = {
    "tools": "tool",
    "prompts": "prompt",
    "resources": "resource",
    "templates": "resource_template",
}
#: What of a definition may change (a rug pull), in the refusal's words.
CHANGES = {
    "prompts": "description or arguments",
    "resources": "name, description or MIME type",
    "templates": "name, description or MIME type",
}
#: Withheld definitions reported once each (the newest this many remembered).
MAX_REPORTED = 1_000

#: Ids of the person's turns remembered as read (a turn sent again under its id is read once).
MAX_HEARD = 1_000
#: Events kept for the console while it cannot be reached (the oldest are dropped beyond this).
MAX_QUEUED = 1_000
#: Events per report (the console's bound).
EVENTS_PER_REPORT = 100
#: Seconds between two reports when nothing changed: the console shows a gateway that has not
#: reported for three of these (`console.gateways.SILENT_AFTER`) as not reporting.
HEARTBEAT = 60.0
#: Seconds a stopping gateway gives its last report (`state: stopped`) before it exits anyway.
STOP_REPORT_TIMEOUT = 5.0


def _bounded(diff: list[str]) -> list[str]:
    """A diff within what the console takes (200 lines of at most 500 characters)."""
    return [line if len(line) <= 500 else line[:497] + "..." for line in diff[:200]]


class Reporter:
    """What a gateway tells the console (`POST /v1/gateways/<name>/report`): its servers and their
    tools at start and on every change, with the events of the change (a tool withdrawn, with its
    diff; a call its firewall file decided). Sent from a task of its own, never on a call's path;
    a console that cannot answer is retried with backoff, and a report it refuses is logged."""

    def __init__(
        self,
        client: Client,
        name: str,
        state: Callable[[], dict[str, Any]],
        *,
        instance: str = "",
        host: str = "",
    ) -> None:
        self.client = client
        self.name = name
        self.state = state
        # Who this gateway is among those of its name: sent with every report (one console row
        # per organisation, name and instance).
        self.identity = {"instance": instance, "host": host}
        self.events: list[dict[str, Any]] = []
        self.wake = anyio.Event()
        self.sent = 0  # reports the console accepted
        self.error: str | None = None

    def note(self, event: Mapping[str, Any] | None = None) -> None:
        if event is not None:
            self.events.append(dict(event))
            del self.events[:-MAX_QUEUED]
        self.wake.set()

    @property
    def path(self) -> str:
        from urllib.parse import quote

        return f"/v1/gateways/{quote(self.name, safe='')}/report"

    async def run(self) -> None:
        """Report on every change, and every `HEARTBEAT` seconds with nothing new (so the console
        can tell a gateway that is gone from one with nothing to say)."""
        backoff = 0.5
        while True:
            with anyio.move_on_after(HEARTBEAT):
                await self.wake.wait()
            self.wake = anyio.Event()
            events, self.events = self.events[:EVENTS_PER_REPORT], self.events[EVENTS_PER_REPORT:]
            if self.events:
                self.wake.set()
            body = {"servers": self.state(), "events": events, **self.identity}
            try:
                await anyio.to_thread.run_sync(self.client.post, self.path, body)
            except SelectorUnavailableError as exc:
                self.error = str(exc)
                log.warning("gateway: the console cannot take the report: %s", exc)
                self.events[:0] = events
                del self.events[:-MAX_QUEUED]
                await anyio.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                self.wake.set()
                continue
            except RequestRefused as exc:
                self.error = f"the console refused the report: {exc}"
                log.error("gateway: %s", self.error)
                continue
            backoff = 0.5
            self.error = None
            self.sent += 1

    async def stopped(self, servers: dict[str, Any]) -> None:
        """The last report, as the gateway stops: its servers as they were (`servers`, taken
        before their connections closed), the events not yet sent, and `state: stopped`, so the
        console shows it stopped rather than silent. Given at most `STOP_REPORT_TIMEOUT` seconds;
        a console that cannot take it is logged, and the console shows the gateway as not
        reporting once its heartbeats stop."""
        body = {
            "servers": servers,
            "events": self.events[:EVENTS_PER_REPORT],
            **self.identity,
            "state": "stopped",
        }
        with anyio.move_on_after(STOP_REPORT_TIMEOUT) as waited:
            try:
                await anyio.to_thread.run_sync(
                    self.client.post, self.path, body, abandon_on_cancel=True
                )
                self.sent += 1
                return
            except (SelectorUnavailableError, RequestRefused) as exc:
                self.error = f"the console did not take the last report: {exc}"
        if waited.cancelled_caught:
            self.error = (
                f"the console did not take the last report within {STOP_REPORT_TIMEOUT:g} s"
            )
        log.warning("gateway: %s", self.error)


def console_client(config: GatewayConfig, environ: Mapping[str, str] | None = None) -> Client:
    """The SDK's client the gateway opens its session with: `STALWART_URL` and `STALWART_API_KEY`
    (no URL: in this process); against the console, deciding where gateway.yaml's `console.decide`
    says, else `STALWART_DECIDE` (`local`: in this process from the console's signed bundle,
    verified with the key in `console.bundle_key_env`, else `STALWART_BUNDLE_KEY`). The same
    client as `Agent.chat`'s and the framework doors', so the same bundle feed and decision-log
    spool. A `ValueError` names what is missing (local deciding without a URL or a key)."""
    import os

    env = os.environ if environ is None else environ
    bundle_key = None
    if config.bundle_key_env is not None:
        bundle_key = env.get(config.bundle_key_env, "")
        if not bundle_key.strip():
            raise ValueError(
                f"console.bundle_key_env: the environment variable `{config.bundle_key_env}` "
                "holds no bundle key"
            )
    return Client(decide=config.decide, bundle_key=bundle_key)


def _safe(text: str, outside: str, limit: int) -> str:
    """`text` as a name the console's report takes (what a client named may be anything)."""
    cleaned = re.sub(outside, "_", text)[:limit]
    return cleaned if cleaned[:1].isalnum() or cleaned[:1] == "_" else ("_" + cleaned)[:limit]


def _described(defined: Mapping[str, Any]) -> dict[str, Any]:
    """A resource's or resource template's pinned fields but its URI, as the client is given
    them: nothing the pins do not hold (a title, icons, annotations) is handed on."""
    return {
        "name": defined["name"],
        "description": defined["description"] or None,
        "mime_type": defined["mimeType"] or None,
    }


def _host() -> str:
    """This machine's name, as the console shows it beside the instance (printable, bounded)."""
    import socket

    name = "".join(c for c in socket.gethostname() if c.isprintable())
    return name.strip()[:255]


class Gateway:
    """Upstream servers, the catalogue from them, one session, and the path every call takes."""

    def __init__(
        self,
        config: GatewayConfig,
        *,
        client: Client | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self._owns_client = client is None  # closed with the gateway (its feeds and shipper)
        self.client = client or console_client(config, environ)
        self.upstreams = {
            name: Upstream(server, environ=environ) for name, server in config.servers.items()
        }
        self.entries: dict[str, catalogue_builder.Entry] = {}
        self.catalogue: dict[str, Any] = {"tools": []}
        self.session: Session | None = None
        self.session_error: str | None = None
        self.firewall: Any = None
        self.firewall_error: str | None = None
        self.pins: dict[str, Any] = {"servers": {}}
        self.pins_error: str | None = None
        self.changed: dict[str, list[str]] = {}  # tools withdrawn since start, with the diff
        self.pending: dict[str, Pending] = {}
        # uri -> every server that lists it (a server names its resources itself), as last listed
        self.resources: dict[str, dict[str, None]] = {}
        # (kind, server) -> what the server listed last of `prompts`, `resources`, `templates`:
        # each name, URI or URI template, and why it is withheld (None: offered as approved)
        self.listings: dict[tuple[str, str], dict[str, str | None]] = {}
        # what was withheld and reported, (kind, server, key, why, digest); the newest kept
        self.reported: dict[tuple[str, ...], None] = {}
        self.heard: dict[str, None] = {}  # ids of the person's turns read (the newest kept)
        self._lock = anyio.Lock()
        self._waiting = anyio.CapacityLimiter(MAX_WAITING)  # calls in the console's queue
        self._group: Any = None
        self.reporter: Reporter | None = None
        for upstream in self.upstreams.values():
            upstream.on_connect = self._on_connect
        if self.client.remote:
            instance, why = pinning.instance_id(config.pins)
            if why is not None:
                log.warning("gateway: an instance id for this run only: %s", why)
            self.reporter = Reporter(
                self.client, config.agent, self.state, instance=instance, host=_host()
            )
            for upstream in self.upstreams.values():
                upstream.on_lost = lambda _: self.reporter.note()  # type: ignore[union-attr]

    # -- starting and stopping ----------------------------------------------------------------

    async def __aenter__(self) -> Gateway:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        for upstream in self.upstreams.values():
            self._group.start_soon(upstream.run)
        for upstream in self.upstreams.values():
            with anyio.move_on_after(upstream.config.timeout):
                await upstream.ready.wait()
            if not upstream.ready.is_set():
                upstream.error = (
                    f"the server `{upstream.name}` cannot be reached: it did not answer within "
                    f"{upstream.config.timeout:g} s"
                )
                upstream.abandon()
        self._load_firewall()
        self._load_pins()
        if self.reporter is not None:
            self._group.start_soon(self.reporter.run)
        self._open_session()
        if self.reporter is not None:
            self.reporter.note()
        return self

    async def __aexit__(self, *exc: object) -> None:
        servers = self.state() if self.reporter is not None else {}
        for upstream in self.upstreams.values():
            await upstream.close()
        self._group.cancel_scope.cancel()
        await self._group.__aexit__(None, None, None)
        if self.reporter is not None:
            await self.reporter.stopped(servers)
        if self._owns_client:
            self.client.close()

    def _load_firewall(self) -> None:
        if self.config.firewall is None:
            return
        from stalwart_agents.chat import FirewallFileError, LocalFirewall

        try:
            self.firewall = LocalFirewall(self.config.firewall)
        except (OSError, FirewallFileError) as exc:
            self.firewall_error = f"the firewall cannot answer: {exc}"
            log.error("gateway: %s", self.firewall_error)

    def _load_pins(self) -> None:
        try:
            self.pins = pinning.load_pins(self.config.pins)
        except pinning.PinsInvalid as exc:
            self.pins_error = f"the pinned tools cannot be read: {exc}"
            log.error("gateway: %s", self.pins_error)
            self.pins = {"servers": {}}

    def _open_session(self) -> None:
        # A server down at start stands in the catalogue with its tools as approved: once it
        # connects, what it lists is held against those pins (`_on_connect`).
        listed = {
            name: up.tools if up.client is not None else self._pinned(name)
            for name, up in self.upstreams.items()
        }
        try:
            self.catalogue, self.entries = catalogue_builder.build(self.config, listed, self.pins)
        except catalogue_builder.CatalogueUnusable as exc:
            self.session_error = str(exc)
            log.error("gateway: %s", exc)
            return
        for entry in self.entries.values():
            if entry.withdrawn:
                self._report_withdrawn(entry, at_start=True)
        self.catalogue["tools"].extend(self._content_tools())
        # One agent reaches every tool of the servers: the console's sessions name their agent.
        names = [tool["name"] for tool in self.catalogue["tools"]]
        self.catalogue["agents"] = {self.config.agent: {"tools": names}}
        try:
            rulebook = self._rulebook()
        except Refusal as exc:
            self.session_error = str(exc)
            log.error("gateway: %s", exc)
            return
        try:
            self.session = self.client.session(
                self.config.agent, catalogue=self.catalogue, rulebook=rulebook
            )
        except (SelectorUnavailableError, RequestRefused) as exc:
            self.session_error = f"the tool check cannot answer: {exc}"
            log.error("gateway: %s", self.session_error)

    def _rulebook(self) -> dict[str, Any] | None:
        """The compiled record of gateway.yaml's `rulebook`, or a `Refusal` saying why not."""
        path = self.config.rulebook
        if path is None:
            return None
        from rulebooks.compiler.sources import RulebookNotHeld, hold_rulebook

        try:
            return hold_rulebook(path.read_bytes(), filename=path.name)
        except OSError as exc:
            why = f"`{path.name}` cannot be read: {exc.strerror or exc}"
        except RulebookNotHeld as exc:
            why = f"`{path.name}`: {exc}"
        raise Refusal(["rulebook_not_held"], f"the rulebook cannot be held: {why}")

    def _pinned(self, server: str) -> list[dict[str, Any]]:
        tools = self.pins.get("servers", {}).get(server, {}).get("tools", {})
        return [
            dict(pin["definition"])
            for pin in tools.values()
            if isinstance(pin, Mapping) and isinstance(pin.get("definition"), Mapping)
        ]

    def _content_tools(self) -> list[dict[str, Any]]:
        """Catalogue entries that stand for reading a server's resources and prompts.

        They are never offered to the client; reading a resource or a prompt of a server marked
        `resources_outside` is recorded as a call of `<server>.__resources__`, so what it returned
        labels the session as outside content does.
        """
        tools = []
        for name, server in self.config.servers.items():
            if server.resources_outside:
                tools.append(
                    {
                        "name": f"{name}.{catalogue_builder.CONTENT_TOOL}",
                        "description": f"reading a resource or prompt of {name}",
                        "kind": "read",
                        "parameters": {
                            "type": "object",
                            "properties": {"uri": {"type": "string"}},
                        },
                        "reads_outside": list(server.resources_outside),
                    }
                )
        return tools

    def _report_withdrawn(self, entry: catalogue_builder.Entry, *, at_start: bool) -> None:
        before = pinning.approved(self.pins, entry.server, entry.tool)
        diff = pinning.diff(before, entry.definition) if entry.withdrawn == "changed" else None
        at = "start" if at_start else "tools/list"
        self._report("tools", entry.server, entry.name, entry.withdrawn or "", at, diff)

    def _report(
        self, kind: str, server: str, name: str, why: str, at: str, diff: list[str] | None
    ) -> None:
        """Something of a server withdrawn (a tool, prompt, resource or resource template; `name`
        as the client knows it): an event, `gateway.<noun>_withdrawn`, on stderr and to the
        console, with the diff from the approved definition where it changed. Credentials the
        one table of recognisers knows are redacted from it, as from every event."""
        from firewall.engine.credentials import redact_value

        noun = NOUNS[kind]
        event = {"event": f"gateway.{noun}_withdrawn", noun: name, "server": server, "why": why}
        event["at"] = at
        if diff is not None:
            event["diff"] = diff
        event = redact_value(event)
        log.warning("gateway event: %s", json.dumps(event, ensure_ascii=False))
        if self.reporter is not None:
            self.reporter.note(
                {
                    "kind": f"{noun}_withdrawn",
                    "server": server,
                    "tool": _safe(event[noun], r"[^A-Za-z0-9_.:/-]", 200),
                    "why": why,
                    "at": at,
                    "diff": _bounded(event.get("diff", [])),
                }
            )

    def state(self) -> dict[str, Any]:
        """Each server's state and its tools, pinned or withdrawn (what the console page shows)."""
        servers: dict[str, Any] = {}
        for name, upstream in self.upstreams.items():
            tools = []
            for entry in self.entries.values():
                if entry.server != name:
                    continue
                changed = self.changed.get(entry.name)
                why = "changed" if changed is not None else (entry.withdrawn or "")
                diff = changed or []
                if entry.withdrawn == "changed":
                    diff = pinning.diff(
                        pinning.approved(self.pins, name, entry.tool), entry.definition
                    )
                tools.append(
                    {
                        "name": entry.tool,
                        "digest": pinning.digest(entry.definition),
                        "kind": entry.kind if entry.kind in ("read", "write") else "unknown",
                        "status": "withdrawn" if why else "pinned",
                        "why": why,
                        "diff": _bounded(diff),
                    }
                )
            down = upstream.client is None
            servers[name] = {
                "state": "down" if down else "connected",
                "error": (upstream.error or "")[:500],
                "tools": tools[:500],
            }
        return servers

    # -- tools/list -----------------------------------------------------------------------------

    async def list_tools(self) -> list[types.Tool]:
        """The approved tools of every server that answers, listed again now.

        A tool whose definition changed since it was approved is withdrawn from here on (it is
        no longer offered, and a call of it is refused), and the change is reported with its diff.
        """
        offered = []
        for upstream in self.upstreams.values():
            if upstream.client is None:
                continue
            try:
                now = await upstream.list_tools()
            except Exception as exc:  # noqa: BLE001 - an upstream that fails to list offers nothing
                log.warning(
                    "gateway: the server `%s` cannot list its tools: %s",
                    upstream.name,
                    server_said(str(exc)),
                )
                continue
            upstream.tools = now
            offered.extend(self._compare(upstream.name, now))
        return offered

    def _compare(self, server: str, now: list[dict[str, Any]]) -> list[types.Tool]:
        """The tools of `server` as it lists them now that are still as approved; one changed since
        is withdrawn from here on, and the change reported with its diff."""
        offered = []
        for defined in now:
            name = f"{server}.{defined.get('name')}"
            entry = self.entries.get(name)
            if entry is None or entry.withdrawn or name in self.changed:
                continue
            if pinning.digest(defined) != pinning.digest(entry.definition):
                self.changed[name] = pinning.diff(entry.definition, defined)
                self._report_withdrawn(
                    replace(entry, definition=defined, withdrawn="changed"), at_start=False
                )
                continue
            offered.append(self._tool_of(entry))
        return offered

    async def _on_connect(self, upstream: Upstream) -> None:
        """A server connected (again): what it lists now is held against the pins, as on a
        `tools/list` (a server restarted with other tools offers none of the changed ones)."""
        if self.entries:
            self._compare(upstream.name, upstream.tools)
        for kind in ("prompts", "resources", "templates"):  # listed again before they are used
            self.listings.pop((kind, upstream.name), None)
        if self.reporter is not None:
            self.reporter.note()

    async def _reachable(self, name: str) -> None:
        """The call's server is connected, or connected again now; else a `Refusal` saying why."""
        upstream = self.upstreams.get(name.partition(".")[0])
        if upstream is None or upstream.client is not None:
            return
        was_down = upstream.failures
        if await upstream.reconnect():
            return
        if self.reporter is not None and upstream.failures != was_down:
            self.reporter.note()
        raise Unchecked(
            ["upstream_unavailable"], upstream.down() or f"`{upstream.name}` is not connected"
        )

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema of `name` as `tools/list` offers it (the approved definition's), for
        the HTTP transport's `Mcp-Param-*` header check on each `tools/call`: without it the SDK
        runs the `tools/list` handler for every call, a round trip to the upstream each time.
        None for a tool not offered (unknown, withdrawn, changed): the call is refused anyway."""
        entry = self.entries.get(name)
        if entry is None or entry.withdrawn or name in self.changed:
            return None
        return entry.definition.get("inputSchema") or {"type": "object"}

    @staticmethod
    def _tool_of(entry: catalogue_builder.Entry) -> types.Tool:
        defined = entry.definition
        annotations = defined.get("annotations") or None
        return types.Tool(
            name=entry.name,
            description=defined.get("description") or None,
            input_schema=defined.get("inputSchema") or {"type": "object"},
            annotations=types.ToolAnnotations.model_validate(annotations) if annotations else None,
        )

    # -- tools/call -----------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        elicit: Elicit | None = None,
        input_required: bool = False,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        turns: Any = None,
        turns_vouched: bool = False,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """One call from the client, decided and (only as decided) forwarded once.

        `elicit` asks the person over the client's back-channel (a client that declared
        elicitation, on a connection that has one); `input_required` says the client takes
        an `InputRequiredResult` instead (the 2026-07-28 protocol), retried with its answer in
        `input_responses` and the `request_state` it was given. `turns` is the request's
        `_meta` `stalwart/turns` as sent (None: not sent), `turns_vouched` whether its transport
        vouches for the client (stdio, or an HTTP request with the bearer token); see `hear`.
        """
        arguments = dict(arguments or {})
        try:
            if turns is not None and request_state is None:
                await self.hear(name, turns, vouched=turns_vouched)
            if request_state is not None:
                return await self._resume(name, arguments, input_responses, request_state)
            return await self._call(name, arguments, elicit, input_required)
        except Refusal as refused:
            if isinstance(refused, Unchecked):
                self._note_refused(name, refused)
            else:
                log.info("gateway: %s not made: %s", name, ", ".join(refused.reasons) or refused)
            return error_result(refused.reasons, str(refused))

    # -- the person's turns ---------------------------------------------------------------------

    async def hear(self, name: str, value: Any, *, vouched: bool) -> None:
        """Hand the person's turns a client sent with a call to the session (`Session.read`, as
        every door does), before the call is checked; see `turns` for the format.

        Ignored unless gateway.yaml says `turns: from_client` and the transport vouches for the
        client. A value that cannot be read refuses the call (`turns_invalid`, naming the field),
        and the refusal is recorded: on stderr as an event, and in the console's feed."""
        if self.config.turns != "from_client" or not vouched:
            log.debug("gateway: %s: the client's turns are ignored (turns: off)", name)
            return
        try:
            heard = said.read_turns(value)
        except said.TurnsInvalid as exc:
            raise Unchecked(
                ["turns_invalid"],
                f"`{name}` was not made: the person's turns cannot be read: {exc}",
            ) from None
        session = self.session
        if session is None:
            return  # the call is refused next, saying why (`_entry`)
        new = [turn for turn in heard if turn.id is None or turn.id not in self.heard]
        async with self._lock:
            try:
                for turn in new:
                    if isinstance(session, LocalSession):
                        session.read(turn.text)
                    else:
                        await anyio.to_thread.run_sync(session.read, turn.text)
                    if turn.id is not None:
                        self.heard[turn.id] = None
            except (SelectorUnavailableError, RequestRefused) as exc:
                raise Unchecked(
                    ["selector_unavailable"], f"the person's turns cannot be read: {exc}"
                ) from None
        while len(self.heard) > MAX_HEARD:
            self.heard.pop(next(iter(self.heard)))

    def _note_refused(self, name: str, refused: Refusal) -> None:
        """A call the gateway refused before any check: an event, on stderr and to the console."""
        event = {
            "event": "gateway.call_refused",
            "tool": name,
            "reasons": refused.reasons,
            "why": str(refused),
        }
        log.warning("gateway event: %s", json.dumps(event, ensure_ascii=False))
        if self.reporter is not None:
            self.reporter.note(
                {
                    "kind": "call_refused",
                    "server": _safe(name.partition(".")[0], r"[^A-Za-z0-9_.-]", 100),
                    "tool": _safe(name, r"[^A-Za-z0-9_.:/-]", 200),
                    "reasons": [str(r)[:64] for r in refused.reasons][:10],
                    "why": str(refused)[:500],
                    "session": str(getattr(self.session, "id", ""))[:128],
                }
            )

    def _entry(self, name: str) -> catalogue_builder.Entry | None:
        if self.session is None:
            raise Unchecked(
                ["selector_unavailable"], self.session_error or "the tool check cannot answer"
            )
        if self.firewall_error is not None:
            raise Unchecked(["firewall_unavailable"], self.firewall_error)
        if name in self.changed:
            raise Unchecked(
                ["withdrawn"],
                f"`{name}` is withdrawn: its description or schema changed since it was approved "
                "(stalwart gateway approve)",
            )
        entry = self.entries.get(name)
        if entry is not None and entry.withdrawn == "not_approved":
            raise Unchecked(
                ["withdrawn"],
                f"`{name}` is withdrawn: it is not approved (stalwart gateway approve)",
            )
        if entry is not None and entry.withdrawn == "changed":
            raise Unchecked(
                ["withdrawn"],
                f"`{name}` is withdrawn: its description or schema changed since it was approved "
                "(stalwart gateway approve)",
            )
        return entry

    async def _check(self, name: str, arguments: Mapping[str, Any], **given: Any) -> Check:
        session = self.session
        assert session is not None
        try:
            if isinstance(session, LocalSession):
                return session.check_tool_call(name, arguments, **given)
            return await anyio.to_thread.run_sync(
                lambda: session.check_tool_call(name, arguments, **given)
            )
        except SelectorUnavailableError as exc:
            raise Unchecked(["selector_unavailable"], f"the call was not made: {exc}") from None
        except RequestRefused as exc:
            raise Unchecked(
                ["selector_unavailable"], f"the console refused the check: {exc}"
            ) from None

    def _firewall(self, name: str, arguments: Mapping[str, Any]) -> tuple[Any, Any]:
        """The firewall's answer: gateway.yaml's file and, deciding from the console's bundle,
        the organisation's published policy (`door_firewall`), or None where none decides; and
        beside it the file's own answer (what the gateway reports: the organisation's is in the
        decision log already)."""
        if self.firewall_error is not None:
            raise Unchecked(["firewall_unavailable"], self.firewall_error)
        own = Heard(self.firewall) if self.firewall is not None else None
        firewall = door_firewall(own, self.session)
        if firewall is None:
            return None, None
        try:
            verdict = firewall.evaluate({"tool": name, "arguments": dict(arguments)})
        except SelectorUnavailableError as exc:
            raise Unchecked(["firewall_unavailable"], str(exc)) from None
        return verdict, own.answer if own is not None else None

    @staticmethod
    def _cleaned(verdict: Any, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        try:
            return cleaned_arguments(verdict, arguments)
        except SelectorUnavailableError as exc:
            raise Unchecked(["firewall_unavailable"], str(exc)) from None

    async def _call(
        self, name: str, arguments: dict[str, Any], elicit: Elicit | None, input_required: bool
    ) -> types.CallToolResult | types.InputRequiredResult:
        entry = self._entry(name)
        await self._reachable(name)
        # The firewall first: it is pure and local, and what it says decides whether the tool
        # check has the call to itself. A firewall that cannot answer refuses the call, after the
        # check's own refusal as before (`unanswered` is raised below, once the call is checked).
        unanswered = None
        try:
            verdict, own = self._firewall(name, arguments)
        except Refusal as exc:
            verdict, own, unanswered = None, None, exc
        if (
            entry is not None
            and unanswered is None
            and (verdict is None or verdict.verdict == "allow")
        ):
            # Only the tool check decides: the executor's check is the call's one check (one
            # decision in the logs, one check request and one event against the console). A
            # refusal comes back from it, a confirm with its request, asked as below.
            ran = await self._run(name, arguments, None, entry, confirm=True)
            if not isinstance(ran, Check):
                return ran
            token = await self._ask(
                name, arguments, arguments, ran, list(ran.reasons), elicit, input_required
            )
            if isinstance(token, types.InputRequiredResult):
                return token
            return await self._run(name, arguments, token, entry)
        # The firewall denies, holds, cleans or audits the call (or cannot answer), or no server
        # offers the tool: the check decides first, as the firewall's answer needs it.
        async with self._lock:
            check = await self._check(name, arguments)
        if check.decision == "refuse":
            raise Refusal(check.reasons, f"`{name}` is refused")
        if unanswered is not None:
            raise unanswered
        forwarded = arguments
        reasons = list(check.reasons) if check.decision == "confirm" else []
        if verdict is not None:
            rule = firewall_rule(verdict)
            if self.reporter is not None and own is not None and own.verdict != "allow":
                self.reporter.note(
                    {
                        "kind": "firewall",
                        "server": name.partition(".")[0],
                        "tool": name,
                        "decision": own.decision,
                        "verdict": str(own.verdict)[:32],
                        "rule": str(firewall_rule(own))[:200],
                        "session": str(getattr(self.session, "id", ""))[:128],
                    }
                )
            if verdict.decision == "refuse":
                raise Refusal([f"firewall: {rule}"], f"`{name}` is denied by the firewall")
            cleaned = self._cleaned(verdict, arguments)
            if cleaned is not None:
                forwarded = cleaned
                async with self._lock:
                    check = await self._check(name, forwarded)
                if check.decision == "refuse":
                    raise Refusal(check.reasons, f"`{name}` is refused with its cleaned arguments")
                reasons = list(check.reasons) if check.decision == "confirm" else []
            if verdict.decision == "confirm":
                reasons.append(f"firewall: {rule}")
        token = None
        if reasons:
            if entry is None:
                raise Refusal(["unknown_tool"], f"`{name}` is not a tool of these servers")
            token = await self._ask(
                name, arguments, forwarded, check, reasons, elicit, input_required
            )
            if isinstance(token, types.InputRequiredResult):
                return token
        return await self._run(name, forwarded, token, entry)

    async def _ask(
        self,
        name: str,
        arguments: dict[str, Any],
        forwarded: dict[str, Any],
        check: Check,
        reasons: list[str],
        elicit: Elicit | None,
        input_required: bool,
    ) -> str | types.InputRequiredResult:
        """A token for a person's yes to exactly `forwarded`, or a `Refusal`."""
        session = self.session
        assert session is not None
        if not isinstance(session, LocalSession):
            if not check.approval:
                raise Refusal(
                    reasons,
                    f"`{name}` needs a person and the console holds no approval request for it",
                )
            return await self._queued(session, name, check, reasons)
        if (
            isinstance(session, ConnectedSession)
            and check.approval
            and (
                (elicit is None and not input_required)
                or session.held({"tool": name, "arguments": forwarded})
            )
        ):
            # Decided here from the console's bundle, with no client to ask, or a write in a
            # session the console holds (its approvers answer it, never the client's person): the
            # console's queue answers, its signed grant verified before this process signs.
            return await self._queued(session, name, check, reasons)
        text = question(name, forwarded, reasons, check, asked=self.asked(name, forwarded))
        if elicit is not None:
            # A client that never answers (a window closed, a question dropped) does not hold
            # the call for ever: the person has `approval_timeout`, as in the console's queue.
            wait = self.config.approval_timeout
            try:
                with anyio.fail_after(wait):
                    answer = await elicit(text, CONFIRM_SCHEMA)
            except TimeoutError:
                raise Refusal(
                    reasons, f"`{name}` was not approved: nobody answered within {wait:g} s"
                ) from None
            except Exception as exc:  # noqa: BLE001 - an unanswered question is a no
                raise Refusal(
                    reasons, f"`{name}` was not approved: the question failed: {exc}"
                ) from None
            if not accepted(answer):
                raise Refusal(reasons, f"`{name}` was not approved: the person said no")
            return self._token(check, name, forwarded)
        if input_required:
            self._expire()
            state = secrets.token_urlsafe(24)
            self.pending[state] = Pending(
                name, arguments, forwarded, check, reasons, time.monotonic()
            )
            request = types.ElicitRequest(
                params=types.ElicitRequestFormParams(message=text, requested_schema=CONFIRM_SCHEMA)
            )
            return types.InputRequiredResult(
                input_requests={CONFIRM_KEY: request}, request_state=state
            )
        raise Refusal(
            reasons,
            f"`{name}` needs a person's yes and nobody can be asked: the client does not support "
            "elicitation, and no console is set (STALWART_URL)",
        )

    async def _queued(self, session: Session, name: str, check: Check, reasons: list[str]) -> str:
        """The token of a person's yes in the console's approvals queue, or a `Refusal`."""
        if self._waiting.available_tokens < 1:
            raise Refusal(
                reasons,
                f"`{name}` was not asked: {MAX_WAITING} calls already wait for a person in the "
                "console's queue",
            )
        try:
            return await anyio.to_thread.run_sync(
                lambda: session.wait_for_approval(check, timeout=self.config.approval_timeout),
                limiter=self._waiting,
            )
        except ApprovalDenied as exc:
            raise Refusal(reasons, f"`{name}` was not approved: {exc}") from None
        except ApprovalTimeout as exc:
            raise Refusal(reasons, f"`{name}` was not approved in time: {exc}") from None
        except (SelectorUnavailableError, RequestRefused, ValueError) as exc:
            raise Unchecked(["selector_unavailable"], f"the call was not made: {exc}") from None

    def asked(self, name: str, arguments: Mapping[str, Any]) -> str:
        """The confirm question in words, as every door asks it, from the server's own
        description of the tool and its input schema's titles (the session's catalogue)."""
        from stalwart_agents.runtime import asked_in_words

        wired = getattr(getattr(self.session, "runtime", None), "wired", None)
        return asked_in_words(wired, name, arguments)

    def _token(self, check: Check, name: str, forwarded: Mapping[str, Any]) -> str:
        assert self.session is not None
        try:
            return approve(self.session, check, name, forwarded)
        except (SelectorUnavailableError, ValueError) as exc:
            raise Unchecked(
                ["selector_unavailable"], f"the approval cannot be signed: {exc}"
            ) from None

    def _expire(self) -> None:
        now = time.monotonic()
        for state in [s for s, p in self.pending.items() if now - p.created > PENDING_TTL]:
            del self.pending[state]
        while len(self.pending) >= MAX_PENDING:
            self.pending.pop(next(iter(self.pending)))

    async def _resume(
        self,
        name: str,
        arguments: dict[str, Any],
        responses: Mapping[str, Any] | None,
        state: str,
    ) -> types.CallToolResult:
        pending = self.pending.pop(state, None)
        if pending is None or time.monotonic() - pending.created > PENDING_TTL:
            raise Unchecked(
                ["token_invalid"], f"`{name}`: the question it answers is unknown or expired"
            )
        if pending.tool != name or canonical_json(pending.arguments) != canonical_json(arguments):
            raise Unchecked(["token_mismatch"], f"`{name}`: the answer is for another call")
        answer = (responses or {}).get(CONFIRM_KEY)
        if hasattr(answer, "model_dump"):
            answer = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        if not accepted(answer):
            raise Refusal(pending.reasons, f"`{name}` was not approved: the person said no")
        entry = self._entry(name)
        await self._reachable(name)
        token = self._token(pending.check, name, pending.forwarded)
        return await self._run(name, pending.forwarded, token, entry)

    def _last_look(self, name: str, arguments: Mapping[str, Any], *, asked: bool) -> None:
        """Just before a call is checked by the executor and forwarded: the tool is still offered
        as approved (a `tools/list`, or its server connecting again, may have withdrawn it since
        it was looked up, the reconnection this call asked for included) and, after a person's
        yes (which may take minutes), the firewall as it is now still lets these arguments
        through."""
        self._entry(name)
        if not asked:
            return
        verdict, _ = self._firewall(name, arguments)
        if verdict is None:
            return
        if verdict.decision == "refuse" or self._cleaned(verdict, arguments) is not None:
            rule = firewall_rule(verdict)
            raise Unchecked(
                [f"firewall: {rule}"],
                f"`{name}` is denied by the firewall, which changed while the person was asked",
            )

    async def _run(
        self,
        name: str,
        arguments: dict[str, Any],
        token: str | None,
        entry: catalogue_builder.Entry | None,
        *,
        confirm: bool = False,
    ) -> types.CallToolResult | Check:
        """`session.execute`: checked (with the token, after a person's yes), forwarded once,
        recorded. A refusal of the check is a `Refusal` with its reasons (the run's earlier writes
        are not undone: the call was never made, as when the gateway refused it itself); with
        `confirm`, a `confirm` comes back as its `Check` (nothing ran), for the person to be
        asked, else it is a `Refusal`."""
        session = self.session
        assert session is not None
        if entry is None:  # the check allowed a tool no server offers: never forwarded
            raise Refusal(["unknown_tool"], f"`{name}` is not a tool of these servers")
        self._last_look(name, arguments, asked=token is not None)
        upstream = self.upstreams[entry.server]
        returned: dict[int, tuple[Any, types.CallToolResult]] = {}

        failed: list[BaseException] = []  # what the forwarding raised, if it did

        async def forward_async(arguments: dict[str, Any], context: Any) -> Any:
            try:
                result = await upstream.call_tool(entry.tool, arguments)
            except Exception as exc:
                failed.append(exc)
                raise
            dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            if not is_json(dumped, 1):  # the history holds it one level down, in canonical JSON
                # The call ran: it is recorded as run (counted, labelled), with an answer the
                # history can hold, rather than failing after the fact as if it never ran.
                result = unrecordable(name, entry.server)
                dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            returned[id(dumped)] = (dumped, result)  # handed back as it came, not parsed again
            return dumped

        def forward(arguments: dict[str, Any], context: Any) -> Any:  # the executor's form
            return anyio.from_thread.run(forward_async, arguments, context)

        async with self._lock:
            try:
                if isinstance(session, LocalSession):
                    # In this process the check and the record are pure CPU: they run on the
                    # event loop, and the upstream call is awaited there (no thread per call).
                    outcome = await session.execute_async(
                        name, arguments, forward_async, token=token, undo_on_refusal=False
                    )
                else:  # the console's HTTP round trips block: a worker thread waits for them
                    outcome = await anyio.to_thread.run_sync(
                        lambda: session.execute(
                            name, arguments, forward, token=token, undo_on_refusal=False
                        )
                    )
            except SelectorUnavailableError as exc:
                raise Unchecked(["selector_unavailable"], f"the call was not made: {exc}") from None
            except RequestRefused as exc:
                raise Unchecked(
                    ["selector_unavailable"], f"the console refused the call: {exc}"
                ) from None
            except Exception as exc:  # noqa: BLE001 - the runtime could not answer: fail closed
                raise Unchecked(
                    ["selector_unavailable"], f"`{name}`: the tool check could not answer: {exc}"
                ) from None
        kind = outcome.get("outcome")
        if kind == "CONFIRM" and confirm:
            detail = outcome.get("detail")
            return Check(
                "confirm",
                [str(r) for r in outcome.get("reasons") or []],
                dict(detail) if isinstance(detail, Mapping) else {},
                outcome.get("rule"),
                str(outcome["approval"]) if outcome.get("approval") else None,
            )
        if kind == "SUCCEEDED":
            result = outcome.get("result")
            held = returned.get(id(result))
            if held is not None and held[0] is result:
                return handed_on(held[1])
            return handed_on(types.CallToolResult.model_validate(result or {"content": []}))
        reasons = [str(r) for r in outcome.get("reasons") or []]
        if kind in ("REFUSED", "REJECTED", "CONFIRM"):
            raise Refusal(reasons, f"`{name}` is refused")
        error = str((outcome.get("detail") or {}).get("error") or ", ".join(reasons) or kind)
        error = re.sub(r"^[A-Z]\w*: ", "", error)  # the reason, not the exception's class name
        error = server_said(error)  # the server's own words: its credentials are not handed on
        labels = self._outside(name)
        if failed and labels:
            log.info("gateway: %s failed on `%s`: %s", name, entry.server, error)
            error = outside_failure(entry.server, labels, failed[0])
        raise Refusal(
            [str(kind).lower()], f"`{name}` did not complete on `{entry.server}`: {error}"
        )

    # -- resources and prompts ------------------------------------------------------------------

    def _outside(self, name: str) -> list[str]:
        """The outside-content labels of the tool `name`'s results, as the catalogue holds them."""
        for tool in self.catalogue.get("tools") or ():
            if tool.get("name") == name:
                return list(tool.get("reads_outside") or ())
        return []

    def _said(self, server: str, exc: BaseException) -> str:
        """A server's error reading a resource or getting a prompt, as the client is told it: in
        the gateway's words only where its resources and prompts are outside content."""
        labels = list(self.config.servers[server].resources_outside)
        if not labels:
            return server_said(str(exc))
        log.info("gateway: `%s` failed: %s", server, server_said(str(exc)))
        return outside_failure(server, labels, exc)

    def _record_content(self, server: str, uri: str, result: Any) -> None:
        if not self.config.servers[server].resources_outside or self.session is None:
            return
        content = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            self.session.record(f"{server}.{catalogue_builder.CONTENT_TOOL}", {"uri": uri}, content)
        except Exception as exc:  # noqa: BLE001 - unrecorded outside content must not be handed on
            raise Refusal(
                ["selector_unavailable"], f"the content cannot be recorded: {exc}"
            ) from None

    def _connected(self) -> list[Upstream]:
        return [u for u in self.upstreams.values() if u.client is not None]

    def _withheld(self, server: str, kind: str, defined: Mapping[str, Any]) -> str | None:
        """Why a prompt, resource or resource template of `server` is not offered (None: it is
        as approved). A resource its server did not list at the approval is offered only where
        gateway.yaml says `new_resources: allow`; one approved that changed never is."""
        why = pinning.status(self.pins, server, defined, kind)
        if (
            why == "not_approved"
            and kind == "resources"
            and self.config.servers[server].new_resources == "allow"
            and kind in self.pins.get("servers", {}).get(server, {})
        ):
            return None
        return why

    async def _held(self, upstream: Upstream, kind: str, at: str) -> list[dict[str, Any]]:
        """What `upstream` lists now of `kind` (`prompts`, `resources`, `templates`) that is
        offered as approved. The rest is withheld (kept, with why, in `listings`, so a use of it
        is refused naming why) and reported once (`_report`), with the diff where it changed."""
        marks: dict[str, str | None] = {}
        offered = []
        for defined in await upstream.listed(kind):
            key = str(defined[pinning.PINNED[kind]])
            if key in marks:  # listed twice: the first is kept
                continue
            why = marks[key] = self._withheld(upstream.name, kind, defined)
            if why is None:
                offered.append(defined)
                continue
            before = pinning.approved(self.pins, upstream.name, key, kind)
            diff = pinning.diff(before, defined) if why == "changed" else None
            self._report_once(kind, upstream.name, key, why, at, defined, diff)
        self.listings[(kind, upstream.name)] = marks
        return offered

    def _report_once(
        self,
        kind: str,
        server: str,
        key: str,
        why: str,
        at: str,
        found: Any,
        diff: list[str] | None,
    ) -> None:
        """`_report` what is withheld, once for each thing `found` (a definition, a text): a
        client listing again and again does not repeat it."""
        seen = (kind, server, key, why, pinning.digest({"found": found}))
        if seen in self.reported:
            return
        self.reported[seen] = None
        while len(self.reported) > MAX_REPORTED:
            self.reported.pop(next(iter(self.reported)))
        self._report(kind, server, self._shown(kind, server, key), why, at, diff)

    @staticmethod
    def _shown(kind: str, server: str, key: str) -> str:
        """A prompt as the client names it (`<server>.<prompt>`); a resource by its own URI."""
        return f"{server}.{key}" if pinning.PINNED[kind] == "name" else key

    def _withdrawn(self, kind: str, server: str, key: str, why: str) -> Refusal:
        """The refusal of a withheld prompt or resource's use, naming why."""
        what = f"the {NOUNS[kind].replace('_', ' ')} `{self._shown(kind, server, key)}`"
        again = "(stalwart gateway approve)"
        if why == "changed":
            text = f"is withdrawn: its {CHANGES[kind]} changed since it was approved {again}"
        elif why == "approve_again":
            text = (
                f"is withdrawn: `{server}` was approved before its prompts and resources were "
                "pinned: run `stalwart gateway approve` again"
            )
        elif kind == "resources" and server in self.pins.get("servers", {}):
            text = (
                f"is withheld: it was not listed when `{server}` was approved "
                f"(stalwart gateway approve, or `new_resources: allow` for `{server}` in "
                "gateway.yaml)"
            )
        else:
            text = f"is withdrawn: it is not approved {again}"
        return Refusal(["withdrawn"], f"{what} {text}")

    async def _offered(self, kind: str, at: str) -> list[tuple[str, dict[str, Any]]]:
        """What every connected server lists now of `kind` that is offered, by server."""
        found = []
        for upstream in self._connected():
            try:
                held = await self._held(upstream, kind, at)
            except Exception:  # noqa: BLE001 - a server that cannot list them offers none
                self.listings.pop((kind, upstream.name), None)
                continue
            found.extend((upstream.name, defined) for defined in held)
        return found

    async def list_resources(self, *, at: str = "resources/list") -> list[types.Resource]:
        """Every connected server's resources as approved. What the gateway reads from is this
        listing's, not every listing's since it started: a server naming a new address each time
        grows nothing, and an address no server lists now is not read."""
        offered = await self._offered("resources", at)
        listed: dict[str, dict[str, None]] = {}
        for (kind, server), marks in self.listings.items():
            if kind == "resources" and self.upstreams[server].client is not None:
                for uri in marks:
                    listed.setdefault(uri, {})[server] = None
        self.resources = listed
        return [types.Resource(uri=d["uri"], **_described(d)) for _, d in offered]

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        """Every connected server's resource templates as approved."""
        offered = await self._offered("templates", "resources/templates/list")
        return [
            types.ResourceTemplate(uri_template=d["uriTemplate"], **_described(d))
            for _, d in offered
        ]

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """The resource `uri` from the server that lists it, as approved (listed again first where
        that server connected again since). A URI is a server's own name for its resource: one that two servers have listed is read from neither, since
        either could be answering for the other (its text, and the outside-content label of the
        wrong server)."""
        known = self.resources.get(uri)
        if not known or any(("resources", server) not in self.listings for server in known):
            # not listed, or by a server that connected (again) since: held to its pin first
            await self.list_resources(at="resources/read")
        servers = list(self.resources.get(uri) or ())
        if not servers:
            raise Refusal(["unknown_resource"], f"no server offers the resource `{uri}`")
        if len(servers) > 1:
            raise Refusal(
                ["ambiguous_resource"],
                f"the resource `{uri}` is listed by more than one server "
                f"({', '.join(f'`{name}`' for name in servers)}): it is read from none",
            )
        server = servers[0]
        why = self.listings.get(("resources", server), {}).get(uri)
        if why is not None:
            raise self._withdrawn("resources", server, uri, why)
        upstream = self.upstreams[server]
        if upstream.client is None:
            raise Refusal(
                ["upstream_unavailable"], upstream.error or f"`{server}` is not connected"
            )
        try:
            result = await upstream.client.read_resource(uri)
        except Exception as exc:  # noqa: BLE001 - the server's error, in its own words
            raise Refusal(
                ["failed"],
                f"the resource `{uri}` was not read from `{server}`: {self._said(server, exc)}",
            ) from None
        async with self._lock:
            self._record_content(server, uri, result)
        return handed_on(result)

    async def list_prompts(self) -> list[types.Prompt]:
        """Every connected server's prompts as approved, named `<server>.<prompt>`."""
        return [
            types.Prompt(
                name=f"{server}.{defined['name']}",
                description=defined["description"] or None,
                arguments=[
                    types.PromptArgument(
                        name=argument["name"],
                        description=argument["description"] or None,
                        required=argument["required"],
                    )
                    for argument in defined["arguments"]
                ],
            )
            for server, defined in await self._offered("prompts", "prompts/list")
        ]

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None
    ) -> types.GetPromptResult:
        """The prompt `name` (`<server>.<prompt>`) from its server, as approved: as its server
        listed it last, or lists it now where it has not since it connected."""
        server, _, prompt = name.partition(".")
        upstream = self.upstreams.get(server)
        if upstream is None or not prompt:
            raise Refusal(["unknown_prompt"], f"no server offers the prompt `{name}`")
        if upstream.client is None:
            raise Refusal(
                ["upstream_unavailable"], upstream.error or f"`{server}` is not connected"
            )
        listing = self.listings.get(("prompts", server))
        if listing is None or prompt not in listing:
            try:
                await self._held(upstream, "prompts", "prompts/get")
            except Exception as exc:  # noqa: BLE001 - unlisted, it cannot be held to its pin
                raise Refusal(
                    ["failed"],
                    f"the prompt `{name}` was not got: `{server}` cannot list its prompts: "
                    f"{self._said(server, exc)}",
                ) from None
            listing = self.listings.get(("prompts", server), {})
        if prompt not in listing:
            raise Refusal(["unknown_prompt"], f"no server offers the prompt `{name}`")
        why = listing[prompt]
        if why is not None:
            raise self._withdrawn("prompts", server, prompt, why)
        try:
            result = await upstream.connected().get_prompt(prompt, dict(arguments or {}))
        except Exception as exc:  # noqa: BLE001 - the server's error, in its own words
            raise Refusal(
                ["failed"],
                f"the prompt `{name}` was not got from `{server}`: {self._said(server, exc)}",
            ) from None
        messages = result.model_dump(by_alias=True, mode="json", exclude_none=True)["messages"]
        diff = pinning.text_changed(self.pins, server, prompt, messages)
        if diff is not None:  # a prompt without arguments: its one text, as approved, or nothing
            self._report_once("prompts", server, prompt, "changed", "prompts/get", messages, diff)
            raise Refusal(
                ["withdrawn"],
                f"the prompt `{name}` is withdrawn: its text changed since it was approved "
                "(stalwart gateway approve)",
            )
        async with self._lock:
            self._record_content(server, f"prompt:{prompt}", result)
        return handed_on(result)
