"""The two grammars the router reads (English and pt-BR), and the lexicon made for one router.

The language is chosen, never guessed: the router's `language`, else the vocabulary's
`settings.language`, else English. `pt`, `pt-PT` or any other language is refused with
`LanguageNotRead` where it is configured, and a turn written in another language than the chosen
one is simply unread (its words are not in the lexicon).

A router's lexicon is its grammar's, plus, for English, the words of the catalogue (tool names,
descriptions, argument names and descriptions, enum values: a tool named `frobnicate_widget`
makes "frobnicate" a verb and "widget" a noun), plus the vocabulary file's words for the chosen
language, which win over the grammar's (an organisation may decide its people say "encomenda").
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from types import ModuleType

from . import grammar_en, grammar_pt
from .errors import LanguageNotRead
from .lexicon import READ, WRITE, Entry, Lexicon
from .text import fold
from .vocabulary import Vocabulary, normal_language

GRAMMARS: dict[str, ModuleType] = {"en": grammar_en, "pt-BR": grammar_pt}
LANGUAGES = tuple(GRAMMARS)


def choose_language(language: str | None, vocabulary: Vocabulary | None) -> str:
    """The language turns are read in (see the module docstring)."""
    if language is not None:
        chosen = normal_language(language)
        if chosen is None:
            raise LanguageNotRead(f"the router reads en and pt-BR, not `{language}`")
        return chosen
    if vocabulary is not None and vocabulary.language is not None:
        return vocabulary.language
    return "en"


@functools.cache
def base_lexicon(language: str) -> Lexicon:
    """The grammar's own lexicon (built once; routers copy it)."""
    return GRAMMARS[language].build()


def copy_lexicon(lexicon: Lexicon) -> Lexicon:
    out = Lexicon(lexicon.language)
    out.words = dict(lexicon.words)
    out.phrases = dict(lexicon.phrases)
    out.families = dict(lexicon.families)
    out.months = dict(lexicon.months)
    out.yes = set(lexicon.yes)
    out.no = set(lexicon.no)
    out.max_phrase = lexicon.max_phrase
    out.heads = dict(lexicon.heads)
    return out


def _plural(word: str, language: str) -> str:
    if language == "en":
        if word.endswith(("s", "sh", "ch", "x", "z")):
            return word + "es"
        if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
            return word[:-1] + "ies"
        return word + "s"
    if word.endswith("ão") or word.endswith("ao"):
        return word[:-2] + ("ões" if word.endswith("ão") else "oes")
    if word.endswith(("r", "z", "s")):
        return word + "es"
    if word.endswith("l"):
        return word[:-1] + "is"
    if word.endswith("m"):
        return word[:-1] + "ns"
    return word + "s"


def _verb_entries(lex: Lexicon, word: str, concept: str, language: str) -> None:
    if " " in word.strip():
        lex.put(word, Entry("verb", concept, source="vocabulary"), force=True)
        return
    if language == "en":
        for form in grammar_en.verb_forms(fold(word)):
            lex.put(form, Entry("verb", concept, source="vocabulary"), force=True)
        return
    folded = fold(word)
    if folded.endswith(("ar", "er", "ir")) and len(folded) > 3:
        request, tu, past = grammar_pt.verb_forms(folded)
        for form in request + tu:
            lex.put(form, Entry("verb", concept, source="vocabulary"), force=True)
        for form in past:
            if fold(form) not in lex.words:
                lex.put(form, Entry("past", source="vocabulary"))
    else:
        lex.put(word, Entry("verb", concept, source="vocabulary"), force=True)


def router_lexicon(
    language: str,
    *,
    catalogue_words: Iterable[str] = (),
    tool_verbs: Mapping[str, str] | None = None,
    tool_nouns: Iterable[str] = (),
    vocabulary: Vocabulary | None = None,
) -> Lexicon:
    """The lexicon of one router (see the module docstring).

    `tool_verbs` maps each action a tool declares to its family (`read` or `write`), `tool_nouns`
    are the nouns tools are named after; both only add words English does not know yet.
    """
    lex = copy_lexicon(base_lexicon(language))
    if language == "en":
        for word in catalogue_words:
            if word not in lex.words:
                lex.put(word, Entry("function", source="catalogue"))
        for concept, family in (tool_verbs or {}).items():
            lex.verb(concept, family)
            entry = lex.words.get(concept)
            if entry is None or entry.source == "catalogue":
                for form in grammar_en.verb_forms(concept):
                    lex.put(form, Entry("verb", concept, source="catalogue"), force=True)
        for noun in tool_nouns:
            for form, plural in ((noun, False), (_plural(noun, "en"), True)):
                entry = lex.words.get(form)
                if entry is None or entry.source == "catalogue":
                    lex.put(
                        form, Entry("noun", noun, plural=plural, source="catalogue"), force=True
                    )
                elif entry.role in ("verb", "light", "nominal", "past"):
                    # A tool's noun that is also a verb form ("booking", "returns"): the verb
                    # at the head of a request, the tool's noun anywhere else.
                    action = entry.concept if entry.role != "past" else None
                    if action is None:
                        lex.put(
                            form, Entry("noun", noun, plural=plural, source="catalogue"), force=True
                        )
                    else:
                        lex.put(
                            form,
                            Entry("verb_first", action, plural=plural, alt=noun,
                                  source="catalogue"),
                            force=True,
                        )  # fmt: skip
    else:
        for concept, family in (tool_verbs or {}).items():
            lex.verb(concept, family)
    if vocabulary is not None:
        english = base_lexicon("en")

        def concept_of(key: str, roles: tuple[str, ...]) -> str:
            # A key is an English word as tools name things; a known word stands for its concept.
            folded = fold(key).strip().replace(" ", "_")
            entry = english.words.get(folded)
            if entry is not None and entry.role in roles and entry.concept:
                return entry.concept
            return folded

        for key, texts in vocabulary.words("verbs", language).items():
            concept = concept_of(key, ("verb", "verb_first", "light", "nominal"))
            if concept not in lex.families:
                lex.verb(concept, (tool_verbs or {}).get(concept, WRITE))
            for text in texts:
                _verb_entries(lex, text, concept, language)
        for key, texts in vocabulary.words("nouns", language).items():
            concept = concept_of(key, ("noun",))
            for text in texts:
                lex.put(text, Entry("noun", concept, source="vocabulary"), force=True)
                if " " not in text.strip():
                    lex.put(
                        _plural(text, language),
                        Entry("noun", concept, plural=True, source="vocabulary"),
                        force=True,
                    )
        for concept, texts in vocabulary.words("values", language).items():
            for text in texts:
                lex.put(text, Entry("status", concept, source="vocabulary"), force=True)
        for tool, texts in vocabulary.words("tools", language).items():
            for text in texts:
                lex.put(text, Entry("tool", tool, source="vocabulary"), force=True)
        for texts in vocabulary.words("filler", language).values():
            for text in texts:
                # Only words nobody gave a meaning: a filler "estorne" still refunds.
                key = fold(text).strip()
                parts = tuple(key.replace("-", " ").split())
                if key.replace(" ", "") not in lex.words and parts not in lex.phrases:
                    lex.put(text, Entry("function", source="vocabulary"))
    return lex


__all__ = ["GRAMMARS", "LANGUAGES", "READ", "base_lexicon", "choose_language", "router_lexicon"]
