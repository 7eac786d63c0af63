"""The catalogue from the servers: each upstream's `tools/list` as catalogue entries.

A tool `get_order` of the server `shop` becomes the entry `shop.get_order` (so a firewall glob
`shop.*` holds for all of them), its input schema the entry's `parameters`. Its kind, first that
answers:

1. the server's `tool_kinds` file (bare names), which always wins;
2. a `kind` mark on the tool in gateway.yaml;
3. the tool's MCP annotations, as given explicitly by the server: `readOnlyHint: true` is a read;
   else `openWorldHint: true` is `sends_out`; else `destructiveHint` or `readOnlyHint: false` is
   a write;
4. with `infer: true` on the server, the catalogue's word lists over the bare name, description
   and argument names (`guard.engine.infer_kind`);
5. nothing: a write.

A read the server annotates `openWorldHint: true` reads the world: unless gateway.yaml says what
it reads (`reads_outside`), its results are labelled `open_world`.

The marks of gateway.yaml are added: `reads_outside` (the tool's, else the server's), `free_text`
(written into the parameter's schema), `fetches`, `checks`, order rules (`after`, `not_after`: a
bare name is the same server's tool), `at_most`, `irreversible`, `idempotent`, `secret`,
`requires_trust`. A tool the pins do not hold as it is now is `withdrawn`. A tool whose schema the
tool check cannot load is withdrawn too, rather than sinking the whole catalogue; if the catalogue
still does not load, `CatalogueUnusable` is raised and no call is made.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from guard import engine
from guard.engine import catalogue as catalogue_engine

from . import pins as pinning
from .config import GatewayConfig, ServerConfig, ToolMarks

log = logging.getLogger("stalwart.gateway")

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")


class CatalogueUnusable(Exception):
    """The catalogue built from the servers does not load: no call can be checked."""


@dataclass(frozen=True)
class Entry:
    """One upstream tool as the gateway knows it."""

    server: str
    tool: str  # the bare name, as the server calls it
    name: str  # `server.tool`, as the client and the rules call it
    definition: Mapping[str, Any]
    kind: str
    kind_from: str
    withdrawn: str | None = None  # why: not_approved, changed, schema_unusable


def kind_of(server: ServerConfig, marks: ToolMarks, defined: Mapping[str, Any]) -> tuple[str, str]:
    """The tool's kind and what said so (`tool_kinds`, `gateway.yaml`, `annotations`, ...)."""
    bare = defined["name"]
    if bare in server.tool_kinds:
        return server.tool_kinds[bare], "tool_kinds"
    if marks.kind is not None:
        return marks.kind, "gateway.yaml"
    hints = defined.get("annotations") or {}
    if hints.get("readOnlyHint") is True:
        return "read", "annotations"
    if hints.get("openWorldHint") is True:
        return "sends_out", "annotations"
    if hints.get("destructiveHint") is not None or hints.get("readOnlyHint") is False:
        return "write", "annotations"
    if server.infer:
        schema = defined.get("inputSchema") or {}
        names = tuple(schema.get("properties") or ()) if isinstance(schema, Mapping) else ()
        return engine.infer_kind(bare, defined.get("description") or "", names), "inferred"
    return "write", "unmarked"


def _qualify(rules: tuple[Any, ...], server: str) -> list[Any]:
    qualified: list[Any] = []
    for rule in rules:
        if isinstance(rule, str):
            qualified.append(rule if "." in rule else f"{server}.{rule}")
        elif isinstance(rule, Mapping) and isinstance(rule.get("tool"), str):
            name = rule["tool"]
            qualified.append({**rule, "tool": name if "." in name else f"{server}.{name}"})
        else:
            qualified.append(rule)
    return qualified


def _entry_tool(entry: Entry, server: ServerConfig, marks: ToolMarks) -> dict[str, Any]:
    defined = entry.definition
    schema = copy.deepcopy(defined.get("inputSchema") or {"type": "object"})
    if not isinstance(schema, dict):
        schema = {"type": "object"}
    properties = schema.get("properties")
    for argument in marks.free_text:
        if isinstance(properties, dict) and isinstance(properties.get(argument), dict):
            properties[argument]["free_text"] = True
        else:
            log.warning("gateway: %s: free_text names no argument `%s`", entry.name, argument)
    tool: dict[str, Any] = {
        "name": entry.name,
        "description": defined.get("description") or "",
        "kind": entry.kind,
        "parameters": schema,
    }
    outside = marks.reads_outside if marks.reads_outside is not None else server.reads_outside
    hints = defined.get("annotations") or {}
    if not outside and entry.kind == "read" and hints.get("openWorldHint") is True:
        outside = ("open_world",)
    if outside:
        tool["reads_outside"] = list(outside)
    if marks.fetches:
        if "fetches" in catalogue_engine.TOOL_KEYS:
            tool["fetches"] = list(marks.fetches)
        else:  # the check here has no `fetches`: its address step holds every destination
            log.warning("gateway: %s: `fetches` is not known to this tool check", entry.name)
    if marks.checks is not None:
        tool["checks"] = list(marks.checks)
    if marks.after:
        tool["after"] = _qualify(marks.after, server.name)
    if marks.not_after:
        tool["not_after"] = _qualify(marks.not_after, server.name)
    if marks.at_most is not None:
        tool["at_most"] = marks.at_most
    if marks.irreversible:
        tool["irreversible"] = True
    if marks.idempotent:
        tool["idempotent"] = True
    if marks.secret:
        tool["secret"] = list(marks.secret)
    if marks.requires_trust is not None:
        tool["requires_trust"] = marks.requires_trust
    if entry.withdrawn:
        tool["withdrawn"] = True
    return tool


#: The bare name under which the gateway records what a server's resources return
#: (`<server>.__resources__`): a server's own tool of that name is never offered.
CONTENT_TOOL = "__resources__"


def build(
    config: GatewayConfig,
    listed: Mapping[str, list[Mapping[str, Any]]],
    pins: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Entry]]:
    """The catalogue (data the tool check loads) and the entries by full name.

    `listed` holds each reachable server's tool definitions (`pins.definition`).
    """
    entries: dict[str, Entry] = {}
    raw: dict[str, dict[str, Any]] = {}
    for server_name, tools in listed.items():
        server = config.servers[server_name]
        for defined in tools:
            bare = defined.get("name")
            full = f"{server_name}.{bare}"
            if not isinstance(bare, str) or not NAME.match(full):
                log.warning(
                    "gateway: %s lists a tool with an unusable name; not offered", server_name
                )
                continue
            if full in entries:
                log.warning("gateway: %s lists `%s` twice; the first is kept", server_name, bare)
                continue
            if bare == CONTENT_TOOL:
                log.warning(
                    "gateway: %s lists a tool named `%s`, the gateway's own name for what its "
                    "resources return; not offered",
                    server_name,
                    bare,
                )
                continue
            marks = server.tools.get(bare, ToolMarks())
            kind, source = kind_of(server, marks, defined)
            entry = Entry(
                server=server_name,
                tool=bare,
                name=full,
                definition=dict(defined),
                kind=kind,
                kind_from=source,
                withdrawn=pinning.status(pins, server_name, defined),
            )
            entries[full] = entry
            raw[full] = _entry_tool(entry, server, marks)
    data = {"tools": list(raw.values())}
    try:
        engine.load_catalogue(data)
    except engine.CatalogueInvalid as exc:
        broken = _broken_tools(exc, list(raw))
        for name in broken:
            entry = entries[name]
            log.warning("gateway: %s withdrawn: the tool check cannot load it", name)
            entries[name] = replace(entry, withdrawn="schema_unusable")
            raw[name] = {
                "name": name,
                "description": raw[name]["description"],
                "kind": entry.kind,
                "parameters": {"type": "object"},
                "withdrawn": True,
            }
        data = {"tools": list(raw.values())}
        try:
            engine.load_catalogue(data)
        except engine.CatalogueInvalid as again:
            raise CatalogueUnusable(
                f"the catalogue from the servers does not load: {again}"
            ) from None
    return data, entries


def _broken_tools(error: engine.CatalogueInvalid, names: list[str]) -> list[str]:
    """The tools an invalid catalogue's issues point at (`tools[3]...`)."""
    broken = []
    for issue in getattr(error, "issues", []):
        match = re.match(r"^tools\[(\d+)\]", str(getattr(issue, "path", "")))
        if match and int(match.group(1)) < len(names):
            name = names[int(match.group(1))]
            if name not in broken:
                broken.append(name)
    return broken
