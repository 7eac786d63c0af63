"""The lexicon a turn is read with: one per language, built from the grammar's word lists.

A lexicon maps a folded word (or a phrase of up to four words) to an `Entry`: its role and, for
verbs, nouns and statuses, the concept it stands for. Concepts are English words as tools name
them (`refund`, `order`, `paid`), so a pt-BR turn reaches a tool named in English through them:
`estorne` -> verb `refund`, `pedido` -> noun `order`, `pagos` -> status `paid`.

Roles (see `reader` for how each is used):

    function     a word that carries no request (articles, pronouns, politeness, fillers)
    determiner   a function word after which a verb is read as a noun ("the refund")
    modal        a word that may open a request ("please", "can", "pode", "quero")
    verb         an action, read wherever it stands (unless after a determiner)
    verb_first   an action only at the head of the request ("email the receipt"), else the noun
                 `alt` ("the email on order 4411")
    nominal      an action said as a noun ("estorno", "cancellation"): used when no verb is said
    light        a verb that asks for little by itself ("get", "faz"): used when nothing else is
    past         a past form ("refunded", "estornado"): not an action; a status where one exists
    noun         a thing, with `plural`
    status       a state an argument can hold (`open`, `paid`)
    compute      a word asking for a calculation ("total", "quantos")
    all          a word for "every one of them"
    negation     a word that turns a request around ("don't", "não")
    tag          a tag at the end of a question ("... paid or not?", "... ou não?"): the turn asks
                 about a state; anywhere else it is a negation
    refer        a word that points back at an earlier request ("the same for 4412", "mesma
                 coisa"): what to do is not said in this turn
    question     a how-to or why question, which no tool answers
    date         a relative day (`offset` days from today) or a weekday
    id_cue       a word between a noun and its id ("number", "nº", "#")
    weak         a word known but never read as an action ("open", "abra")
    pt_pt        a word of European Portuguese, which the pt-BR grammar does not read
    tool         a phrase of the vocabulary file that names one tool outright
    word         a plain known word, from a rulebook example: it means nothing to the tools

Generated verb forms never take the place of a word the grammar lists in another role: a function
word, a noun or a status stays what it is (`dê` folds to `de`, which stays a preposition).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .text import fold

FAMILIES = ("read", "write", "send")
READ, WRITE, SEND = FAMILIES

ROLES = frozenset(
    {
        "function", "determiner", "modal", "verb", "verb_first", "nominal", "light", "past",
        "noun", "status", "compute", "all", "negation", "question", "date", "id_cue", "weak",
        "pt_pt", "tool", "word", "tag", "refer",
    }
)  # fmt: skip

# Roles a generated or listed verb form may not take over.
_KEEP = frozenset(
    {
        "function",
        "determiner",
        "modal",
        "noun",
        "status",
        "negation",
        "question",
        "pt_pt",
        "date",
        "tag",
        "refer",
    }
)
_PRIORITY = {
    "pt_pt": 9,
    "tool": 9,
    "negation": 8,
    "question": 8,
    "tag": 8,
    "refer": 8,
    "date": 7,
    "id_cue": 7,
    "status": 6,
    "compute": 6,
    "all": 6,
    "determiner": 5,
    "function": 4,
    "modal": 4,
    "noun": 3,
    "weak": 3,
    "verb": 2,
    "verb_first": 2,
    "nominal": 2,
    "light": 2,
    "past": 1,
    "word": 0,
}


@dataclass(frozen=True, slots=True)
class Entry:
    """What a word or phrase is in one language."""

    role: str
    concept: str | None = None
    plural: bool = False
    offset: int | None = None
    weekday: int | None = None
    alt: str | None = None
    source: str = "grammar"


class Lexicon:
    """One language's words and phrases, as the reader looks them up."""

    def __init__(self, language: str) -> None:
        self.language = language
        self.words: dict[str, Entry] = {}
        self.phrases: dict[tuple[str, ...], Entry] = {}
        self.families: dict[str, str] = {}
        self.months: dict[str, int] = {}
        self.yes: set[str] = set()
        self.no: set[str] = set()
        self.max_phrase = 1
        self.heads: dict[str, int] = {}

    # -- building ------------------------------------------------------------------------------

    def put(self, text: str, entry: Entry, *, force: bool = False) -> None:
        """Add a word or phrase; an entry of a stronger role is never replaced unless forced."""
        key = fold(text).strip()
        if not key:
            return
        parts = tuple(part for part in key.replace("-", " - ").split() if part)
        if len(parts) == 1 or (len(parts) == 3 and parts[1] == "-"):
            word = key.replace(" ", "")
            self._put_word(word, entry, force)
            if "-" in word:
                self._put_word(word.replace("-", ""), entry, force)
                self._put_phrase(tuple(word.split("-")), entry, force)
            return
        parts = tuple(p for p in key.replace("-", " ").split() if p)
        self._put_phrase(parts, entry, force)

    def _put_word(self, word: str, entry: Entry, force: bool) -> None:
        old = self.words.get(word)
        if old is not None and not force:
            if old.role in _KEEP and entry.role not in _KEEP:
                return
            if _PRIORITY.get(old.role, 0) > _PRIORITY.get(entry.role, 0):
                return
        self.words[word] = entry

    def _put_phrase(self, parts: tuple[str, ...], entry: Entry, force: bool) -> None:
        if len(parts) == 1:
            self._put_word(parts[0], entry, force)
            return
        old = self.phrases.get(parts)
        if (
            old is not None
            and not force
            and _PRIORITY.get(old.role, 0) > _PRIORITY.get(entry.role, 0)
        ):
            return
        self.phrases[parts] = entry
        self.heads[parts[0]] = max(self.heads.get(parts[0], 0), len(parts))
        self.max_phrase = max(self.max_phrase, len(parts))

    def put_all(self, texts: Iterable[str], entry: Entry) -> None:
        for text in texts:
            self.put(text, entry)

    def verb(self, concept: str, family: str) -> None:
        self.families.setdefault(concept, family)

    # -- reading -------------------------------------------------------------------------------

    def get(self, word: str) -> Entry | None:
        return self.words.get(word)

    def family(self, concept: str | None) -> str | None:
        if concept is None:
            return None
        return self.families.get(concept)


def items(text: str) -> list[str]:
    """The items of a grammar list: separated by white space, `_` joining a phrase's words."""
    return [item.replace("_", " ") for item in text.split()]
