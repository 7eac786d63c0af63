"""The rulebook's `define user` intents, read as the router reads turns.

Each example of an intent is read like a turn (same language, same lexicon) and kept as its
signature: the words that carry meaning, in order, with every value written as `#`. A turn matches
an intent when its signature is the example's -- so "por favor, estorne o pedido 5522" matches
"estorne o pedido 4411" (politeness and other function words do not count, and any number stands
for any number) -- and nothing else: examples are the rulebook author's sentences, read closely,
never stretched to what they might mean.

What an intent leads to comes from the flows that start from it: the tools its flows `execute`
(the turn is read as a call of one of them), or, where its flows execute no tool and answer with a
refusal (a bot message whose name says refuse, decline or cannot; `stop`; `abort`), a refusal
naming the flow (`declined`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .reader import Reader, Reading, Word

_REFUSAL_WORDS = ("refuse", "refusal", "decline", "cannot", "can't", "deny", "recus", "nega")
_NEUTRAL = frozenset({"function", "modal", "determiner", "id_cue"})
_DAY = dt.date(2000, 1, 3)


@dataclass(frozen=True)
class Intent:
    """One `define user` intent: its signatures and what its flows lead to."""

    name: str
    line: int | None
    signatures: frozenset[tuple[str, ...]]
    tools: tuple[str, ...]
    refusal: tuple[str, str] | None  # (flow, reason)


def signature(reading: Reading) -> tuple[str, ...]:
    """The words of a reading that carry meaning, in order, values as `#`."""
    out: list[str] = []
    for item in reading.items:
        if isinstance(item, Word):
            if item.role in _NEUTRAL:
                continue
            out.append(item.typo or item.norm)
        else:
            out.append("#")
    for _text in reading.texts:
        out.append("#text")
    return tuple(out)


def _walk(node: Any) -> Iterable[Mapping[str, Any]]:
    if isinstance(node, Mapping):
        if "step" in node:
            yield node
        for value in node.values():
            if isinstance(value, (list, Mapping)):
                yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


def _flows_by_intent(record: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for flow in record.get("flows") or ():
        if not isinstance(flow, Mapping):
            continue
        for step in _walk(flow.get("steps")):
            if step.get("step") == "user" and isinstance(step.get("intent"), str):
                out.setdefault(step["intent"], []).append(flow)
    return out


def _leads_to(flows: list[Mapping[str, Any]]) -> tuple[tuple[str, ...], tuple[str, str] | None]:
    tools: list[str] = []
    refusal: tuple[str, str] | None = None
    for flow in flows:
        name = str(flow.get("name", ""))
        for step in _walk(flow.get("steps")):
            kind = step.get("step")
            if kind == "tool" and isinstance(step.get("tool"), str):
                if step["tool"] not in tools:
                    tools.append(step["tool"])
            elif kind == "bot" and refusal is None:
                message = str(step.get("message") or step.get("text") or "")
                if any(word in message.lower() for word in _REFUSAL_WORDS):
                    refusal = (name, message)
            elif kind in ("stop", "abort") and refusal is None:
                refusal = (name, str(kind))
    return tuple(tools), (refusal if not tools else None)


def learn_intent_words(record: Mapping[str, Any] | None, reader: Reader) -> bool:
    """Make the words of the rulebook's examples known, where an example is in this language.

    An example most of whose words the lexicon knows is taken to be written in the router's
    language, and its other words are added as plain known words (role `word`), so a turn that
    says the example can be read and matched. An example mostly unknown (written in the other
    language) adds nothing. Returns whether a word was added.
    """
    if not isinstance(record, Mapping):
        return False
    from .lexicon import Entry

    added = False
    for intent in record.get("user_intents") or ():
        if not isinstance(intent, Mapping):
            continue
        for example in intent.get("examples") or ():
            if not isinstance(example, str):
                continue
            reading = reader.read(example, _DAY)
            known = sum(1 for item in reading.items if isinstance(item, Word)) - len(
                reading.unknown
            )
            if reading.pt_pt or not reading.unknown or known < 2 * len(reading.unknown):
                continue
            for item in reading.items:
                if isinstance(item, Word) and item.role == "unknown":
                    reader.lexicon.put(item.norm, Entry("word", source="intent"))
                    added = True
    return added


def read_intents(record: Mapping[str, Any] | None, reader: Reader) -> tuple[Intent, ...]:
    """The record's intents, each example read with `reader`."""
    if not isinstance(record, Mapping):
        return ()
    by_intent = _flows_by_intent(record)
    out: list[Intent] = []
    for intent in record.get("user_intents") or ():
        if not isinstance(intent, Mapping) or not isinstance(intent.get("name"), str):
            continue
        signatures = set()
        for example in intent.get("examples") or ():
            if isinstance(example, str) and example.strip():
                reading = reader.read(example, _DAY)
                if not reading.unknown and not reading.pt_pt:
                    signatures.add(signature(reading))
        tools, refusal = _leads_to(by_intent.get(intent["name"], []))
        out.append(
            Intent(intent["name"], intent.get("line"), frozenset(signatures), tools, refusal)
        )
    return tuple(out)


def match(intents: Iterable[Intent], reading: Reading) -> Intent | None:
    """The intent whose example the turn says (see the module docstring), or None."""
    if not intents:
        return None
    mine = signature(reading)
    if not mine:
        return None
    for intent in intents:
        if mine in intent.signatures:
            return intent
    return None
