"""Reading one turn: values, free text and words, each word given its role in the request.

How a turn is read (no model, no guessing of the language):

1. fold it (lowercase, accents off, white space plain; one character for one, so spans stay
   those of the turn); a turn longer than `MAX_TURN` characters is not read at all;
2. take out free text: quoted text, then the text after a marker ("saying", "com a nota", ...)
   to the end; nothing in it is read as a word or a value. Some markers open free text only
   where a clause follows them (`since the pump was replaced`, never `since the 2nd`);
3. note what only European Portuguese says ("estou a ver"), take out tool names typed as they
   are (`get_order`), then values (`values`), noting the ones written the other language's way;
4. split the rest into words and look each up -- phrases of up to four words first -- in the
   lexicon (grammar + catalogue + vocabulary); a word not there may be a typo of known words
   that all mean the same (`text.TypoIndex`); a word still unknown is kept as unknown, a word of
   Portugal as `pt_pt` ("mostra-me": a "tu" imperative with a pronoun after it);
5. settle roles by position: a verb after a determiner is a noun ("the refund"), a verb that is
   also a common noun is an action only at the head of a request ("email the receipt" / "the
   email on order 4411"; a conjunction starts a new head), an auxiliary at the head makes a
   question about a state ("did you refund ...?"), "no"/"nº" before a number is not a negation,
   "para" at the head is "stop", `OS` is the work order where the article cannot stand ("a OS
   742"), a weekday after (or before) "since"/"passada" looks back, "foram abertas" is when they
   were opened (not a state), a plain word after a noun that names a text argument ("site norte")
   is that argument's value, a marking verb with `como`/`as` and a state marks, a tag that ends
   the turn ("... or not?", "... ou não?") makes it a question about a state, and a word that
   points back ("the same for 4412") is kept, so the turn is not read as a request of its own;
6. give each value the noun it follows ("pedido 4411" -> order), skipping "number", "nº", "#" and
   function words.

The reading says what the turn asks (its actions, nouns, states and values) and what stops it
from being read (unknown words, European Portuguese, a negation, a how-to question, a bad number);
the router decides what to do with it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .lexicon import Entry, Lexicon
from .text import WORD, TypoIndex, fold
from .values import (
    DATE,
    ID,
    MONEY,
    NUMBER,
    TEXT,
    Problem,
    Value,
    ValueGrammar,
    find_quoted,
    find_values,
    resolve_day,
)
from .values import WORD as WORD_VALUE

# A turn longer than this is not read at all (it is unread): nobody types a request this long, and
# reading stays cheap whatever is sent.
MAX_TURN = 2000

# Roles that may stand before the head of a request without being its action.
_LEAD = frozenset({"function", "modal", "determiner", "negation", "date", "id_cue"})
_CUE_SKIP = frozenset({"function", "determiner", "id_cue", "modal"})
# What a typo may be read as: words that carry the request, and the common little words (not a
# light verb: "trata" is a word of its own, and reading it as "traga" would say little anyway).
_TYPO_ROLES = frozenset(
    {"verb", "verb_first", "nominal", "noun", "status", "function", "determiner", "modal",
     "compute", "negation"}
)  # fmt: skip
# Words after which `os` is the work order ("a OS 742", "da os 742"), never the article.
_BEFORE_OS = frozenset(
    {"a", "da", "na", "uma", "pela", "essa", "esta", "sua", "minha", "nossa", "dessa", "desta",
     "nessa", "nesta", "as", "das", "nas", "suas", "minhas", "umas", "de", "com"}
)  # fmt: skip
# Words a turn signs off with, trimmed from the end of free text: they are not part of a note.
_TRAILING = frozenset(
    {"please", "pls", "plz", "thanks", "thank you", "thx", "ty", "por favor", "pf", "pfv",
     "obrigado", "obrigada", "valeu", "vlw", "obg", "cheers", "many thanks", "thanks a lot",
     "thanks in advance", "regards", "kind regards", "best regards", "abraço", "abraco",
     "abraços", "abracos", "abs", "att", "atenciosamente", "valeu demais", "obrigadão",
     "obrigadao", "desde já agradeço", "desde ja agradeco", "muito obrigado", "muito obrigada",
     "grato", "grata"}
)  # fmt: skip


@dataclass(slots=True)
class Word:
    """A word (or phrase) of the turn and its role."""

    text: str
    norm: str
    start: int
    end: int
    entry: Entry | None
    role: str
    concept: str | None = None
    plural: bool = False
    typo: str | None = None


@dataclass
class Reading:
    """What a turn says, for the router (see the module docstring)."""

    turn: str
    language: str
    items: list[Word | Value] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)
    texts: list[Value] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    pt_pt: list[str] = field(default_factory=list)
    typos: list[tuple[str, str]] = field(default_factory=list)
    negated: list[str] = field(default_factory=list)
    question: list[str] = field(default_factory=list)
    refers: list[str] = field(default_factory=list)
    compute: list[str] = field(default_factory=list)
    every: bool = False
    verbs: list[Word] = field(default_factory=list)
    nominals: list[Word] = field(default_factory=list)
    lights: list[Word] = field(default_factory=list)
    weak: list[Word] = field(default_factory=list)
    nouns: list[Word] = field(default_factory=list)
    statuses: list[Word] = field(default_factory=list)
    tools_named: list[str] = field(default_factory=list)
    cues: dict[int, str] = field(default_factory=dict)
    content: int = 0
    state_question: bool = False
    too_long: bool = False
    whole: bool = False

    @property
    def empty(self) -> bool:
        return not self.values and not self.texts and not self.content

    def noun_concepts(self) -> set[str]:
        return {word.concept for word in self.nouns if word.concept}

    def plural_nouns(self) -> set[str]:
        return {word.concept for word in self.nouns if word.concept and word.plural}


class Reader:
    """Reads turns of one language against a lexicon made for one catalogue and vocabulary."""

    def __init__(
        self,
        lexicon: Lexicon,
        grammar: ValueGrammar,
        *,
        capture: frozenset[str] = frozenset(),
        tool_names: frozenset[str] = frozenset(),
        id_nouns: Mapping[str, str] | None = None,
        date_back: frozenset[str] = frozenset(),
        tu_imperatives: frozenset[str] = frozenset(),
        plural_determiners: frozenset[str] = frozenset(),
        auxiliaries: frozenset[str] = frozenset(),
        separators: frozenset[str] = frozenset(),
        patterns: tuple[re.Pattern[str], ...] = (),
        mark_verbs: frozenset[str] = frozenset(),
        mark_words: frozenset[str] = frozenset(),
        head_negations: frozenset[str] = frozenset(),
        clause_markers: tuple[tuple[str, str, str], ...] = (),
        whole: frozenset[str] = frozenset(),
        head_courtesy: frozenset[str] = frozenset(),
        particles: Mapping[str, tuple[tuple[tuple[str, ...], str], ...]] | None = None,
        number_words: Mapping[str, int] | None = None,
        money_words: frozenset[str] = frozenset(),
        head_compute: frozenset[str] = frozenset(),
    ) -> None:
        self.head_compute = head_compute
        self.number_words = dict(number_words or {})
        self.money_words = money_words
        self.lexicon = lexicon
        self.whole = whole
        self.head_courtesy = head_courtesy
        self.particles = dict(particles or {})
        self.grammar = grammar
        self.capture = capture
        self.tool_names = tool_names
        self.id_nouns = dict(id_nouns or {})
        self.date_back = date_back
        self.tu_imperatives = tu_imperatives
        self.plural_determiners = plural_determiners
        self.auxiliaries = auxiliaries
        self.separators = separators
        self.patterns = patterns
        self.mark_verbs = mark_verbs
        self.mark_words = mark_words
        self.head_negations = head_negations
        self.clause_markers = clause_markers
        self.passive = frozenset({"foi", "foram", "sido", "was", "were", "been"})
        names = sorted((n for n in tool_names if not n.isalpha()), key=len, reverse=True)
        # A turn can name a tool outright only if it holds one of the marks tool names join words
        # with (`get_order`, `shell.exec`): checked before the (long) pattern of every name runs.
        self._tool_marks = frozenset(c for n in names for c in fold(n) if not c.isalnum())
        self._tool_pattern = (
            re.compile(
                r"(?<![\w.-])(?:" + "|".join(re.escape(fold(n)) for n in names) + r")(?![\w-])"
            )
            if names
            else None
        )
        self.typos = TypoIndex(
            word
            for word, entry in lexicon.words.items()
            if entry.role != "pt_pt" and len(word) >= 3 and word.isalpha()
        )
        marker_parts = []
        self._marker_kind: dict[str, str] = {}
        for words, kind in grammar.free_text:
            text = " ".join(words)
            self._marker_kind[text] = kind
            marker_parts.append(re.escape(text).replace(r"\ ", r"\s+"))
        for word, clause, kind in clause_markers:
            # A marker that needs a clause after it: `clause` is the look-ahead that says so.
            self._marker_kind[word] = kind
            marker_parts.append(re.escape(word) + f"(?={clause})")
        # No look-behind in front, so the regex engine can skip positions by their first letter;
        # the letter before a match is checked in `_marker`.
        self._markers = re.compile(r"(?P<marker>" + "|".join(marker_parts) + r")(?![a-z0-9])")

    def rebuilt(self) -> Reader:
        """A reader over the same lexicon, its typo index made again (after words were added)."""
        return Reader(
            self.lexicon,
            self.grammar,
            capture=self.capture,
            tool_names=self.tool_names,
            id_nouns=self.id_nouns,
            date_back=self.date_back,
            tu_imperatives=self.tu_imperatives,
            plural_determiners=self.plural_determiners,
            auxiliaries=self.auxiliaries,
            separators=self.separators,
            patterns=self.patterns,
            mark_verbs=self.mark_verbs,
            mark_words=self.mark_words,
            head_negations=self.head_negations,
            clause_markers=self.clause_markers,
            whole=self.whole,
            head_courtesy=self.head_courtesy,
            particles=self.particles,
            number_words=self.number_words,
            money_words=self.money_words,
            head_compute=self.head_compute,
        )

    # -- the reading ---------------------------------------------------------------------------

    def _marker(self, text: str) -> re.Match[str] | None:
        position = 0
        while True:
            found = self._markers.search(text, position)
            if found is None:
                return None
            start = found.start()
            if start == 0 or not text[start - 1].isalnum():
                return found
            position = start + 1

    def read(self, turn: str, today: dt.date) -> Reading:
        reading = Reading(turn=turn, language=self.lexicon.language)
        if len(turn) > MAX_TURN:
            reading.too_long = True
            return reading
        folded = fold(turn)
        masked = [folded]

        def mask(start: int, end: int) -> None:
            text = masked[0]
            masked[0] = text[:start] + " " * (end - start) + text[end:]

        for start, end, inner_start, inner_end in find_quoted(folded):
            text = turn[inner_start:inner_end].strip()
            if text:
                reading.texts.append(Value(TEXT, text, text, start, end, tag="quoted"))
            mask(start, end)
        current = masked[0]
        marker = self._marker(current)
        if marker is not None:
            kind = self._marker_kind.get(" ".join(marker.group("marker").split()), TEXT)
            rest_start = marker.end()
            following = [text for text in reading.texts if text.start >= rest_start]
            if not current[rest_start:].strip() and following:
                # The marker names the quoted text after it: "com a nota 'peças trocadas'".
                quoted = following[0]
                reading.texts[reading.texts.index(quoted)] = Value(
                    TEXT, quoted.value, quoted.text, quoted.start, quoted.end, tag=kind
                )
                mask(marker.start(), marker.end())
            else:
                text = _trim_free_text(turn[rest_start:])
                if text:
                    reading.texts.append(
                        Value(TEXT, text, text, marker.start(), len(turn), tag=kind)
                    )
                    mask(marker.start(), len(turn))
            current = masked[0]
        for pattern in self.patterns:
            for found in pattern.finditer(current):
                reading.pt_pt.append(turn[found.start() : found.end()])
        tools: list[Word] = []
        if self._tool_pattern is not None and any(c in current for c in self._tool_marks):
            for found in self._tool_pattern.finditer(current):
                start, end = found.span()
                name = found.group()
                tools.append(Word(turn[start:end], name, start, end, None, "tool", name))
                mask(start, end)
            current = masked[0]
        values, problems, _spans = find_values(turn, current, self.grammar, today)
        reading.problems.extend(problems)
        for value in values:
            mask(value.start, value.end)
        for problem in problems:
            mask(problem.start, problem.end)
        current = masked[0]
        words = self._words(turn, current)
        items: list[Word | Value] = sorted([*words, *tools, *values], key=lambda item: item.start)
        items = self._phrases(items)
        if self.number_words:
            items = self._number_words(items)
        if self.particles:
            self._particle_verbs(items)
        self._settle(items, reading, today)
        if self.mark_verbs and any(word.norm in self.mark_verbs for word in reading.verbs):
            self._marks(items, reading)
        reading.items = items
        reading.values = [item for item in items if isinstance(item, Value)]
        self._cues(items, reading)
        return reading

    def _words(self, turn: str, masked: str) -> list[Word]:
        out: list[Word] = []
        for match in WORD.finditer(masked):
            norm = match.group()
            start, end = match.span()
            out.append(Word(turn[start:end], norm, start, end, None, "unknown"))
        return out

    def _phrases(self, items: list[Word | Value]) -> list[Word | Value]:
        """Join runs of words that make a phrase of the lexicon, longest first."""
        phrases = self.lexicon.phrases
        heads = self.lexicon.heads
        longest = self.lexicon.max_phrase
        out: list[Word | Value] = []
        i = 0
        while i < len(items):
            item = items[i]
            head = item.norm if isinstance(item, Word) else ""
            if "-" in head and head not in heads:
                head = head.replace("-", "")  # "e-mail novo" is the phrase "email novo"
            if isinstance(item, Word) and longest > 1 and head in heads:
                matched = False
                for size in range(min(heads[head], len(items) - i), 1, -1):
                    run = items[i : i + size]
                    if any(type(part) is not Word for part in run):
                        continue
                    key = tuple(part.norm for part in run)  # type: ignore[union-attr]
                    entry = phrases.get(key)
                    if entry is None and any("-" in part for part in key):
                        key = tuple(part.replace("-", "") for part in key)
                        entry = phrases.get(key)
                    if entry is not None:
                        first, last = run[0], run[-1]
                        out.append(
                            Word(
                                " ".join(part.text for part in run),  # type: ignore[union-attr]
                                " ".join(key),
                                first.start,
                                last.end,
                                entry,
                                entry.role,
                                entry.concept,
                                entry.plural,
                            )
                        )
                        i += size
                        matched = True
                        break
                if matched:
                    continue
            out.append(item)
            i += 1
        return out

    def _particle_verbs(self, items: list[Word | Value]) -> None:
        """A light verb whose particle comes later in the same request ("give the customer $20
        back", "passa R$ 35 no cartão") is that action; a particle the lexicon does not know
        otherwise ("back") is then read as nothing."""
        for index, item in enumerate(items):
            if not isinstance(item, Word) or item.norm not in self.particles:
                continue
            for particle, concept in self.particles[item.norm]:
                if self._particle(items, index, particle, concept):
                    break

    def _particle(
        self, items: list[Word | Value], index: int, particle: tuple[str, ...], concept: str
    ) -> bool:
        item = items[index]
        size = len(particle)
        for at in range(index + 1, len(items) - size + 1):
            run = items[at : at + size]
            if isinstance(run[0], Word) and run[0].norm in self.separators:
                return False
            if all(isinstance(part, Word) and part.norm == want
                   for part, want in zip(run, particle, strict=True)):  # fmt: skip
                item.entry = Entry("verb", concept)  # type: ignore[union-attr]
                item.role = "verb"  # type: ignore[union-attr]
                item.concept = concept  # type: ignore[union-attr]
                for part in run:
                    if self.lexicon.words.get(part.norm) is None:  # type: ignore[union-attr]
                        part.entry = Entry("function")  # type: ignore[union-attr]
                        part.role = "function"  # type: ignore[union-attr]
                return True
        return False

    def _number_words(self, items: list[Word | Value]) -> list[Word | Value]:
        """A number written as a word is a value ("five emails"); before a word of money
        ("ten dollars", "dez reais") it is an amount, the two words one value."""
        out: list[Word | Value] = []
        skip = False
        for index, item in enumerate(items):
            if skip:
                skip = False
                continue
            if not isinstance(item, Word) or item.norm not in self.number_words:
                out.append(item)
                continue
            number = self.number_words[item.norm]
            following = items[index + 1] if index + 1 < len(items) else None
            if isinstance(following, Word) and following.norm in self.money_words:
                text = f"{item.text} {following.text}"
                out.append(Value(MONEY, number, text, item.start, following.end))
                skip = True
            else:
                out.append(Value(NUMBER, number, item.text, item.start, item.end))
        return out

    def _lookup(
        self,
        word: Word,
        reading: Reading,
        previous: Word | Value | None = None,
        following: Word | Value | None = None,
    ) -> None:
        if word.entry is not None or word.role == "tool":
            return
        lex = self.lexicon.words
        norm = word.norm
        entry = lex.get(norm)
        if entry is None and "'" in norm:
            entry = lex.get(norm.replace("'", ""))
        if entry is None and norm in self.tool_names:
            word.role = "tool"
            word.concept = norm
            return
        if entry is None and self.lexicon.language == "pt-BR" and "-" in norm:
            base, _, pronoun = norm.rpartition("-")
            if "-" + pronoun in ("-me", "-lhe", "-nos", "-lhes", "-te") and base:
                if base in self.tu_imperatives:
                    word.role = "pt_pt"
                    return
                entry = lex.get(base)
        if entry is None and "-" in norm:
            entry = lex.get(norm.replace("-", ""))
        if entry is None:
            # A typo is read only where every known word it could be means the same thing --
            # or where its place leaves one reading: after a little word and before a number
            # ("do pedio 4411") only a noun stands, so the noun is read if just one is.
            found = sorted(self.typos.candidates(norm))
            entries = {(lex[c].role, lex[c].concept) for c in found if c in lex}
            if (
                len(entries) > 1
                and isinstance(following, Value)
                and following.kind in (ID, NUMBER)
                and isinstance(previous, Word)
                and previous.role in ("determiner", "function")
            ):
                found = [c for c in found if lex[c].role == "noun"]
                entries = {(lex[c].role, lex[c].concept) for c in found}
            if found and len(entries) == 1 and next(iter(entries))[0] in _TYPO_ROLES:
                corrected = found[0]
                entry = lex[corrected]
                word.typo = corrected
                reading.typos.append((word.text, corrected))
        if entry is None:
            return
        word.entry = entry
        word.role = entry.role
        word.concept = entry.concept
        word.plural = entry.plural

    def _settle(self, items: list[Word | Value], reading: Reading, today: dt.date) -> None:
        head_seen = False
        determined = False
        after_compute = False
        previous: Word | Value | None = None
        for index, item in enumerate(items):
            if isinstance(item, Value):
                head_seen = True
                determined = False
                previous = item
                continue
            word = item
            self._lookup(
                word, reading, previous, items[index + 1] if index + 1 < len(items) else None
            )
            if not head_seen and word.entry is None and word.norm in self.head_courtesy:
                # "morning! show order 4411": a greeting before the request is nothing.
                word.entry = Entry("function")
                word.role = "function"
            if word.norm in self.whole:
                reading.whole = True
            role = word.role
            following = items[index + 1] if index + 1 < len(items) else None
            if word.norm in self.separators:
                # "..., then email the receipt": a new request may start after a conjunction.
                head_seen = False
                determined = False
                previous = word
                continue
            if role == "negation" and word.norm in ("no", "nr") and isinstance(following, Value):
                word.role = role = "id_cue"
            if not head_seen and word.norm in self.head_negations:
                word.role = role = "negation"
            if not head_seen and word.norm in self.head_compute:
                word.role = role = "compute"
            if role == "determiner":
                determined = True
            after_determiner = determined and role != "determiner"
            after_verb = isinstance(previous, Word) and previous.role in ("verb", "light")
            if (
                role == "determiner"
                and word.norm in self.id_nouns
                and (
                    word.text.isupper()
                    or (isinstance(previous, Word) and previous.norm in _BEFORE_OS)
                    or (
                        not after_verb
                        and (isinstance(following, Value) or self._before_state_or_of(following))
                    )
                )
            ):
                # `OS 742`, `OS abertas`, `as OS da unidade`: the work order, not the article.
                word.role = role = "noun"
                word.concept = self.id_nouns[word.norm]
                word.entry = Entry("noun", word.concept)
            if (
                role == "noun"
                and not word.plural
                and (
                    (after_compute and word.norm in self.id_nouns)
                    or (isinstance(previous, Word) and previous.norm in self.plural_determiners)
                )
            ):
                word.plural = True
            if role == "noun":
                after_compute = False
            elif role == "compute":
                after_compute = True
            if role == "verb" and after_determiner:
                word.role = role = "nominal"
            elif role == "verb_first":
                if head_seen or after_determiner:
                    alt = word.entry.alt if word.entry else None
                    if alt:
                        word.role = role = "noun"
                        word.concept = alt
                    else:
                        word.role = role = "nominal"
                else:
                    word.role = role = "verb"
            if not head_seen and word.norm in self.auxiliaries:
                # "did you refund ...?", "is order 4411 paid?": a question about a state.
                if word.norm != "do" or (
                    isinstance(following, Word) and following.norm in ("you", "u", "we", "they")
                ):
                    reading.state_question = True
            if role == "date" and word.entry is not None:
                back = (isinstance(previous, Word) and previous.norm in self.date_back) or (
                    isinstance(following, Word) and following.norm in self.date_back
                )
                iso = resolve_day(word.entry.offset, word.entry.weekday, back, today)
                items[index] = Value(DATE, iso, word.text, word.start, word.end, tag="relative")
                previous = items[index]
                head_seen = True
                continue
            if (
                role == "status"
                and word.concept == "open"
                and isinstance(previous, Word)
                and previous.norm in self.passive
            ):
                # "foram abertas desde segunda", "were opened": when they were opened, not a state.
                word.role = role = "weak"
            if role == "unknown" or word.typo:
                if (
                    isinstance(previous, Word)
                    and previous.role == "noun"
                    and previous.concept in self.capture
                ):
                    items[index] = Value(
                        WORD_VALUE, word.text, word.text, word.start, word.end, tag=previous.concept
                    )
                    previous = items[index]
                    head_seen = True
                    continue
                if role == "unknown":
                    reading.unknown.append(word.text)
                    previous = word
                    continue
            if role == "unknown":
                pass
            elif role == "pt_pt":
                reading.pt_pt.append(word.text)
            elif role == "negation":
                reading.negated.append(word.text)
            elif role == "tag":
                if following is None:
                    # "... paid or not?": a question about the state, never a request.
                    reading.state_question = True
                else:
                    reading.negated.append(word.text)
            elif role == "refer":
                reading.refers.append(word.text)
            elif role == "question":
                reading.question.append(word.text)
            elif role == "compute":
                reading.compute.append(word.text)
            elif role == "all":
                reading.every = True
            elif role == "verb":
                reading.verbs.append(word)
            elif role == "nominal":
                reading.nominals.append(word)
            elif role == "light":
                reading.lights.append(word)
            elif role == "weak":
                reading.weak.append(word)
            elif role == "noun":
                reading.nouns.append(word)
            elif role == "status" or (role == "past" and word.concept):
                reading.statuses.append(word)
            elif role == "tool":
                reading.tools_named.append(word.concept or word.norm)
            if role not in _LEAD:
                head_seen = True
            if role not in ("determiner", "function", "id_cue", "modal", "status", "past"):
                determined = False
            if role not in ("function", "modal", "determiner", "id_cue"):
                reading.content += 1
            previous = word

    def _before_state_or_of(self, following: Word | Value | None) -> bool:
        if not isinstance(following, Word):
            return False
        entry = self.lexicon.words.get(following.norm)
        return entry is not None and (entry.role == "status" or following.norm in ("da", "do"))

    def _marks(self, items: list[Word | Value], reading: Reading) -> None:
        """`marque a OS 742 como concluída`: a verb of marking, with `como`/`as` and a state, is
        read as marking (the state then says the action)."""
        for index, item in enumerate(items[:-1]):
            after = items[index + 1]
            if not (
                isinstance(item, Word)
                and item.norm in self.mark_words
                and isinstance(after, Word)
                and after.role == "status"
            ):
                continue
            for word in reading.verbs:
                if word.norm in self.mark_verbs and word.start < item.start:
                    word.role = "light"
                    word.concept = "mark"
                    reading.verbs.remove(word)
                    reading.lights.append(word)
                    return

    def _cues(self, items: list[Word | Value], reading: Reading) -> None:
        for index, item in enumerate(items):
            if not isinstance(item, Value):
                continue
            if item.kind == WORD_VALUE:
                reading.cues[item.start] = item.tag or ""
                continue
            back = index - 1
            skipped = 0
            while back >= 0 and skipped < 3:
                before = items[back]
                if isinstance(before, Value):
                    break
                if before.role == "noun" and before.concept:
                    reading.cues[item.start] = before.concept
                    break
                if before.role in _CUE_SKIP or before.role == "status":
                    back -= 1
                    skipped += 1
                    continue
                break


def _trim_free_text(rest: str) -> str:
    text = rest.strip().strip(":").strip()
    changed = True
    while changed and text:
        changed = False
        stripped = text.rstrip(" .,!?;")
        for word in _TRAILING:
            if fold(stripped).endswith(" " + word):
                stripped = stripped[: -len(word) - 1].rstrip(" ,")
                changed = True
        text = stripped
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text
