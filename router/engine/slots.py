"""Filling a tool's arguments from a reading: which value of the turn goes to which argument.

Values are placed in this order, each at most once, and only where the argument's own schema
accepts them (a value it refuses is kept as `invalid`, to be asked for again):

1. free text: text after a marker goes to the text argument of that kind (a note to `note`, a
   reason to `reason`), else to the one text argument; quoted text to the one text argument (or
   the one plain string argument);
2. values that say what they are: e-mail addresses, URLs, channels and dates to arguments of that
   slot, in order;
3. states ("open", "pagos") to the `enum` argument that has that value;
4. a plain word said after an argument's noun ("site norte") to that argument;
5. a number or id said after a noun to the argument named after that noun ("pedido 4411" ->
   `order_id`, "valor de 40,00" -> `amount`);
6. money ("$20", "R$ 40,00") to the amount argument;
7. any other number or id to the one argument left that accepts it; where two or more would,
   the value is not placed (the person is asked rather than guessed at).

What is left is never dropped. A value the one argument of its kind refuses ("the 70 latest" where
`limit` is at most 50) is `invalid`, to be asked for again; a value two arguments could take is
`unplaced`, with the arguments that could (the router asks for one of them, or does not plan the
turn); a value no argument takes is `leftover` (the router leaves the turn unread, naming it).
`base` is what an earlier turn already gave (the call an `ask` was completing): those values stay
unless this turn says the same argument again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .reader import Reading
from .tools import Param, ToolProfile
from .values import CHANNEL, DATE, EMAIL, ID, MONEY, NUMBER, TEXT, URL, Value
from .values import WORD as WORD_VALUE

TYPED = "typed"
TOOL = "tool"


@dataclass
class Filled:
    """A tool's arguments as the turn fills them."""

    arguments: dict[str, Any] = field(default_factory=dict)
    said: dict[str, str] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    invalid: dict[str, str] = field(default_factory=dict)
    leftover: list[Value] = field(default_factory=list)
    unplaced: list[tuple[Value, tuple[str, ...]]] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    used: set[int] = field(default_factory=set)
    sources: dict[str, Value] = field(default_factory=dict)

    def missing(self, profile: ToolProfile) -> list[str]:
        """The arguments to ask for: required ones not given, and any whose typed value the
        schema refused (optional or not: a refused value is asked for again, never dropped)."""
        return [
            p.name
            for p in profile.params
            if p.name not in self.arguments and (p.required or p.name in self.invalid)
        ]


def _normal(text: str) -> str:
    return str(text).strip().lower().replace(" ", "_").replace("-", "_")


def convert(param: Param, value: Value) -> Any:
    """The value as the argument takes it, or None where the slot does not take that kind."""
    slot = param.slot
    kind = value.kind
    if slot == "id":
        if kind in (ID, NUMBER, WORD_VALUE):
            if kind == NUMBER and not isinstance(value.value, int):
                return None
            text = str(value.value) if kind != NUMBER else value.text.strip().lstrip("#")
            if param.integer:
                return int(text) if text.isdigit() else None
            return text
        return None
    if slot == "number":
        if kind in (NUMBER, MONEY) and not isinstance(value.value, bool):
            number = value.value
            if param.integer:
                if isinstance(number, float) and not number.is_integer():
                    return None
                return int(number)
            return number
        return None
    if slot == "email":
        return value.value if kind == EMAIL else None
    if slot == "url":
        return value.value if kind == URL else None
    if slot == "channel":
        return value.value if kind == CHANNEL else None
    if slot == "date":
        if kind != DATE:
            return None
        if param.schema.get("format") == "date-time":
            return f"{value.value}T00:00:00Z"
        return value.value
    if slot == "text":
        return value.value if kind == TEXT else None
    if slot == "string":
        return value.value if kind in (TEXT, WORD_VALUE) else None
    return None


def fill(
    profile: ToolProfile,
    reading: Reading,
    *,
    base: Mapping[str, Any] | None = None,
    base_origins: Mapping[str, str] | None = None,
    base_said: Mapping[str, str] | None = None,
) -> Filled:
    """Fill `profile`'s arguments from `reading` (see the module docstring)."""
    filled = Filled()
    params = profile.params
    if not (reading.values or reading.texts or reading.statuses):
        _merge_base(filled, profile, base, base_origins, base_said, set())
        return filled
    free: dict[str, Param] = {p.name: p for p in params}
    given: set[str] = set()
    used = filled.used

    def put(param: Param, value: Value, converted: Any, how: str) -> bool:
        if not param.validate(converted):
            # The argument is the person's, refused: it is asked for again, and no later value
            # is guessed into it in place of what they typed.
            filled.invalid.setdefault(param.name, value.text)
            free.pop(param.name, None)
            used.add(id(value))
            filled.trace.append(f"`{value.text}` does not fit {param.name}")
            return False
        filled.arguments[param.name] = converted
        filled.sources[param.name] = value
        filled.said[param.name] = value.text
        filled.origins[param.name] = TYPED
        filled.invalid.pop(param.name, None)
        free.pop(param.name, None)
        given.add(param.name)
        used.add(id(value))
        filled.trace.append(f"`{value.text}` -> {param.name} ({how})")
        return True

    def try_put(param: Param, value: Value, how: str) -> bool:
        converted = convert(param, value)
        if converted is None:
            return False
        return put(param, value, converted, how)

    # 1. free text
    text_params = [p for p in params if p.slot == "text"]
    for value in reading.texts:
        choices = [p for p in text_params if p.name in free and p.text_kind == value.tag]
        if not choices:
            choices = [p for p in text_params if p.name in free]
        if len(choices) != 1 and value.tag == "quoted" and not text_params:
            choices = [p for p in params if p.slot == "string" and p.name in free]
        if len(choices) == 1:
            try_put(choices[0], value, "text")
    values = [v for v in reading.values]
    # 2. values that say what they are
    kinds = {v.kind for v in values}
    for kind, slot in ((EMAIL, "email"), (URL, "url"), (CHANNEL, "channel"), (DATE, "date")):
        if kind not in kinds:
            continue
        for value in (v for v in values if v.kind == kind):
            for param in [p for p in params if p.slot == slot and p.name in free]:
                if try_put(param, value, kind):
                    break
    # 3. states
    for word in reading.statuses:
        concept = word.concept or word.norm
        for param in [p for p in params if p.slot == "enum" and p.name in free]:
            match = next(
                (item for item in param.enum if _normal(str(item)) == _normal(concept)), None
            )
            if match is None:
                match = next((item for item in param.enum if _normal(str(item)) == word.norm), None)
            if match is not None and param.validate(match):
                filled.arguments[param.name] = match
                filled.said[param.name] = word.text
                filled.origins[param.name] = TYPED
                free.pop(param.name, None)
                given.add(param.name)
                filled.trace.append(f"`{word.text}` -> {param.name} (state)")
                break
    # 4. plain words after an argument's noun
    for value in (v for v in values if v.kind == WORD_VALUE):
        for param in [p for p in params if p.slot == "string" and p.name in free]:
            if value.tag in param.cues and try_put(param, value, "after its noun"):
                break
    # 5. numbers and ids after a noun
    for value in (v for v in values if id(v) not in used and v.kind in (NUMBER, ID, MONEY)):
        cue = reading.cues.get(value.start)
        if not cue:
            continue
        for param in [p for p in params if p.name in free and cue in p.cues]:
            if p_slot_takes(param, value) and try_put(param, value, f"after `{cue}`"):
                break
            if p_slot_takes(param, value):
                break
    # 6. money
    for value in (v for v in values if id(v) not in used and v.kind == MONEY):
        amounts = [p for p in params if p.name in free and p.slot == "number" and p.amount]
        if not amounts:
            amounts = [p for p in params if p.name in free and p.slot == "number"]
        if len(amounts) == 1:
            try_put(amounts[0], value, "money")
    # 7. the rest, only where exactly one argument takes it
    for value in (v for v in values if id(v) not in used and v.kind in (NUMBER, ID, MONEY)):
        takers = [
            p
            for p in params
            if p.name in free
            and p_slot_takes(p, value)
            and (c := convert(p, value)) is not None
            and p.validate(c)
        ]
        if value.kind == ID:
            takers = [p for p in takers if p.slot == "id"]
        elif value.kind == NUMBER and isinstance(value.value, float):
            takers = [p for p in takers if p.slot == "number"]
        if len(takers) == 1:
            try_put(takers[0], value, "the one argument that takes it")
    for value in values:
        if id(value) in used:
            continue
        takers = [
            p for p in free.values() if (c := convert(p, value)) is not None and p.validate(c)
        ]
        if takers:
            # Two arguments could take it: placed by neither, so the person is asked -- or, where
            # none of them is asked for, the turn is not planned (`Filled.unplaced`).
            filled.unplaced.append((value, tuple(p.name for p in takers)))
            continue
        # A word said after a noun ("site north") belongs to that noun's argument, never to
        # another one that refuses it; with no such argument it is left over (a listing read
        # may take it).
        refusers = [
            p for p in free.values() if value.kind != WORD_VALUE and convert(p, value) is not None
        ]
        if len(refusers) == 1 and refusers[0].name not in filled.invalid:
            # The one argument of that kind refuses it ("the 70 latest" where at most 50 are
            # read): asked for again, never dropped.
            filled.invalid[refusers[0].name] = value.text
            free.pop(refusers[0].name, None)
            used.add(id(value))
            filled.trace.append(f"`{value.text}` does not fit {refusers[0].name}")
            continue
        filled.leftover.append(value)
    for value in reading.texts:
        if id(value) not in used and value.tag != "reason":
            filled.leftover.append(value)
    _merge_base(filled, profile, base, base_origins, base_said, given)
    return filled


def _merge_base(
    filled: Filled,
    profile: ToolProfile,
    base: Mapping[str, Any] | None,
    base_origins: Mapping[str, str] | None,
    base_said: Mapping[str, str] | None,
    given: set[str],
) -> None:
    """Keep what an earlier turn gave, unless this turn said the same argument again."""
    if not base:
        return
    for name, value in base.items():
        if name not in given and name in profile.by_name:
            filled.arguments.setdefault(name, value)
            filled.origins.setdefault(name, (base_origins or {}).get(name, TYPED))
            if base_said and name in base_said:
                filled.said.setdefault(name, base_said[name])
            filled.invalid.pop(name, None)


def takes(profile: ToolProfile, value: Value) -> bool:
    """Whether some argument of the tool would take the value (its slot and its schema)."""
    for param in profile.params:
        converted = convert(param, value)
        if converted is not None and param.validate(converted):
            return True
    return False


def p_slot_takes(param: Param, value: Value) -> bool:
    """Whether the argument's slot takes a value of this kind at all."""
    return convert(param, value) is not None
