"""Values in a turn, read the way the chosen language writes them, and kept as typed.

One regular expression per language (ASCII: only 0-9 are digits) over the folded turn finds, in this order of
preference: URLs, e-mail addresses, channels (`#team`), dates (ISO `2026-03-05`; `3/5/2026` is
month/day in English and `5/3/2026` day/month in pt-BR; "March 5th", "5 de março", "dia 5", "the
5th"; "in 3 days", "daqui a 3 dias", "3 days ago", "há 3 dias"; "the last 7 days", "últimos 7
dias": the day 7 days back, from which on), money ("$1,234.56", "40 dollars";
"R$ 1.234,56", "40,00", "40 reais"), ids (a word with digits and letters, `A1`, `WO-1042`, or
`#4411`) and numbers ("1,234.56" in English, "1.234,56" in pt-BR).

A number written the other language's way is not guessed at: "40,00" in an English turn, or
"40.00" and "1.5" in a pt-BR turn, is a `Problem`, and the turn is unread with a question that says
how to write it. A date that does not exist (`31/02`) is a problem too.

Free text is found before values, so the words and numbers inside it are never read as anything:
text in quotes ("...", '...', “...”, «...»), and the text after a marker ("saying", "with the
note", "because"; "dizendo", "com a nota", "porque") to the end of the turn.

Relative days and weekdays are words of the lexicon; `resolve_day` turns them into dates, counted
from `today` (a weekday is the next one to come, or the last one gone after "since", "last",
"desde", "passada").
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .lexicon import items

MONEY = "money"
NUMBER = "number"
ID = "id"
EMAIL = "email"
URL = "url"
CHANNEL = "channel"
DATE = "date"
TEXT = "text"
WORD = "word"


@dataclass(frozen=True, slots=True)
class Value:
    """A value of the turn: its kind, its value, the text as typed, and where it stands."""

    kind: str
    value: Any
    text: str
    start: int
    end: int
    tag: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "text": self.text}


@dataclass(frozen=True, slots=True)
class Problem:
    """A value the language does not write that way, and how it would."""

    text: str
    start: int
    end: int
    hint: str


_URL = r"(?P<url>\b(?:https?://|www\.)[^\s<>\"']*[^\s<>\"'.,;:!?)\]])"
_EMAIL = r"(?P<email>\b[a-z0-9][a-z0-9._%+-]*@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b)"
_CHANNEL = r"(?P<channel>(?<![\w#&])#[a-z][a-z0-9_-]{0,79}\b)"
_ISO = r"(?P<iso>\b\d{4}-\d{2}-\d{2}\b)"
_SLASH = r"(?P<slash>\b\d{1,2}/\d{1,2}(?:/(?:\d{4}|\d{2}))?\b)"
_HASHID = r"(?P<hashid>(?<![\w#&])#\d[a-z0-9-]*\b)"
_GLUED = r"(?P<glued>\bn[o.](?=\d)(?P<glued_id>\d[a-z0-9-]*)\b)"
# An id: letters then a digit ("a1", "wo-1042"), or digits then letters or a hyphen ("4411a").
_ID = (
    r"(?P<id>\b[a-z]+(?:-[a-z]+)*-?\d[a-z0-9]*(?:-[a-z0-9]+)*\b"
    r"|\b\d+(?:[a-z]|-[a-z0-9])[a-z0-9]*(?:-[a-z0-9]+)*\b)"
)

_NUM_EN = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_NUM_PT = r"\d{1,3}(?:\.\d{3})+(?:,\d+)?|\d+(?:,\d+)?"


def _months(names: dict[str, int]) -> str:
    return "|".join(sorted((re.escape(name) for name in names), key=len, reverse=True))


@dataclass(frozen=True)
class ValueGrammar:
    """How one language writes values."""

    language: str
    pattern: re.Pattern[str]
    thousands: str
    decimal: str
    day_first: bool
    months: dict[str, int]
    free_text: tuple[tuple[tuple[str, ...], str], ...]
    wrong_hint: str
    openers: frozenset[str] = frozenset()


def value_grammar(language: str, months: dict[str, int], markers: dict[str, str]) -> ValueGrammar:
    """The value grammar of `en` or `pt-BR`, with its month names and free-text markers."""
    month = _months(months)
    if language == "en":
        num = _NUM_EN
        parts = [
            _URL,
            _EMAIL,
            _CHANNEL,
            _ISO,
            _SLASH,
            rf"(?P<mdate>\b(?:{month})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b)",
            rf"(?P<dmonth>\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{month})\b(?:,?\s+\d{{4}})?)",
            r"(?P<ordinal>\bthe\s+\d{1,2}(?:st|nd|rd|th)\b)",
            r"(?P<inn>\bin\s+(?P<inn_n>\d{1,3})\s+days?\b)",
            r"(?P<ago>\b(?P<ago_n>\d{1,3})\s+days?\s+ago\b|\b(?:last|past)\s+(?P<ago_m>\d{1,3})"
            r"\s+days\b)",
            rf"(?P<money>(?:\$|\busd\s?)\s?(?P<money_a>{num})(?!\d)|\b(?P<money_b>{num})\s?"
            r"(?:dollars?|bucks|usd)\b)",
            r"(?P<bad>\b\d+(?:,\d{3})*,(?:\d{1,2}|\d{4,})\b)",
            _HASHID,
            _GLUED,
            _ID,
            rf"(?P<num>\b(?:{num})\b)",
        ]
        thousands, decimal, day_first = ",", ".", False
        hint = "write numbers the English way (1,234.56)"
        openers = {"the", "in", "usd", "$", "last", "past"}
    else:
        num = _NUM_PT
        parts = [
            _URL,
            _EMAIL,
            _CHANNEL,
            _ISO,
            _SLASH,
            rf"(?P<dmonth>\b(?:dia\s+)?\d{{1,2}}\s+de\s+(?:{month})\b(?:\s+de\s+\d{{4}})?)",
            r"(?P<ordinal>\bdia\s+\d{1,2}\b)",
            r"(?P<inn>\b(?:daqui\s+a|em)\s+(?P<inn_n>\d{1,3})\s+dias?\b)",
            r"(?P<ago>\b(?:ha|faz)\s+(?P<ago_n>\d{1,3})\s+dias?\b|\b(?P<ago_m>\d{1,3})\s+dias?"
            r"\s+atras\b|\b(?:ultimos|passados)\s+(?P<ago_l>\d{1,3})\s+dias\b)",
            rf"(?P<money>(?:\br\$|\$|\bbrl\s?)\s?(?P<money_a>{num})(?!\d)|\b(?P<money_b>{num})\s?"
            r"(?:reais|real|brl|pilas?|contos?)\b)",
            r"(?P<bad>\b\d+(?:\.\d{3})*\.(?:\d{1,2}|\d{4,})\b)",
            _HASHID,
            _GLUED,
            _ID,
            rf"(?P<num>\b(?:{num})\b)",
        ]
        thousands, decimal, day_first = ".", ",", True
        hint = "write numbers the Brazilian way (1.234,56)"
        openers = {"dia", "daqui", "em", "ha", "faz", "r$", "brl", "$", "ultimos", "passados"}
    free_text = tuple(
        (tuple(item.split()), kind)
        for kind, text in markers.items()
        for item in sorted(items(text), key=lambda m: -len(m))
    )
    return ValueGrammar(
        language=language,
        pattern=re.compile("|".join(parts), re.ASCII),
        thousands=thousands,
        decimal=decimal,
        day_first=day_first,
        months=months,
        free_text=free_text,
        wrong_hint=hint,
        openers=frozenset(openers | set(months) | {f"{m}." for m in months}),
    )


def parse_number(text: str, grammar: ValueGrammar) -> int | float:
    """A number as the language writes it: `1.234,56` -> 1234.56 in pt-BR."""
    plain = text.replace(grammar.thousands, "").replace(grammar.decimal, ".")
    if "." in plain:
        return float(plain)
    return int(plain)


def _date(year: int, month: int, day: int) -> str | None:
    try:
        return dt.date(year, month, day).isoformat()
    except ValueError:
        return None


# Every value holds a digit, `@`, `#`, `$`, `www.` or `http(s)://`: a turn with none holds none.
_MAY_HOLD_VALUE = re.compile(r"[0-9@#$]|www\.|https?://")
_ANCHOR = re.compile(r"[0-9@#$]|www\.|https?://")
# The characters `\w` matches in the (ASCII) value pattern: where its `\b` can fall.
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")

_QUOTES = re.compile(r"\"([^\"]{1,2000})\"|(?<![a-z])'([^']{1,2000})'(?![a-z])")


def find_quoted(folded: str) -> list[tuple[int, int, int, int]]:
    """Quoted spans: (start, end, inner start, inner end)."""
    out = []
    for match in _QUOTES.finditer(folded):
        group = 1 if match.group(1) is not None else 2
        out.append((match.start(), match.end(), match.start(group), match.end(group)))
    return out


def _anchored(folded: str, grammar: ValueGrammar) -> Iterator[re.Match[str]]:
    """The matches `pattern.finditer` would give, trying only where a value can start.

    Every branch of the pattern holds an anchor (a digit, `@`, `#`, `$`, `www.`, `http`) and
    begins either at a word boundary or with `#` / `$`; a value that spans several words starts at
    a word that opens one ("in 3 days", "daqui a 3 dias", "dia 5", "R$ 40", "march 5"), at most
    three words before its anchor. So, for each anchor not yet inside a match, the pattern is
    tried at those opening words and at every position of the anchor's own word where a branch
    can begin, earliest first -- the same first match the plain scan finds, without trying every
    position of the turn. `find_values_reference` is the plain scan, and a property test holds
    both to the same answer.
    """
    pattern = grammar.pattern
    openers = grammar.openers
    covered = 0
    for anchor in _ANCHOR.finditer(folded):
        at = anchor.start()
        if at < covered:
            continue
        first = max(folded.rfind(" ", 0, at) + 1, covered)
        tried: list[int] = []
        stop = first - 1
        for _ in range(3):
            if stop <= covered:
                break
            start = folded.rfind(" ", 0, stop) + 1
            if start >= covered and folded[start:stop] in openers:
                tried.append(start)
            stop = start - 1
        tried.reverse()
        for p in range(first, at + 1):
            char = folded[p]
            if char in "#$" or (
                char in _WORD_CHARS and (p == 0 or folded[p - 1] not in _WORD_CHARS)
            ):
                tried.append(p)
        for start in tried:
            found = pattern.match(folded, start)
            if found is not None:
                covered = found.end()
                yield found
                break


def find_values_reference(
    turn: str, folded: str, grammar: ValueGrammar, today: dt.date
) -> tuple[list[Value], list[Problem], list[tuple[int, int]]]:
    """`find_values` by scanning every position (the plain engine the fast one is held to)."""
    return _collect(turn, folded, grammar, today, grammar.pattern.finditer(folded))


def find_values(
    turn: str, folded: str, grammar: ValueGrammar, today: dt.date
) -> tuple[list[Value], list[Problem], list[tuple[int, int]]]:
    """The values and problems in `folded` (already masked of free text), and their spans."""
    if not _MAY_HOLD_VALUE.search(folded):
        return [], [], []
    return _collect(turn, folded, grammar, today, _anchored(folded, grammar))


def _collect(
    turn: str,
    folded: str,
    grammar: ValueGrammar,
    today: dt.date,
    matches: Iterable[re.Match[str]],
) -> tuple[list[Value], list[Problem], list[tuple[int, int]]]:
    values: list[Value] = []
    problems: list[Problem] = []
    spans: list[tuple[int, int]] = []
    for match in matches:
        kind = match.lastgroup
        start, end = match.span()
        typed = turn[start:end]
        value: Value | None = None
        if kind == "url":
            value = Value(URL, typed, typed, start, end)
        elif kind == "email":
            value = Value(EMAIL, typed, typed, start, end)
        elif kind == "channel":
            value = Value(CHANNEL, typed, typed, start, end)
        elif kind == "iso":
            year, month, day = (int(p) for p in typed.split("-"))
            iso = _date(year, month, day)
            value = Value(DATE, iso, typed, start, end) if iso else None
        elif kind == "slash":
            parts = [int(p) for p in folded[start:end].split("/")]
            first, second = parts[0], parts[1]
            day, month = (first, second) if grammar.day_first else (second, first)
            year = today.year
            if len(parts) == 3:
                year = parts[2] + (2000 if parts[2] < 100 else 0)
            iso = _date(year, month, day)
            value = Value(DATE, iso, typed, start, end) if iso else None
        elif kind in ("mdate", "dmonth"):
            iso = _named_date(folded[start:end], grammar, today)
            value = Value(DATE, iso, typed, start, end) if iso else None
        elif kind == "ordinal":
            day = int(re.search(r"\d+", folded[start:end]).group())
            iso = _date(today.year, today.month, day)
            value = Value(DATE, iso, typed, start, end) if iso else None
        elif kind == "inn":
            days = int(match.group("inn_n"))
            value = Value(DATE, (today + dt.timedelta(days=days)).isoformat(), typed, start, end)
        elif kind == "ago":
            groups = match.groupdict()
            days = int(groups.get("ago_n") or groups.get("ago_m") or groups.get("ago_l"))
            value = Value(DATE, (today - dt.timedelta(days=days)).isoformat(), typed, start, end)
        elif kind == "money":
            amount = match.group("money_a") or match.group("money_b")
            value = Value(MONEY, parse_number(amount, grammar), typed, start, end)
        elif kind == "bad":
            problems.append(Problem(typed, start, end, grammar.wrong_hint))
            spans.append((start, end))
            continue
        elif kind == "hashid":
            value = Value(ID, typed[1:], typed, start, end)
        elif kind == "glued":
            inner = match.start("glued_id")
            value = Value(ID, turn[inner:end], typed, start, end)
        elif kind == "id":
            value = Value(ID, typed, typed, start, end)
        elif kind == "num":
            number = parse_number(folded[start:end], grammar)
            value = Value(NUMBER, number, typed, start, end, tag=typed)
        if value is None:
            problems.append(Problem(typed, start, end, "this date does not exist"))
            spans.append((start, end))
            continue
        values.append(value)
        spans.append((start, end))
    return values, problems, spans


def _named_date(text: str, grammar: ValueGrammar, today: dt.date) -> str | None:
    numbers = [int(n) for n in re.findall(r"\d+", text)]
    month = None
    for word in re.findall(r"[a-z]+", text):
        if word in grammar.months:
            month = grammar.months[word]
            break
    if month is None or not numbers:
        return None
    day = numbers[0]
    year = numbers[1] if len(numbers) > 1 and numbers[1] > 31 else today.year
    return _date(year, month, day)


def resolve_day(offset: int | None, weekday: int | None, back: bool, today: dt.date) -> str:
    """A relative day (`offset`) or a weekday (next to come; the last one gone when `back`)."""
    if offset is not None:
        return (today + dt.timedelta(days=offset)).isoformat()
    assert weekday is not None
    delta = (weekday - today.weekday()) % 7
    if back:
        delta = delta - 7 if delta else -7
    elif delta == 0:
        delta = 7
    return (today + dt.timedelta(days=delta)).isoformat()
