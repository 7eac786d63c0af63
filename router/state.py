"""The conversation state `POST /v1/plan` accepts, read strictly and bounded.

A conversation over the API carries its own state: `history` (the earlier plans, as the API
returned them: the `plan` of each answer, oldest first), `results` (the calls that ran, oldest
first, each `{"tool", "arguments", "result"}` with an optional `agent` and `labels`) and
`asked_again` (whether the previous turn was answered with the one request to say it again).
With them every plan kind works over the API: an `ask` is completed by the next turn, a `chain`
continues once its reads' results are given back, and an unread turn asked again goes where
`on_unread` says.

Everything is checked before anything is planned, and every problem is reported at once, each
under its field path (`history[1].call.arguments`, `results[0].tool`). The bounds below hold a
request to a size the router reads in a few milliseconds; the body's own bounds (bytes, depth of
JSON) are the API parser's and come first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from router.engine import plan as plans

MAX_HISTORY = 32
MAX_RESULTS = 64
MAX_DEPTH = 16
MAX_BYTES = 1024 * 1024
MAX_TEXT = 4000
MAX_NAME = 200
MAX_ITEMS = 200

PLAN_FIELDS = frozenset(
    {
        "kind",
        "language",
        "turn",
        "call",
        "steps",
        "missing",
        "options",
        "question",
        "reasons",
        "rule",
        "action",
        "answer",
        "said",
        "detail",
        "why",
    }
)
CALL_FIELDS = frozenset({"tool", "agent", "arguments", "origins", "labels"})
RESULT_FIELDS = frozenset({"tool", "agent", "arguments", "result", "labels"})
LANGUAGES = ("en", "pt-BR")

Errors = dict[str, list[str]]


class StateInvalid(ValueError):
    """The conversation state cannot be read; `errors` maps each field path to its problems."""

    def __init__(self, errors: Errors) -> None:
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in sorted(errors.items())))
        self.errors = errors


@dataclass(frozen=True)
class State:
    """The state, read: plans as the router's `history` takes them, the calls that ran."""

    history: tuple[dict[str, Any], ...] = ()
    results: tuple[dict[str, Any], ...] = ()
    asked_again: bool = False

    @property
    def turns(self) -> list[str]:
        """The person's earlier turns, oldest first (a turn planned twice, as a chain is, once)."""
        out: list[str] = []
        for item in self.history:
            turn = item.get("turn")
            if isinstance(turn, str) and turn.strip() and (not out or out[-1] != turn):
                out.append(turn)
        return out


def _depth(value: Any, limit: int, depth: int = 0) -> bool:
    """Whether `value` nests no deeper than `limit` levels of objects and lists."""
    if isinstance(value, Mapping | list):
        if depth >= limit:
            return False
        items = value.values() if isinstance(value, Mapping) else value
        return all(_depth(item, limit, depth + 1) for item in items)
    return True


def _json(value: Any) -> bool:
    if value is None or isinstance(value, str | bool | int | float):
        return True
    if isinstance(value, list):
        return all(_json(item) for item in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _json(v) for k, v in value.items())
    return False


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


class _Reader:
    def __init__(self) -> None:
        self.errors: Errors = {}

    def error(self, path: str, message: str) -> None:
        self.errors.setdefault(path, []).append(message)

    def unknown(self, path: str, data: Mapping[str, Any], allowed: frozenset[str]) -> None:
        for name in sorted(set(data) - allowed):
            self.error(f"{path}.{name}", "not a field here")

    def text(self, path: str, value: Any, *, limit: int = MAX_TEXT, null: bool = False) -> None:
        if value is None and null:
            return
        if not isinstance(value, str):
            self.error(path, "must be text" + (" or null" if null else ""))
        elif len(value) > limit:
            self.error(path, f"longer than {limit} characters")

    def texts(self, path: str, value: Any, *, limit: int = MAX_TEXT) -> None:
        if not isinstance(value, list):
            self.error(path, "must be a list of text")
            return
        if len(value) > MAX_ITEMS:
            self.error(path, f"more than {MAX_ITEMS} items")
            return
        for i, item in enumerate(value):
            self.text(f"{path}[{i}]", item, limit=limit)

    def data(self, path: str, value: Any, *, obj: bool = False, null: bool = False) -> None:
        """JSON data nested at most MAX_DEPTH levels (an object, with `obj`)."""
        if value is None and null:
            return
        if obj and not isinstance(value, Mapping):
            self.error(path, "must be a JSON object" + (" or null" if null else ""))
        elif not _json(value):
            self.error(path, "must be JSON data")
        elif not _depth(value, MAX_DEPTH):
            self.error(path, f"nests deeper than {MAX_DEPTH} levels")

    def call(self, path: str, value: Any, *, origins: bool = True) -> None:
        if not isinstance(value, Mapping):
            self.error(path, "must be a call: `{tool, arguments}`")
            return
        self.unknown(path, value, CALL_FIELDS if origins else CALL_FIELDS - {"origins"})
        self.text(f"{path}.tool", value.get("tool"), limit=MAX_NAME)
        if "agent" in value:
            self.text(f"{path}.agent", value["agent"], limit=MAX_NAME)
        if "arguments" in value:
            self.data(f"{path}.arguments", value["arguments"], obj=True)
        if "origins" in value:
            given = value["origins"]
            if not isinstance(given, Mapping):
                self.error(f"{path}.origins", "must map argument names to origins")
            else:
                for name, origin in given.items():
                    self.text(f"{path}.origins.{name}", origin, limit=MAX_NAME)
        if "labels" in value:
            self.texts(f"{path}.labels", value["labels"], limit=MAX_NAME)

    def plan(self, path: str, value: Any) -> None:
        if not isinstance(value, Mapping):
            self.error(path, "must be a plan, as `POST /v1/plan` returned it")
            return
        self.unknown(path, value, PLAN_FIELDS)
        kind = value.get("kind")
        if kind not in plans.KINDS:
            self.error(f"{path}.kind", f"one of {', '.join(plans.KINDS)}")
        if "language" in value and value["language"] not in LANGUAGES:
            self.error(f"{path}.language", f"one of {', '.join(LANGUAGES)}")
        if "turn" in value:
            self.text(f"{path}.turn", value["turn"])
        if value.get("call") is not None:
            self.call(f"{path}.call", value["call"])
        steps = value.get("steps", [])
        if not isinstance(steps, list) or len(steps) > MAX_ITEMS:
            self.error(f"{path}.steps", f"must be a list of at most {MAX_ITEMS} calls")
        else:
            for i, step in enumerate(steps):
                self.call(f"{path}.steps[{i}]", step, origins=True)
        for name in ("missing", "reasons", "why"):
            if name in value:
                self.texts(f"{path}.{name}", value[name])
        if "options" in value:
            options = value["options"]
            if not isinstance(options, list) or len(options) > MAX_ITEMS:
                self.error(f"{path}.options", f"must be a list of at most {MAX_ITEMS} values")
            else:
                self.data(f"{path}.options", options)
        for name in ("question", "rule"):
            if name in value:
                self.text(f"{path}.{name}", value[name], null=True)
        action = value.get("action")
        if action is not None and action not in plans.ACTIONS:
            self.error(f"{path}.action", f"one of {', '.join(plans.ACTIONS)}, or null")
        if "answer" in value:
            self.data(f"{path}.answer", value["answer"], obj=True, null=True)
        if "said" in value:
            said = value["said"]
            if not isinstance(said, Mapping):
                self.error(f"{path}.said", "must map argument names to the text typed")
            else:
                for name, typed in said.items():
                    self.text(f"{path}.said.{name}", typed)
        if "detail" in value:
            self.data(f"{path}.detail", value["detail"], obj=True)

    def result(self, path: str, value: Any, tools: frozenset[str]) -> None:
        if not isinstance(value, Mapping):
            self.error(path, "must be a call that ran: `{tool, arguments, result}`")
            return
        self.unknown(path, value, RESULT_FIELDS)
        tool = value.get("tool")
        self.text(f"{path}.tool", tool, limit=MAX_NAME)
        if isinstance(tool, str) and tool not in tools:
            self.error(f"{path}.tool", f"`{tool}` is not a tool of the catalogue")
        if "agent" in value:
            self.text(f"{path}.agent", value["agent"], limit=MAX_NAME)
        if "arguments" in value:
            self.data(f"{path}.arguments", value["arguments"], obj=True)
        if "result" not in value:
            self.error(f"{path}.result", "what the call returned (null for nothing)")
        else:
            self.data(f"{path}.result", value["result"])
        if "labels" in value:
            self.texts(f"{path}.labels", value["labels"], limit=MAX_NAME)


def _list(reader: _Reader, name: str, value: Any, limit: int) -> list[Any] | None:
    if value is None:
        return []
    if not isinstance(value, list):
        reader.error(name, "must be a list")
        return None
    if len(value) > limit:
        reader.error(name, f"more than {limit} entries (the last {limit} are enough)")
        return None
    if not _json(value):
        reader.error(name, "must be JSON data")
        return None
    if _size(value) > MAX_BYTES:
        reader.error(name, f"larger than {MAX_BYTES} bytes")
        return None
    return value


def read_state(
    *, history: Any = None, results: Any = None, asked_again: Any = False, tools: frozenset[str]
) -> State:
    """The state of a request, or `StateInvalid` naming every field path that is wrong.

    `tools` are the names of the catalogue's tools: a result of a tool the catalogue does not
    have is refused, since nothing could have run it under this catalogue's check.
    """
    reader = _Reader()
    if not isinstance(asked_again, bool):
        reader.error("asked_again", "true or false")
    past = _list(reader, "history", history, MAX_HISTORY)
    for i, item in enumerate(past or ()):
        reader.plan(f"history[{i}]", item)
    ran = _list(reader, "results", results, MAX_RESULTS)
    for i, item in enumerate(ran or ()):
        reader.result(f"results[{i}]", item, tools)
    if reader.errors:
        raise StateInvalid(reader.errors)
    return State(
        history=tuple(dict(item) for item in past or ()),
        results=tuple(
            {
                "tool": item["tool"],
                "arguments": dict(item.get("arguments") or {}),
                "result": item["result"],
                **({"agent": item["agent"]} if "agent" in item else {}),
                **({"labels": list(item["labels"])} if item.get("labels") else {}),
            }
            for item in ran or ()
        ),
        asked_again=bool(asked_again),
    )
