"""What the router reads about each tool: its action, its nouns, and a slot for each argument.

A tool is read from what it declares, in English (tool names and descriptions are English):

- its actions: the words of its name that the English grammar knows as verbs (`get_order` ->
  `show`, `request_close` -> `request` and `close`), and the verb its description starts with
  ("Refunds an amount ..." -> `refund`); a name whose first word the grammar does not know gives
  that word as its own action (`frobnicate_widget` -> `frobnicate`);
- its nouns: the other words of its name (weighing most), the nouns of its description, and the
  nouns its arguments are named after;
- whether it lists things (a `list`/`search` action, a plural noun in its name, or a result that
  is an array), and the fields its result declares (what a chain can take from it);
- a slot for each argument, from its JSON Schema: `enum`, `boolean`, `email`, `url`, `date`,
  `channel`, `number`, `id`, `text` (free text: notes, messages, reasons) or `string` (one plain
  word, said after the argument's noun: "site norte").

Each argument keeps a validator of its own schema (the guard's fast validator where the schema is
plain, `jsonschema` otherwise), so a value the person typed that the tool would refuse (an order id
of the wrong shape) is asked for again rather than sent to a check that refuses it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from guard.engine.catalogue import Catalogue, OrderRule, Tool
from guard.engine.fastschema import compile_fast
from guard.engine.kinds import is_write
from guard.engine.kinds import words as name_words
from guard.engine.patterns import RE2Validator

from .lexicon import Lexicon
from .text import singular_en

EMAIL_WORDS = frozenset({"email", "mail", "recipient", "recipients", "to", "cc", "bcc"})
URL_WORDS = frozenset({"url", "uri", "link", "webhook", "href", "endpoint"})
DATE_WORDS = frozenset(
    {"date", "since", "until", "day", "due", "before", "after", "when", "deadline", "from",
     "start", "end", "on"}
)  # fmt: skip
CHANNEL_WORDS = frozenset({"channel", "room", "chat"})
AMOUNT_WORDS = frozenset(
    {"amount", "value", "total", "price", "cost", "sum", "quantity", "qty", "limit", "count",
     "fee", "charge", "refund", "max", "min", "number_of"}
)  # fmt: skip
ID_WORDS = frozenset({"id", "number", "code", "ref", "reference", "key", "sku", "no", "nr"})
TEXT_KINDS = {
    "note": "note", "notes": "note", "comment": "note", "comments": "note", "memo": "note",
    "remark": "note", "remarks": "note", "text": "text", "message": "text", "body": "text",
    "content": "text", "subject": "text", "summary": "text", "details": "text",
    "description": "text", "reason": "reason", "justification": "reason", "why": "reason",
}  # fmt: skip

SLOTS = ("enum", "boolean", "email", "url", "date", "channel", "number", "id", "text", "string")


@dataclass(frozen=True)
class Param:
    """One argument of a tool, as the router fills it."""

    name: str
    slot: str
    cues: frozenset[str]
    required: bool
    schema: Mapping[str, Any]
    validate: Callable[[Any], bool]
    enum: tuple[Any, ...] = ()
    integer: bool = False
    amount: bool = False
    text_kind: str | None = None
    label: str = ""


@dataclass(frozen=True)
class ToolProfile:
    """One tool, as the router reads turns against it."""

    name: str
    kind: str
    write: bool
    verbs: frozenset[str]
    name_nouns: frozenset[str]
    nouns: frozenset[str]
    list_like: bool
    params: tuple[Param, ...]
    produces: frozenset[str]
    result_array: bool
    reads_outside: bool
    after: tuple[OrderRule, ...] = ()
    agents: tuple[str, ...] = ()
    countable: bool = False
    by_name: Mapping[str, Param] = field(default_factory=dict)

    @property
    def required(self) -> tuple[str, ...]:
        required = self.__dict__.get("_required")
        if required is None:
            required = tuple(p.name for p in self.params if p.required)
            object.__setattr__(self, "_required", required)
        return required


_FORMATS: dict[str, re.Pattern[str]] = {
    "date": re.compile(r"\d{4}-\d{2}-\d{2}"),
    "date-time": re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})"),
}


def _validator(schema: Any) -> Callable[[Any], bool]:
    """A yes/no check of a value against an argument's own schema.

    The guard's fast validator where the schema is plain; a date or date-time format on top of a
    plain schema is checked here (the router only ever writes ISO dates); anything else goes to
    `jsonschema` with its format checker. The tool check validates the whole call again anyway.
    """
    if not isinstance(schema, (Mapping, bool)):
        return lambda value: True
    fast = compile_fast(schema)
    if fast is not None:
        return fast
    if isinstance(schema, Mapping) and schema.get("format") in _FORMATS:
        plain = compile_fast({k: v for k, v in schema.items() if k != "format"})
        form = _FORMATS[schema["format"]]
        if plain is not None:
            return lambda value: (
                plain(value) and (not isinstance(value, str) or form.fullmatch(value) is not None)
            )
    slow = RE2Validator(schema, format_checker=RE2Validator.FORMAT_CHECKER)
    return slow.is_valid


def _types(schema: Mapping[str, Any]) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return set()


def _concepts(words: Iterable[str], lexicon: Lexicon, role: str) -> set[str]:
    out: set[str] = set()
    for word in words:
        entry = lexicon.words.get(word) or lexicon.words.get(singular_en(word))
        if entry is None:
            continue
        if role == "noun" and entry.role == "noun" and entry.concept:
            out.add(entry.concept)
        elif role == "noun" and entry.role == "verb_first" and entry.alt:
            out.add(entry.alt)
        elif role == "verb" and entry.role in ("verb", "verb_first", "light", "nominal"):
            if entry.concept:
                out.add(entry.concept)
    return out


def _slot(name: str, schema: Mapping[str, Any]) -> tuple[str, bool, bool, str | None]:
    """(slot, integer, amount, text kind) of an argument."""
    parts = name_words(name)
    part_set = set(parts)
    types = _types(schema)
    fmt = schema.get("format")
    text_kind = next((TEXT_KINDS[p] for p in reversed(parts) if p in TEXT_KINDS), None)
    if isinstance(schema.get("enum"), list) or "const" in schema:
        return "enum", False, False, None
    if types == {"boolean"}:
        return "boolean", False, False, None
    if fmt in ("email", "idn-email") or (part_set & EMAIL_WORDS and "id" not in part_set):
        return "email", False, False, None
    if fmt in ("uri", "url", "iri", "uri-reference") or part_set & URL_WORDS:
        return "url", False, False, None
    if fmt in ("date", "date-time") or (
        parts and parts[-1] in DATE_WORDS and not types & {"number", "integer"}
    ):
        return "date", False, False, None
    if part_set & CHANNEL_WORDS:
        return "channel", False, False, None
    if types & {"number", "integer"} and not (parts and parts[-1] in ID_WORDS):
        return "number", types == {"integer"}, bool(part_set & AMOUNT_WORDS), None
    if parts and parts[-1] in ID_WORDS or "pattern" in schema or types & {"integer"}:
        return "id", types == {"integer"}, False, None
    if text_kind is not None or (schema.get("maxLength") or 0) >= 120:
        return "text", False, False, text_kind or "text"
    return "string", False, False, None


def profile_tool(tool: Tool, lexicon: Lexicon, agents: tuple[str, ...]) -> ToolProfile:
    """Read one loaded catalogue tool (see the module docstring)."""
    parts = name_words(tool.name)
    verbs = _concepts(parts, lexicon, "verb")
    description = name_words(tool.description)
    if description:
        first = description[0]
        for candidate in (first, first[:-1] if first.endswith("s") else first, first[:-2]):
            entry = lexicon.words.get(candidate)
            if entry is not None and entry.role in ("verb", "verb_first") and entry.concept:
                verbs.add(entry.concept)
                break
    name_nouns = _concepts(parts, lexicon, "noun")
    plural_name = any((lexicon.words.get(p) is not None and lexicon.words[p].plural) for p in parts)
    if not verbs and parts:
        head = lexicon.words.get(parts[0])
        if head is None or head.role not in ("noun",):
            verbs.add(parts[0])
    for position, part in enumerate(parts):
        entry = lexicon.words.get(part) or lexicon.words.get(singular_en(part))
        if entry is None and part not in verbs:
            name_nouns.add(singular_en(part))
        elif (
            position > 0
            and entry is not None
            and entry.role in ("verb", "light", "nominal", "past")
            and not (entry.concept and entry.concept in verbs)
        ):
            # `get_booking`, `list_returns`: after the action, a word is the thing acted on.
            name_nouns.add(singular_en(part))
    nouns = set(name_nouns) | _concepts(description, lexicon, "noun")
    schema = tool.parameters if isinstance(tool.parameters, Mapping) else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    required = set(schema.get("required") or ())
    params: list[Param] = []
    for name, sub in properties.items():
        sub = sub if isinstance(sub, Mapping) else {}
        slot, integer, amount, text_kind = _slot(name, sub)
        words = name_words(name)
        cues = _concepts(words, lexicon, "noun") | {
            singular_en(w) for w in words if w not in ID_WORDS
        }
        cues |= _concepts(name_words(str(sub.get("description", ""))), lexicon, "noun") & {
            "order", "card", "amount", "email", "note", "site", "customer", "reason", "status",
        }  # fmt: skip
        if slot == "text" and text_kind:
            cues.add(text_kind)
        label = " ".join(w for w in words if w not in ("id",)) or name
        params.append(
            Param(
                name=name,
                slot=slot,
                cues=frozenset(cues),
                required=name in required,
                schema=sub,
                validate=_validator(sub),
                enum=tuple(sub.get("enum") or ((sub["const"],) if "const" in sub else ())),
                integer=integer,
                amount=amount,
                text_kind=text_kind,
                label=label,
            )
        )
        nouns |= cues & set(lexicon.words)
    result = tool.result_schema if isinstance(tool.result_schema, Mapping) else {}
    result_array = result.get("type") == "array"
    fields = result.get("properties")
    if result_array and isinstance(result.get("items"), Mapping):
        fields = result["items"].get("properties")
    produces = frozenset(fields) if isinstance(fields, Mapping) else frozenset()
    list_like = bool(verbs & {"list", "search"}) or result_array or plural_name
    # A read that takes a limit returns several things (`read_inbox(limit)`): a calculation may
    # count or sum over it, though a turn that names one thing still reads it as one.
    countable = list_like or any("limit" in p.cues for p in params)
    return ToolProfile(
        name=tool.name,
        kind=tool.kind,
        write=is_write(tool.kind),
        verbs=frozenset(verbs),
        name_nouns=frozenset(name_nouns),
        nouns=frozenset(nouns),
        list_like=list_like,
        countable=countable,
        params=tuple(params),
        produces=produces,
        result_array=result_array,
        reads_outside=bool(tool.reads_outside),
        after=tuple(tool.after),
        agents=agents,
        by_name={p.name: p for p in params},
    )


def profile_catalogue(catalogue: Catalogue, lexicon: Lexicon) -> dict[str, ToolProfile]:
    """Every tool of the catalogue that is not withdrawn, read."""
    owners: dict[str, list[str]] = {}
    for agent in catalogue.agents.values():
        for name in agent.tool_order:
            owners.setdefault(name, []).append(agent.name)
    return {
        name: profile_tool(tool, lexicon, tuple(owners.get(name, ())))
        for name, tool in catalogue.tools.items()
        if not tool.withdrawn
    }


def catalogue_words(catalogue: Catalogue) -> set[str]:
    """Every word the catalogue's names, descriptions, arguments and enums use (English)."""
    out: set[str] = set()
    for tool in catalogue.tools.values():
        out.update(name_words(tool.name))
        out.update(name_words(tool.description))
        parameters = tool.parameters if isinstance(tool.parameters, Mapping) else {}
        properties = parameters.get("properties")
        if isinstance(properties, Mapping):
            for name, sub in properties.items():
                out.update(name_words(name))
                if isinstance(sub, Mapping):
                    out.update(name_words(str(sub.get("description", ""))))
                    for item in sub.get("enum") or ():
                        if isinstance(item, str):
                            out.update(name_words(item))
    return {word for word in out if word.isalpha()}
