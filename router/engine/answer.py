"""The `extract` composer: a question answered with a sentence copied from the documents, or not.

Documents are given as text (`["...", {"id": "refunds.md", "text": "..."}]`); the composer splits
them into sentences and answers with the one sentence that shares the most meaning with the
question, copied as written, with its source. Nothing is generated, paraphrased or stitched
together, so an answer can only say what a document says.

Meaning is compared word by word after folding and a light stemming (a plural `s`, the pt-BR
plural `es` / `ões`), leaving out the language's function words; rarer words count more (weights
are the inverse of how many sentences hold the word). An answer is grounded only when the sentence
holds at least two of the question's words and at least `coverage` (by weight) of them; otherwise
there is no grounded answer, and the caller refuses.

A document index (the SDK's, in SQLite FTS5) answers through the same test: `Retrieved` asks the
index for the passages that best match the question's stems (`Passages.search`) and for how many
passages hold each stem (`Passages.frequencies`), then grounds a sentence of those passages by the
same two conditions, citing its file and line. With `composer: model`, the grounded passages (never
anything else) are what the model is given to write from, and `Answer.passages` holds them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .lexicon import Lexicon
from .text import fold, words

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n{2,}|\n(?=[-*•] )")
_SKIP = frozenset({"function", "determiner", "modal", "question", "id_cue"})
#: The words a question asks with ("how long", "quanto tempo"), which no passage answers by
#: holding: left out of a question's stems when an index is asked.
_ASKING = frozenset(
    "how what when where which who whom whose why long many much often soon "
    "como quando onde qual quai quem quanto quanta porque tempo".split()
)


@dataclass(frozen=True)
class Sentence:
    text: str
    source: str
    stems: frozenset[str]


@dataclass(frozen=True)
class Answer:
    """A grounded answer: the sentence copied (`extract`), or, for `composer: model`, no text
    yet and the `passages` the model is to write from (each `{n, text, source}`)."""

    text: str
    source: str
    score: float
    composer: str = "extract"
    passages: tuple[Mapping[str, object], ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "text": self.text,
            "source": self.source,
            "score": round(self.score, 3),
        }
        if self.composer != "extract":
            data["composer"] = self.composer
            data["passages"] = [dict(p) for p in self.passages]
        return data


def stems(text: str, lexicon: Lexicon) -> frozenset[str]:
    """The stems a text's meaning is compared on: folded, lightly stemmed, function words out."""
    out = set()
    for word in words(fold(text)):
        entry = lexicon.words.get(word)
        if entry is not None and entry.role in _SKIP:
            continue
        if len(word) < 2:
            continue
        out.add(_stem(word))
    return frozenset(out)


def index_stems(text: str) -> str:
    """Every word of a text as its stem, in order (what an index stores to match `stems`)."""
    return " ".join(_stem(word) for word in words(fold(text)))


def sentences(text: str) -> list[tuple[int, str]]:
    """The sentences of a passage, each with the number of lines before it in the passage."""
    out = []
    position = 0
    for part in _SENTENCE.split(text):
        start = text.find(part, position)
        position = start + len(part) if start >= 0 else position
        clean = " ".join(part.split()).lstrip("-*• ")
        if clean:
            out.append((text.count("\n", 0, max(start, 0)), clean))
    return out


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("oes"):
        return word[:-3] + "ao"
    if len(word) > 4 and word.endswith(("res", "zes", "les")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    # A final `e` off, so the English plural the pt-BR rule above cuts ("expires" -> "expir")
    # and its singular ("expire") meet.
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return word


class Composer:
    """Answers questions from a set of documents, in one language (see the module docstring)."""

    def __init__(
        self, documents: Iterable[str | Mapping[str, str]], lexicon: Lexicon, coverage: float = 0.6
    ) -> None:
        self.lexicon = lexicon
        self.coverage = coverage
        self.sentences: list[Sentence] = []
        for index, document in enumerate(documents):
            if isinstance(document, Mapping):
                text = str(document.get("text", ""))
                source = str(document.get("id") or document.get("title") or f"document {index + 1}")
            else:
                text, source = str(document), f"document {index + 1}"
            for part in _SENTENCE.split(text):
                part = " ".join(part.split()).lstrip("-*• ")
                stems = self._stems(part)
                if stems:
                    self.sentences.append(Sentence(part, source, stems))
        counts: dict[str, int] = {}
        for sentence in self.sentences:
            for stem in sentence.stems:
                counts[stem] = counts.get(stem, 0) + 1
        total = max(1, len(self.sentences))
        self.weight = {stem: math.log(1 + total / n) for stem, n in counts.items()}

    def _stems(self, text: str) -> frozenset[str]:
        return stems(text, self.lexicon)

    def answer(self, question: str) -> Answer | None:
        """The grounded answer to `question`, or None."""
        asked = self._stems(question)
        if len(asked) < 2 or not self.sentences:
            return None
        default = max(self.weight.values(), default=1.0)
        weights = {stem: self.weight.get(stem, default) for stem in asked}
        total = sum(weights.values())
        best: tuple[float, int, Sentence] | None = None
        for position, sentence in enumerate(self.sentences):
            shared = asked & sentence.stems
            if len(shared) < 2:
                continue
            score = sum(weights[stem] for stem in shared) / total
            if best is None or score > best[0]:
                best = (score, -position, sentence)
        if best is None or best[0] < self.coverage:
            return None
        return Answer(best[2].text, best[2].source, best[0])


@dataclass(frozen=True)
class Passage:
    """A passage an index found: its text, the file it is in, and the line it starts at (a
    PDF's page, where it has one)."""

    text: str
    file: str
    line: int
    page: int | None = None

    def where(self, lines_in: int = 0) -> str:
        line = self.line + lines_in
        if self.page is not None:
            return f"{self.file} page {self.page}, line {line}"
        return f"{self.file}:{line}"


class Passages(Protocol):
    """A document index, as `Retrieved` asks it."""

    def search(self, stems: Sequence[str], limit: int) -> list[Passage]: ...

    def frequencies(self, stems: Sequence[str]) -> tuple[int, dict[str, int]]: ...


class Retrieved:
    """Answers questions from an index of passages (see the module docstring).

    `composer` is `extract` (the grounded sentence, copied, cited `file:line`) or `model` (the
    grounded passages, for the model to write from); `limit` is how many passages the index is
    asked for, `given` how many of them a model is given.
    """

    def __init__(
        self,
        index: Passages,
        lexicon: Lexicon,
        *,
        composer: str = "extract",
        coverage: float = 0.6,
        limit: int = 8,
        given: int = 4,
    ) -> None:
        self.index = index
        self.lexicon = lexicon
        self.composer = composer
        self.coverage = coverage
        self.limit = limit
        self.given = given

    def answer(self, question: str) -> Answer | None:
        asked = stems(question, self.lexicon) - _ASKING
        if len(asked) < 2:
            return None
        found = self.index.search(sorted(asked), self.limit)
        if not found:
            return None
        total, counts = self.index.frequencies(sorted(asked))
        total = max(1, total)
        weights = {stem: math.log(1 + total / max(1, counts.get(stem, 0))) for stem in asked}
        whole = sum(weights.values())
        best: tuple[float, Passage, int, str] | None = None
        grounded: list[tuple[float, Passage]] = []
        for passage in found:
            top = 0.0
            for lines_in, sentence in sentences(passage.text):
                shared = asked & stems(sentence, self.lexicon)
                if len(shared) < 2:
                    continue
                score = sum(weights[stem] for stem in shared) / whole
                top = max(top, score)
                if best is None or score > best[0]:
                    best = (score, passage, lines_in, sentence)
            if top >= self.coverage:
                grounded.append((top, passage))
        if best is None or best[0] < self.coverage:
            return None
        score, passage, lines_in, sentence = best
        if self.composer == "extract":
            return Answer(sentence, passage.where(lines_in), score)
        grounded.sort(key=lambda item: -item[0])
        given = tuple(
            {"n": n, "text": " ".join(p.text.split()), "source": p.where()}
            for n, (_score, p) in enumerate(grounded[: self.given], start=1)
        )
        return Answer("", passage.where(lines_in), score, composer=self.composer, passages=given)
