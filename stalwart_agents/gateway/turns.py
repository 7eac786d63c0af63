"""The person's turns a client sends with a `tools/call`: the `_meta` entry `stalwart/turns`.

MCP carries no conversation, so a client that holds the person's messages may send them with
each call, under the request's `_meta`. The key follows MCP's rules for `_meta` names: a prefix
of labels (here the one label `stalwart`) and a slash, then a name; it is outside the prefixes MCP
reserves (a second label `modelcontextprotocol` or `mcp`). The rules say a prefix SHOULD be reverse
DNS; the project owns no domain to reverse, so the bare label stands rather than a borrowed one:

    {"method": "tools/call",
     "params": {"name": "shop.refund_card", "arguments": {"order_id": "A1", "amount": 20},
                "_meta": {"stalwart/turns": [{"id": "m-17", "text": "refund 20 on order A1"}]}}}

The value is a list of the person's messages since the client's last call, oldest first, each
an object with `text` (what the person wrote) and, optionally, `id` (the client's id of the
message: a message sent again under the same id is read once), or the text alone. Bounded:
at most `MAX_TURNS` messages, each at most `MAX_TEXT` characters, `MAX_TOTAL` in all, nothing
nested deeper than that (a message is text, never an object of objects). A value outside these
is refused whole (`TurnsInvalid`, naming the field path, e.g. `_meta.stalwart/turns[2].text`),
and the call with it is not made.

The gateway trusts these turns only where gateway.yaml says `turns: from_client` (default `off`:
the entry is ignored) and, over `--http`, only from a request that carried the bearer token.
Trusted turns are read by the session (`Session.read`), as every door hands the person's turns
to the runtime; the runtime derives each argument's origin from them, so a value only the model
wrote is still the model's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

META_KEY = "stalwart/turns"
WHERE = f"_meta.{META_KEY}"
MAX_TURNS = 20
MAX_TEXT = 8_000
MAX_TOTAL = 32_000
MAX_ID = 128
FIELDS = frozenset({"text", "id"})


class TurnsInvalid(Exception):
    """The turns a client sent cannot be read; `path` names the field."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


@dataclass(frozen=True)
class Turn:
    text: str
    id: str | None = None


def _text(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise TurnsInvalid(path, "must be the person's text")
    if not value.strip():
        raise TurnsInvalid(path, "is empty")
    if len(value) > MAX_TEXT:
        raise TurnsInvalid(path, f"is longer than {MAX_TEXT} characters")
    return value


def read_turns(value: Any) -> list[Turn]:
    """The turns in a `stalwart/turns` value, or `TurnsInvalid` naming the first problem."""
    if not isinstance(value, list):
        raise TurnsInvalid(WHERE, "must be a list of the person's messages")
    if len(value) > MAX_TURNS:
        raise TurnsInvalid(WHERE, f"holds more than {MAX_TURNS} messages")
    found: list[Turn] = []
    total = 0
    for index, item in enumerate(value):
        path = f"{WHERE}[{index}]"
        if isinstance(item, str):
            turn = Turn(_text(item, path))
        elif isinstance(item, Mapping):
            for key in sorted(set(item) - FIELDS, key=str):
                raise TurnsInvalid(f"{path}.{str(key)[:64]}", "is not a field of a turn")
            if "text" not in item:
                raise TurnsInvalid(f"{path}.text", "is required")
            ident = item.get("id")
            if ident is not None and (
                not isinstance(ident, str)
                or not 0 < len(ident) <= MAX_ID
                or not ident.isprintable()
            ):
                raise TurnsInvalid(f"{path}.id", f"must be printable text of at most {MAX_ID}")
            turn = Turn(_text(item["text"], f"{path}.text"), ident)
        else:
            raise TurnsInvalid(path, "must be a message: its text, or `{text, id}`")
        total += len(turn.text)
        if total > MAX_TOTAL:
            raise TurnsInvalid(WHERE, f"holds more than {MAX_TOTAL} characters in all")
        found.append(turn)
    return found
