"""Text helpers of the router: folding (lowercase, accents off), words, and a typo index.

`fold` maps every character to exactly one character (uppercase to lowercase, accented Latin letters
to their base letter, typographic quotes and dashes to plain ones), so a position in the folded turn
is the same position in the turn as typed: values are found in the folded text and kept as typed.
Characters outside Latin-1 and Latin Extended-A are left as they are; words written with them are
simply unknown to both grammars.

`TypoIndex` finds, for a word the lexicon does not know, the one known word at most one edit away
(a letter missing, added, changed, or two neighbours swapped) by the symmetric-delete method: each
known word is stored under itself and under every form with one letter deleted, and a word is
looked up the same way, so a lookup costs a handful of dictionary probes whatever the lexicon's
size. A typo is read only where exactly one known word fits, the word has at least four letters,
and its first letter is right (people rarely mistype the first letter, and this keeps `sand` from
being read as `send` through a swap at the front).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_SPECIAL = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u00ab": '"',
    "\u00bb": '"',
    "\u2013": "-",
    "\u2014": "-",
    "\u2212": "-",
    "\u00a0": " ",
    "\t": " ",
    "\n": " ",
    "\r": " ",
    "\x0b": " ",
    "\x0c": " ",
    "\u202f": " ",
    "\u00ba": "o",
    "\u00aa": "a",
    "\u00b0": "o",
}


def _fold_table() -> dict[int, str]:
    table: dict[int, str] = {}
    for code in range(0x0, 0x180):
        char = chr(code)
        lowered = char.lower()
        base = "".join(
            c for c in unicodedata.normalize("NFD", lowered) if not unicodedata.combining(c)
        )
        if len(base) == 1 and base != char:
            table[code] = base
    for char, plain in _SPECIAL.items():
        table[ord(char)] = plain
    return table


FOLD_TABLE = _fold_table()


def fold(text: str) -> str:
    """Lowercase, accents off, plain quotes and dashes; one character for one character."""
    return text.translate(FOLD_TABLE)


WORD = re.compile(r"[^\W\d_]+(?:['-][^\W\d_]+)*")


def words(text: str) -> list[str]:
    """The words of a folded text."""
    return WORD.findall(text)


def singular_en(word: str) -> str:
    """A plain English singular: `orders` -> `order`, `boxes` -> `box`, `policies` -> `policy`."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def one_edit(a: str, b: str) -> bool:
    """Say whether `b` is `a` with one letter missing, added, changed, or two neighbours swapped."""
    if a == b:
        return False
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la == lb:
        diff = [i for i in range(la) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    if la > lb:
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i:] == b[i + 1 :]


def _swapped(a: str, b: str) -> bool:
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    return len(diff) == 2 and diff[1] == diff[0] + 1


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


class TypoIndex:
    """Known words, and the one known word a typo stands for (see the module docstring)."""

    MIN_LENGTH = 4

    def __init__(self, known: Iterable[str]) -> None:
        self._known: set[str] = set()
        self._by_key: dict[str, set[str]] = {}
        self._cache: dict[str, set[str]] = {}
        for word in known:
            self.add(word)

    def add(self, word: str) -> None:
        self._cache.clear()
        if len(word) < self.MIN_LENGTH - 1 or word in self._known:
            return
        self._known.add(word)
        self._by_key.setdefault(word, set()).add(word)
        for key in _deletions(word):
            self._by_key.setdefault(key, set()).add(word)

    def candidates(self, word: str) -> set[str]:
        """Every known word one edit away whose first letter matches (see `correct`)."""
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        found = self._candidates(word)
        if len(self._cache) >= 4096:
            self._cache.clear()
        self._cache[word] = found
        return found

    def _candidates(self, word: str) -> set[str]:
        if len(word) < self.MIN_LENGTH - 1 or word in self._known or not word.isascii():
            return set()
        found: set[str] = set()
        by_key = self._by_key
        hit = by_key.get(word)
        if hit:
            found |= hit
        for key in _deletions(word):
            hit = by_key.get(key)
            if hit:
                found |= hit
        found = {c for c in found if c[0] == word[0] and one_edit(word, c)}
        if len(word) < 5:
            found = {c for c in found if len(c) != len(word) or _swapped(word, c)}
        if len(word) < self.MIN_LENGTH:
            found = {c for c in found if len(c) == len(word)}
        return found

    def correct(self, word: str) -> str | None:
        """The single known word one edit away whose first letter matches, or None.

        A changed letter is read only in words of five letters or more ("ship" is a word, not a
        typo of "shop"); a three-letter word only as two swapped letters ("teh").
        """
        if len(word) < self.MIN_LENGTH - 1 or word in self._known or not word.isascii():
            return None
        found: set[str] = set()
        by_key = self._by_key
        hit = by_key.get(word)
        if hit:
            found |= hit
        for key in _deletions(word):
            hit = by_key.get(key)
            if hit:
                found |= hit
        found = {c for c in found if c[0] == word[0] and one_edit(word, c)}
        if len(word) < 5:
            found = {c for c in found if len(c) != len(word) or _swapped(word, c)}
        if len(word) < self.MIN_LENGTH:
            found = {c for c in found if len(c) == len(word)}
        if len(found) != 1:
            return None
        return next(iter(found))
