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
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .lexicon import Lexicon
from .text import fold, words

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n{2,}|\n(?=[-*•] )")
_SKIP = frozenset({"function", "determiner", "modal", "question", "id_cue"})


@dataclass(frozen=True)
class Sentence:
    text: str
    source: str
    stems: frozenset[str]


@dataclass(frozen=True)
class Answer:
    text: str
    source: str
    score: float

    def to_dict(self) -> dict[str, object]:
        return {"text": self.text, "source": self.source, "score": round(self.score, 3)}


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("oes"):
        return word[:-3] + "ao"
    if len(word) > 4 and word.endswith(("res", "zes", "les")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
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
        out = set()
        for word in words(fold(text)):
            entry = self.lexicon.words.get(word)
            if entry is not None and entry.role in _SKIP:
                continue
            if len(word) < 2:
                continue
            out.add(_stem(word))
        return frozenset(out)

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
