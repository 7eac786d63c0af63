"""The session history: every call that ran, each entry signed over the entries before it.

Each entry is `{"index": i, "content": {...}, "mac": hex}`. Its MAC is HMAC-SHA256, under a key the
server or the runtime holds (never the agent), over the canonical JSON (RFC 8785) of

    ["stalwart-history/1", session id, i, content, MAC of entry i-1 (or "" for the first)]

so the chain catches an entry edited (its MAC no longer matches), dropped or reordered (the index
and the previous MAC no longer match), or replayed from another session (the session id differs). A
hash chain alone cannot see its own newest entries cut off, nor an empty history handed in for a
full one, nor another session's whole history: so a history is only ever verified against its head
(`head`: the session id, the length and the last MAC), which whoever keeps the history for a session
keeps beside it, and `History.from_json(..., head=...)` refuses any other. The session id comes from
the head, never from the JSON. A confirmation token, which names the head it was issued at, never
covers a call at another point.

Costs: a history given as JSON is verified once, O(n). A `History` object keeps its verified head,
so `append` (sign a new entry) and `accept` (verify one entry signed elsewhere) cost O(1), and the
lookups the check makes (how many calls of a tool, the latest result of a tool, the latest with a
given argument value, whether a step was undone, the labels of outside content) are kept as indexes
updated on each entry, so a check costs the same after 10 entries or 10,000.

A `History` belongs to one session and is used by one thread at a time (its indexes are built on
first use and kept up to date on each entry); a `ToolCheck` may be shared.

An entry's content is what the executor recorded: `tool`, `arguments`, `result`, and optionally
`agent`, `origins`, `labels` (of outside content it read), `compensation_of` (the index of the entry
it undoes), `plan` (`{"id", "step"}` of an approved plan), `cost` (what the call cost the run, in
cents: a number, 0 or more), and any other JSON the executor keeps. The run's cost (`History.cost`)
is the sum of its entries' costs, every call that ran counted, an undone one too (what it cost was
spent), kept as a running total.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .canonical import NotJSON, canonical_json
from .errors import HistoryInvalid
from .marks import cents, is_amount
from .refs import MISSING, resolve, value_key

FORMAT = "stalwart-history/1"
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class Entry:
    """One signed entry of a session history."""

    index: int
    content: Mapping[str, Any]
    mac: str

    @property
    def tool(self) -> str:
        return self.content["tool"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "content": json.loads(canonical_json(self.content)),
            "mac": self.mac,
        }


def _content_problem(content: Any) -> str | None:
    """Say what is wrong with an entry's content, or None."""
    if not isinstance(content, Mapping):
        return "the content is not a mapping"
    if not isinstance(content.get("tool"), str) or not content["tool"]:
        return "the content names no tool"
    if not isinstance(content.get("arguments", {}), Mapping):
        return "the arguments are not a mapping"
    labels = content.get("labels", [])
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        return "the labels are not a list of text"
    undoes = content.get("compensation_of")
    if undoes is not None and (
        not isinstance(undoes, int) or isinstance(undoes, bool) or undoes < 0
    ):
        return "`compensation_of` is not an entry index"
    plan = content.get("plan")
    if plan is not None and (not isinstance(plan, Mapping) or not isinstance(plan.get("id"), str)):
        return "`plan` is not `{id, step}`"
    if "cost" in content and not is_amount(content["cost"]):
        return "`cost` is not a number of cents, 0 or more"
    return None


class History:
    """A session's signed history, verified up to its head, with the indexes the check reads."""

    def __init__(self, session: str, key: bytes) -> None:
        if not isinstance(session, str) or not session:
            raise HistoryInvalid("the session id must be non-empty text")
        self.session = session
        self._key = key
        self._entries: list[Entry] = []
        self._contents: list[Mapping[str, Any]] = []
        self._head = ""
        self._by_tool: dict[str, list[int]] = {}
        self._labels: set[str] = set()
        self._undone: dict[int, int] = {}
        self._plans: dict[str, int] = {}
        self._value_index: dict[tuple[str, tuple[str, ...]], dict[tuple[str, Any], list[int]]] = {}
        self._indexed: dict[str, list[tuple[str, ...]]] = {}
        self._cost = Decimal(0)
        self._totals: dict[tuple[str, tuple[str, ...]], Decimal] = {}

    # -- signing -------------------------------------------------------------------------------

    def _mac(self, index: int, content_json: str, previous: str) -> str:
        message = f'["{FORMAT}",{canonical_json(self.session)},{index},{content_json},"{previous}"]'
        return hmac.new(self._key, message.encode("utf-8"), hashlib.sha256).hexdigest()

    def signed_with(self, key: bytes) -> bool:
        """Say whether this history is signed with `key`."""
        return hmac.compare_digest(self._key, key)

    @property
    def head(self) -> dict[str, Any]:
        """The point the history is at: its session, length and last MAC (`""` when empty).

        Whoever keeps a history for someone else keeps its head too (the console per session, the
        SDK per session, a caller of `stalwart check`), and verifies against it: a hash chain alone
        cannot see its newest entries cut off, nor tell an empty history from a cleared one.
        """
        return {"session": self.session, "length": len(self._entries), "mac": self._head}

    def at_head(self, head: Any) -> bool:
        """Say whether this history is exactly at `head` (session, length and last MAC)."""
        return (
            isinstance(head, Mapping)
            and head.get("session") == self.session
            and head.get("length") == len(self._entries)
            and not isinstance(head.get("length"), bool)
            and isinstance(head.get("mac"), str)
            and hmac.compare_digest(head["mac"].encode(), self._head.encode())
        )

    def append(self, content: Mapping[str, Any]) -> Entry:
        """Sign and add a new entry (the executor, after a call ran); O(1)."""
        problem = _content_problem(content)
        if problem is not None:
            raise HistoryInvalid(problem, index=len(self._entries))
        try:
            content_json = canonical_json(content)
        except NotJSON as error:
            raise HistoryInvalid(str(error), index=len(self._entries)) from None
        index = len(self._entries)
        entry = Entry(index, json.loads(content_json), self._mac(index, content_json, self._head))
        self._add(entry)
        return entry

    def accept(self, signed: Mapping[str, Any]) -> Entry:
        """Verify one entry signed elsewhere as the next of this history, and add it; O(1)."""
        entry = self._verify(signed, len(self._entries), self._head)
        self._add(entry)
        return entry

    def _verify(self, signed: Any, index: int, previous: str) -> Entry:
        if not isinstance(signed, Mapping) or set(signed) != {"index", "content", "mac"}:
            raise HistoryInvalid("an entry must be exactly `{index, content, mac}`", index=index)
        if signed["index"] != index or isinstance(signed["index"], bool):
            raise HistoryInvalid("the entry is out of place", index=index)
        mac = signed["mac"]
        if not isinstance(mac, str) or len(mac) != 64 or not _HEX.issuperset(mac):
            raise HistoryInvalid("the signature is malformed", index=index)
        problem = _content_problem(signed["content"])
        if problem is not None:
            raise HistoryInvalid(problem, index=index)
        try:
            content_json = canonical_json(signed["content"])
        except NotJSON as error:
            raise HistoryInvalid(str(error), index=index) from None
        if not hmac.compare_digest(self._mac(index, content_json, previous), mac):
            raise HistoryInvalid("the signature does not match", index=index)
        return Entry(index, json.loads(content_json), mac)

    @classmethod
    def from_json(cls, data: Any, *, key: bytes, head: Any) -> History:
        """Verify a whole history given as JSON, `{"session": id, "entries": [...]}`; O(n).

        `head` is the point the history must end at, as whoever kept it for this session holds it
        (`History.head`): its session id binds every MAC (the JSON's own `session`, where given,
        must agree), and a history cut short, emptied or taken from another session is refused.
        Raises `HistoryInvalid` naming the first entry that fails.
        """
        if not isinstance(head, Mapping) or not isinstance(head.get("session"), str):
            raise HistoryInvalid("a history is verified against the head it must end at")
        if not isinstance(data, Mapping) or not isinstance(data.get("entries"), list):
            raise HistoryInvalid("a history must be `{session, entries}`")
        if set(data) - {"session", "entries"}:
            raise HistoryInvalid("a history holds only `session` and `entries`")
        if data.get("session", head["session"]) != head["session"]:
            raise HistoryInvalid("the history is of another session")
        history = cls(head["session"], key)
        for index, signed in enumerate(data["entries"]):
            history._add(history._verify(signed, index, history._head))
        if not history.at_head(head):
            raise HistoryInvalid("the history does not end at the head kept for its session")
        return history

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session, "entries": [entry.to_dict() for entry in self._entries]}

    # -- indexes -------------------------------------------------------------------------------

    def _add(self, entry: Entry) -> None:
        content = entry.content
        tool = content["tool"]
        self._entries.append(entry)
        self._contents.append(content)
        self._head = entry.mac
        self._by_tool.setdefault(tool, []).append(entry.index)
        self._labels.update(content.get("labels", ()))
        undoes = content.get("compensation_of")
        if undoes is not None:
            self._undone.setdefault(undoes, entry.index)
        plan = content.get("plan")
        if plan is not None:
            self._plans[plan["id"]] = self._plans.get(plan["id"], 0) + 1
        for path in self._indexed.get(tool, ()):
            value = resolve(content, path)
            if value is not MISSING:
                self._value_index[(tool, path)].setdefault(value_key(value), []).append(entry.index)
        if "cost" in content:
            self._cost += cents(content["cost"])
        for key in self._totals:
            if key[0] == tool:
                self._totals[key] += _amount(resolve(content, key[1]))

    def _values(self, tool: str, path: tuple[str, ...]) -> dict[tuple[str, Any], list[int]]:
        """The calls of `tool` by the value at `path`, built on first use and kept up to date."""
        key = (tool, path)
        index = self._value_index.get(key)
        if index is None:
            index = {}
            for position in self._by_tool.get(tool, ()):
                value = resolve(self._entries[position].content, path)
                if value is not MISSING:
                    index.setdefault(value_key(value), []).append(position)
            self._value_index[key] = index
            self._indexed.setdefault(tool, []).append(path)
        return index

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, index: int) -> Entry:
        return self._entries[index]

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries)

    @property
    def results(self) -> list[Mapping[str, Any]]:
        """The recorded calls, oldest first, as `{"tool", "arguments", "result", ...}`.

        The live list the history keeps, not a copy, so handing it to the rulebook gate costs
        nothing however long the history is; it is read-only by contract.
        """
        return self._contents

    @property
    def labels(self) -> frozenset[str]:
        """Every label of outside content recorded in the session."""
        return frozenset(self._labels)

    def count(self, tool: str) -> int:
        """How many calls of `tool` ran in the session."""
        return len(self._by_tool.get(tool, ()))

    def ran(self, tool: str) -> bool:
        return tool in self._by_tool

    def latest_index(self, tool: str, same: tuple[str, Any] | None = None) -> int | None:
        """The index of the latest call of `tool` (with `same`: whose argument had that value)."""
        if same is None:
            positions = self._by_tool.get(tool)
            return positions[-1] if positions else None
        argument, value = same
        positions = self._values(tool, ("arguments", argument)).get(value_key(value))
        return positions[-1] if positions else None

    def latest(self, tool: str, same: tuple[str, Any] | None = None) -> Mapping[str, Any] | None:
        """The content of the latest call of `tool` (with `same`: whose argument had that value)."""
        position = self.latest_index(tool, same)
        return None if position is None else self._entries[position].content

    def matching(self, tool: str, path: tuple[str, ...], value: Any) -> list[int]:
        """The indexes of the calls of `tool` that recorded `value` at `path` (`result.id`)."""
        return self._values(tool, path).get(value_key(value), [])

    @property
    def cost(self) -> Decimal:
        """The run's cost so far, in cents: the sum of every entry's `cost`; O(1)."""
        return self._cost

    def total(self, tool: str, path: tuple[str, ...]) -> Decimal:
        """The sum of the numbers recorded at `path` (`("arguments", "amount")`) over the calls of
        `tool`, built on first use and kept up to date; a value that is not a number counts 0."""
        key = (tool, path)
        found = self._totals.get(key)
        if found is None:
            found = sum(
                (
                    _amount(resolve(self._entries[position].content, path))
                    for position in self._by_tool.get(tool, ())
                ),
                Decimal(0),
            )
            self._totals[key] = found
        return found

    def undone_by(self, index: int) -> int | None:
        """The index of the entry that undid entry `index`, if one did."""
        return self._undone.get(index)

    def plan_progress(self, plan_id: str) -> int:
        """How many steps of the approved plan `plan_id` ran."""
        return self._plans.get(plan_id, 0)


def _amount(value: Any) -> Decimal:
    """A recorded amount as a decimal; anything that is not a number, 0 or more, counts 0 (a
    negative amount never makes room under a cap)."""
    return cents(value) if is_amount(value) else Decimal(0)
