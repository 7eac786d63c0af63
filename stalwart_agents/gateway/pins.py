"""Pinned tools, prompts and resources: each as an admin approved it, and what changed since.

A tool's definition is what its server says in `tools/list`: name, description, input schema and
annotations (a changed `readOnlyHint` changes what the check thinks the tool does, so it counts).
A prompt's is its name, description and arguments (`prompts/list`); a resource's its URI, name,
description and MIME type (`resources/list`); a resource template's the same with its URI
template (`resources/templates/list`). Each digest is the SHA-256 of the definition's canonical
JSON. `stalwart gateway approve` writes, next to gateway.yaml, the definitions and digests of
everything each server lists now, keyed by name (tools, prompts), URI (resources) or URI template:

    {"format": "stalwart-gateway-pins/1",
     "servers": {"shop": {"approved_at": "2026-12-01T12:00:00Z",
                          "tools": {"get_order": {"digest": "<sha256>", "definition": {...}}},
                          "prompts": {...}, "resources": {...}, "templates": {...}}}}

Anything the pins do not hold (a server never approved, a tool added since) or whose digest
differs (a "rug pull": its description or schema changed) is withdrawn until it is approved again;
`diff` says what changed, line by line, for the event. A server approved before prompts and
resources were pinned has `tools` only: its prompts and resources are withdrawn (`approve_again`)
until it is approved again. At most `MAX_RESOURCES` resources of a server are pinned (a server may
list many, and more over time); the rest are as if added since. A prompt that takes no arguments
has one text: `approve` pins it too (`text`: the digest of its `prompts/get` messages, and the
messages themselves up to `MAX_TEXT_CHARS`; none where the server could not give it then), and a
text that changed since is withdrawn.

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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from guard.engine import canonical_bytes

FORMAT = "stalwart-gateway-pins/1"
MAX_PINS_BYTES = 20_000_000
#: The resources of one server the pins hold at most (the first listed).
MAX_RESOURCES = 1_000

#: What the pins hold of a server, and the field of a definition each is keyed by. A pins file
#: written before prompts and resources were pinned holds `tools` only.
PINNED = {"tools": "name", "prompts": "name", "resources": "uri", "templates": "uriTemplate"}


class PinsInvalid(Exception):
    """The pins file cannot be read as pins (the message says why)."""


def _wire(model: Any) -> Any:
    """An MCP model as its wire mapping (a mapping as it is)."""
    if hasattr(model, "model_dump"):
        return model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return model


def definition(tool: Any) -> dict[str, Any]:
    """The pinned part of an MCP `Tool` (a model or its wire mapping)."""
    tool = _wire(tool)
    return {
        "name": tool.get("name"),
        "description": tool.get("description") or "",
        "inputSchema": tool.get("inputSchema") or {},
        "annotations": tool.get("annotations") or {},
    }


def prompt_definition(prompt: Any) -> dict[str, Any]:
    """The pinned part of an MCP `Prompt`: its name, description and arguments."""
    prompt = _wire(prompt)
    return {
        "name": prompt.get("name"),
        "description": prompt.get("description") or "",
        "arguments": [
            {
                "name": argument.get("name"),
                "description": argument.get("description") or "",
                "required": bool(argument.get("required")),
            }
            for argument in prompt.get("arguments") or ()
            if isinstance(argument, Mapping)
        ],
    }


def resource_definition(resource: Any, key: str = "uri") -> dict[str, Any]:
    """The pinned part of an MCP `Resource` (or, with `key` `uriTemplate`, `ResourceTemplate`):
    its URI (template), name, description and MIME type."""
    resource = _wire(resource)
    return {
        key: str(resource.get(key) or ""),
        "name": resource.get("name") or "",
        "description": resource.get("description") or "",
        "mimeType": resource.get("mimeType") or "",
    }


def template_definition(template: Any) -> dict[str, Any]:
    return resource_definition(template, "uriTemplate")


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
        if not isinstance(server, dict) or "tools" not in server:
            raise PinsInvalid(f"`{path.name}`: servers.{name}.tools: must map tools to digests")
        for kind in PINNED:
            held = server.get(kind, {})
            if not isinstance(held, dict) or not all(
                isinstance(pin, dict)
                and isinstance(pin.get("digest"), str)
                and (pin.get("text") is None or isinstance(pin["text"].get("digest"), str))
                for pin in held.values()
            ):
                raise PinsInvalid(
                    f"`{path.name}`: servers.{name}.{kind}: must map {kind} to digests"
                )
    return pins


def pin_server(
    pins: dict[str, Any],
    server: str,
    tools: list[Mapping[str, Any]],
    *,
    prompts: Sequence[Mapping[str, Any]] = (),
    resources: Sequence[Mapping[str, Any]] = (),
    templates: Sequence[Mapping[str, Any]] = (),
    texts: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Pins with `server`'s tools, prompts, resources (the first `MAX_RESOURCES`) and resource
    templates as they are now (its earlier pins replaced); `texts`, each prompt without
    arguments' text (`prompts/get` `messages`), by name."""
    now = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    listed = {
        "tools": tools,
        "prompts": prompts,
        "resources": list(resources)[:MAX_RESOURCES],
        "templates": templates,
    }
    entry: dict[str, Any] = {"approved_at": now}
    for kind, key in PINNED.items():
        entry[kind] = {
            str(defined[key]): {"digest": digest(defined), "definition": dict(defined)}
            for defined in listed[kind]
        }
    for name, messages in (texts or {}).items():
        if name in entry["prompts"]:
            entry["prompts"][name]["text"] = _text_pin(messages)
    servers = dict(pins.get("servers", {}))
    servers[server] = entry
    return {"format": FORMAT, "servers": servers}


#: The longest text of a prompt (its messages, as JSON) the pins keep to show what changed; a
#: longer one is pinned by its digest alone.
MAX_TEXT_CHARS = 65_536


def _text_pin(messages: Any) -> dict[str, Any]:
    held = {"messages": messages}
    pin: dict[str, Any] = {"digest": digest(held)}
    if len(json.dumps(messages, ensure_ascii=False)) <= MAX_TEXT_CHARS:
        pin["messages"] = messages
    return pin


def text_changed(
    pins: Mapping[str, Any], server: str, prompt: str, messages: Any
) -> list[str] | None:
    """None where the prompt's text is as pinned (or no text is pinned: a prompt that takes
    arguments, or pins from before); else the diff from the approved text (empty where that is
    too long to keep)."""
    pin = pins.get("servers", {}).get(server, {}).get("prompts", {}).get(prompt)
    text = pin.get("text") if isinstance(pin, Mapping) else None
    if not isinstance(text, Mapping) or text.get("digest") == digest({"messages": messages}):
        return None
    if "messages" not in text:
        return []
    return diff({"messages": text["messages"]}, {"messages": messages})


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


def status(
    pins: Mapping[str, Any], server: str, defined: Mapping[str, Any], kind: str = "tools"
) -> str | None:
    """None for a definition (of a tool, or the `kind` of `PINNED`) as approved; otherwise
    `not_approved`, `changed`, or `approve_again` (its server was approved before its prompts and
    resources were pinned)."""
    held = pins.get("servers", {}).get(server)
    if held is None:
        return "not_approved"
    if kind not in held:
        return "approve_again"
    pin = held[kind].get(defined[PINNED[kind]])
    if pin is None:
        return "not_approved"
    return None if pin["digest"] == digest(defined) else "changed"


def approved(
    pins: Mapping[str, Any], server: str, name: str, kind: str = "tools"
) -> Mapping[str, Any] | None:
    pin = pins.get("servers", {}).get(server, {}).get(kind, {}).get(name)
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
