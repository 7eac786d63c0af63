"""Pinned tools: the digest of each upstream tool as an admin approved it, and what changed since.

A tool's definition is what its server says in `tools/list`: name, description, input schema and
annotations (a changed `readOnlyHint` changes what the check thinks the tool does, so it counts).
Its digest is the SHA-256 of that definition's canonical JSON. `stalwart gateway approve` writes,
next to gateway.yaml, the definitions and digests of every tool each server lists now:

    {"format": "stalwart-gateway-pins/1",
     "servers": {"shop": {"approved_at": "2026-12-01T12:00:00Z",
                          "tools": {"get_order": {"digest": "<sha256>", "definition": {...}}}}}}

A tool the pins do not hold (a server never approved, a tool added since) or whose digest differs
(a "rug pull": its description or schema changed) is withdrawn until it is approved again; `diff`
says what changed, line by line, for the event.

Beside the pins the gateway keeps its instance id (`gateway.pins.instance`, made once): what tells
the console two gateways of one name apart.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from guard.engine import canonical_bytes

FORMAT = "stalwart-gateway-pins/1"
MAX_PINS_BYTES = 20_000_000


class PinsInvalid(Exception):
    """The pins file cannot be read as pins (the message says why)."""


def definition(tool: Any) -> dict[str, Any]:
    """The pinned part of an MCP `Tool` (a model or its wire mapping)."""
    if hasattr(tool, "model_dump"):
        tool = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    return {
        "name": tool.get("name"),
        "description": tool.get("description") or "",
        "inputSchema": tool.get("inputSchema") or {},
        "annotations": tool.get("annotations") or {},
    }


def digest(defined: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_bytes(dict(defined))).hexdigest()


def load_pins(path: Path) -> dict[str, Any]:
    """The pins at `path` (`{}` servers when the file does not exist yet)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {"format": FORMAT, "servers": {}}
    except OSError as exc:
        raise PinsInvalid(f"`{path.name}` cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_PINS_BYTES:
        raise PinsInvalid(f"`{path.name}` is larger than {MAX_PINS_BYTES} bytes")
    try:
        pins = json.loads(data)
    except ValueError as exc:
        raise PinsInvalid(f"`{path.name}` is not valid JSON: {exc}") from None
    if not isinstance(pins, dict) or pins.get("format") != FORMAT:
        raise PinsInvalid(f"`{path.name}` is not a pins file (`format: {FORMAT}`)")
    servers = pins.get("servers")
    if not isinstance(servers, dict):
        raise PinsInvalid(f"`{path.name}`: servers: must be a mapping")
    for name, server in servers.items():
        tools = server.get("tools") if isinstance(server, dict) else None
        if not isinstance(tools, dict) or not all(
            isinstance(pin, dict) and isinstance(pin.get("digest"), str) for pin in tools.values()
        ):
            raise PinsInvalid(f"`{path.name}`: servers.{name}.tools: must map tools to digests")
    return pins


def pin_server(pins: dict[str, Any], server: str, tools: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Pins with `server`'s tools as they are now (its earlier pins replaced)."""
    now = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    entries = {
        str(defined["name"]): {"digest": digest(defined), "definition": dict(defined)}
        for defined in tools
    }
    servers = dict(pins.get("servers", {}))
    servers[server] = {"approved_at": now, "tools": entries}
    return {"format": FORMAT, "servers": servers}


def write_pins(path: Path, pins: Mapping[str, Any]) -> None:
    """Write the pins atomically (a reader never sees half a file)."""
    text = json.dumps(pins, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", text=True)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def status(pins: Mapping[str, Any], server: str, defined: Mapping[str, Any]) -> str | None:
    """None for a tool as approved; `not_approved` or `changed` otherwise."""
    held = pins.get("servers", {}).get(server)
    if held is None:
        return "not_approved"
    pin = held.get("tools", {}).get(defined["name"])
    if pin is None:
        return "not_approved"
    return None if pin["digest"] == digest(defined) else "changed"


def approved(pins: Mapping[str, Any], server: str, name: str) -> Mapping[str, Any] | None:
    pin = pins.get("servers", {}).get(server, {}).get("tools", {}).get(name)
    return pin.get("definition") if isinstance(pin, Mapping) else None


def diff(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[str]:
    """What changed from the approved definition to this one, as unified-diff lines."""
    old = json.dumps(before or {}, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    new = json.dumps(after, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    return list(difflib.unified_diff(old, new, "approved", "now", lineterm="", n=1))[:200]


INSTANCE = re.compile(r"^gw-[0-9a-f]{32}$")


def instance_path(pins: Path) -> Path:
    """Where a gateway's instance id is kept: beside its pins file (`gateway.pins.instance`)."""
    return pins.with_name(pins.stem + ".instance")


def instance_id(pins: Path) -> tuple[str, str | None]:
    """This gateway's instance id, created once beside its pins file and read from there after,
    so two gateways of one name are told apart by the console (and one gateway keeps its row
    across restarts). A folder that cannot hold it gets an id for this run only, and says why."""
    path = instance_path(pins)
    try:
        found = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        found = ""
    except (OSError, UnicodeDecodeError) as exc:
        return _new_instance(), f"`{path.name}` cannot be read: {exc}"
    if INSTANCE.match(found):
        return found, None
    made = _new_instance()
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        # Another start of this gateway wrote it meanwhile, or it holds no id: read it once more.
        again = path.read_text(encoding="utf-8", errors="replace").strip()
        if INSTANCE.match(again):
            return again, None
        return made, f"`{path.name}` does not hold an instance id (remove it to make one)"
    except OSError as exc:
        return made, f"`{path.name}` cannot be written: {exc.strerror or exc}"
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(made + "\n")
    return made, None


def _new_instance() -> str:
    import secrets

    return "gw-" + secrets.token_hex(16)
