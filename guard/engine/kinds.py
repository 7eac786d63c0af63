"""Tool kinds: whether a tool reads, writes, or sends something out, and how that is known.

A tool's kind comes from, in this order: the tool-kinds file (`tool_kinds.yaml`, which always wins),
the tool's own mark (`kind:` in the catalogue), and, only where `infer: true` is set, a reading of
its name, description and argument names. A tool nobody marked counts as a write.

Inference is a small word list, on purpose, so anyone can predict it:
- a sending word (send, post, email, publish, notify, ...) anywhere in the name, a description that
  starts with one ("Sends the receipt ..."), or an argument naming a recipient (to, recipient,
  webhook, ...) makes the tool `sends_out`;
- else a name whose first word is a reading verb (get, list, read, search, fetch, ...), that holds
  no changing word (delete, update, create, charge, refund, ...), and whose description does not
  start with a changing word, makes it `read`;
- anything else is a `write`.
The strictest reading wins: `sends_out` over `write` over `read`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from . import safe_yaml
from .errors import Issue

READ = "read"
WRITE = "write"
SENDS_OUT = "sends_out"
KINDS = (READ, WRITE, SENDS_OUT)

READ_VERBS = frozenset(
    {
        "get", "list", "read", "search", "fetch", "find", "lookup", "look", "query", "show",
        "view", "describe", "check", "count", "retrieve", "load", "browse", "inspect", "preview",
        "peek", "is", "has", "validate", "estimate", "quote", "explain", "summarize",
        "summarise",
    }
)  # fmt: skip
SENDS_OUT_WORDS = frozenset(
    {
        "send", "post", "email", "mail", "publish", "notify", "tweet", "share",
        "upload", "forward", "reply", "sms", "broadcast", "webhook", "dm", "invite",
    }
)  # fmt: skip
CHANGING_WORDS = frozenset(
    {
        "delete", "remove", "update", "create", "add", "set", "put", "patch", "write", "save",
        "charge", "refund", "pay", "cancel", "close", "open", "approve", "reject", "book",
        "transfer", "move", "rename", "insert", "drop", "grant", "revoke", "reset",
        "run", "exec", "execute", "deploy", "merge", "submit", "edit", "modify", "store",
    }
)  # fmt: skip
RECIPIENT_ARGUMENTS = frozenset(
    {"to", "recipient", "recipients", "cc", "bcc", "webhook", "webhook_url", "channel", "phone"}
)

_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


def words(text: str) -> list[str]:
    """Split a tool name or a sentence into lowercase words (snake, camel, dotted, spaced)."""
    return [word.lower() for word in _WORD.findall(text)]


def _stem(word: str) -> str:
    """The bare form of the verb a description starts with: `sends` -> `send`."""
    vocabulary = READ_VERBS | SENDS_OUT_WORDS | CHANGING_WORDS
    if word in vocabulary:
        return word
    for suffix in ("es", "s"):
        if word.endswith(suffix) and word[: -len(suffix)] in vocabulary:
            return word[: -len(suffix)]
    return word


def infer_kind(name: str, description: str = "", argument_names: tuple[str, ...] = ()) -> str:
    """Read a tool's kind from its name, description and argument names, by the word lists above."""
    name_words = words(name)
    description_words = words(description)
    verb = _stem(description_words[0]) if description_words else None
    if (
        SENDS_OUT_WORDS & set(name_words)
        or verb in SENDS_OUT_WORDS
        or RECIPIENT_ARGUMENTS & {argument.lower() for argument in argument_names}
    ):
        return SENDS_OUT
    if (
        name_words
        and name_words[0] in READ_VERBS
        and not CHANGING_WORDS & set(name_words[1:])
        and verb not in CHANGING_WORDS
    ):
        return READ
    return WRITE


def parse_tool_kinds(content: str | Mapping[str, Any] | None) -> tuple[dict[str, str], list[Issue]]:
    """Read a tool-kinds file: a mapping of tool name to `read`, `write` or `sends_out`.

    Takes the file's text (YAML or JSON) or an already-parsed mapping; returns the kinds and every
    issue, each with its path under `tool_kinds`.
    """
    issues: list[Issue] = []
    if content is None:
        return {}, issues
    data: Any = content
    if isinstance(content, str):
        try:
            data = safe_yaml.load(content)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            return {}, [Issue("tool_kinds", f"the file is not valid YAML{where}")]
        if data is None:
            return {}, issues
    if not isinstance(data, Mapping):
        return {}, [Issue("tool_kinds", "must be a mapping of tool name to kind")]
    kinds: dict[str, str] = {}
    for name, kind in data.items():
        if not isinstance(name, str):
            issues.append(Issue("tool_kinds", f"a tool name is not a string: `{name}`"))
            continue
        if kind not in KINDS:
            issues.append(
                Issue(f"tool_kinds.{name}", f"must be one of read, write, sends_out, not `{kind}`")
            )
            continue
        kinds[name] = kind
    return kinds, issues


def resolve_kind(
    name: str,
    *,
    file_kinds: Mapping[str, str],
    mark: str | None,
    infer: bool,
    description: str = "",
    argument_names: tuple[str, ...] = (),
) -> str:
    """A tool's kind: the file, else its mark, else (with `infer`) the word lists, else write."""
    if name in file_kinds:
        return file_kinds[name]
    if mark is not None:
        return mark
    if infer:
        return infer_kind(name, description, argument_names)
    return WRITE


def is_write(kind: str) -> bool:
    """A write is anything that is not a read: sending something out changes the world too."""
    return kind != READ
