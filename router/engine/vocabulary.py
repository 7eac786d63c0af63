"""The vocabulary file: an organisation's own words for its tools, validated strictly.

    settings:
      language: pt-BR            # the language turns are read in (en or pt-BR)
    verbs:                       # an action, as tools name it, and its words per language
      refund:
        pt-BR: [reembolsar, "fazer o reembolso"]
      close:
        en: [wrap up]
    nouns:                       # a thing, as tools and arguments name it
      order:
        pt-BR: [OS, chamado]
    values:                      # a value an argument can hold (an enum), and its words
      in_progress:
        pt-BR: [em campo]
    tools:                       # phrases that name one tool outright
      request_close:
        pt-BR: [pedir o fechamento]
    filler:                      # words around a request that mean nothing here, by any label
      sign-offs:
        pt-BR: [tmj, "fico no aguardo"]
        en: [ta, "speak soon"]

Verbs are given as the infinitive (pt-BR) or base form (en); the forms a request uses are made from
them. A phrase of several words is read as one. `filler` words are read as nothing -- an
organisation's own greetings, sign-offs and team slang -- and never replace a word the grammar or
the catalogue gives a meaning (a filler "refund" is still a refund; a filler "not" still negates).
Every section is optional; anything else is an error. Loading collects every issue at once, each naming its YAML path and line
(`verbs.refund.pt-BR[1] (line 7): must be text`), and raises `VocabularyInvalid`; nothing half
loaded is used. The engine gets the file's text, never the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from guard.engine import safe_yaml

from .errors import Issue, VocabularyInvalid

LANGUAGES = ("en", "pt-BR")
SECTIONS = ("settings", "verbs", "nouns", "values", "tools", "filler")
SETTINGS = ("language",)
MAX_WORDS = 6


@dataclass(frozen=True)
class Vocabulary:
    """A loaded vocabulary: words per language for verbs, nouns, values and tools."""

    language: str | None = None
    verbs: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    nouns: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    values: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    tools: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    filler: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)

    def words(self, section: str, language: str) -> dict[str, tuple[str, ...]]:
        table: Mapping[str, Mapping[str, tuple[str, ...]]] = getattr(self, section)
        return {key: by_language[language] for key, by_language in table.items() if
                language in by_language}  # fmt: skip


def normal_language(text: Any) -> str | None:
    """`en`, `pt-BR` (also written `pt-br`, `pt_BR`), or None for anything else."""
    if not isinstance(text, str):
        return None
    key = text.strip().replace("_", "-").lower()
    if key in ("en", "en-us", "en-gb", "english"):
        return "en"
    if key in ("pt-br", "pt-brazil"):
        return "pt-BR"
    return None


class _Reader:
    def __init__(self) -> None:
        self.issues: list[Issue] = []

    def issue(self, path: str, node: yaml.Node | None, message: str) -> None:
        line = node.start_mark.line + 1 if node is not None else None
        self.issues.append(Issue(path, message, line))

    def mapping(self, node: yaml.Node, path: str) -> list[tuple[str, yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            self.issue(path, node, "must be a mapping")
            return []
        out = []
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str) or not key.strip():
                self.issue(path, key_node, "a key must be text")
                continue
            if key in seen:
                self.issue(f"{path}.{key}" if path else key, key_node, "appears twice")
                continue
            seen.add(key)
            out.append((key, key_node, value_node))
        return out

    def words(self, node: yaml.Node, path: str) -> tuple[str, ...]:
        if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":str"):
            nodes = [node]
            paths = [path]
        elif isinstance(node, yaml.SequenceNode):
            nodes = list(node.value)
            paths = [f"{path}[{i}]" for i in range(len(nodes))]
        else:
            self.issue(path, node, "must be a list of words or phrases")
            return ()
        out = []
        for item, where in zip(nodes, paths, strict=True):
            if not isinstance(item, yaml.ScalarNode) or not item.tag.endswith(":str"):
                self.issue(where, item, "must be text")
                continue
            text = " ".join(str(item.value).split())
            if not text:
                self.issue(where, item, "must not be empty")
                continue
            if len(text.split()) > MAX_WORDS:
                self.issue(where, item, f"a phrase has at most {MAX_WORDS} words: `{text}`")
                continue
            if any(char.isdigit() for char in text):
                self.issue(where, item, f"a word of the vocabulary has no digits: `{text}`")
                continue
            out.append(text)
        return tuple(out)

    def section(self, node: yaml.Node, name: str) -> dict[str, dict[str, tuple[str, ...]]]:
        out: dict[str, dict[str, tuple[str, ...]]] = {}
        for key, _key_node, value in self.mapping(node, name):
            path = f"{name}.{key}"
            by_language: dict[str, tuple[str, ...]] = {}
            for language, language_node, words in self.mapping(value, path):
                normal = normal_language(language)
                if normal is None:
                    self.issue(
                        f"{path}.{language}",
                        language_node,
                        f"the router reads en and pt-BR, not `{language}`",
                    )
                    continue
                by_language[normal] = self.words(words, f"{path}.{language}")
            out[key.strip()] = by_language
        return out


def load_vocabulary(text: str | None, *, filename: str = "vocabulary.yaml") -> Vocabulary:
    """Read a vocabulary file's text; raise `VocabularyInvalid` with every issue."""
    if text is None or not str(text).strip():
        return Vocabulary()
    try:
        root = safe_yaml.compose(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or "it cannot be read"
        line = mark.line + 1 if mark is not None else None
        raise VocabularyInvalid([Issue(filename, f"is not valid YAML: {problem}", line)]) from None
    if root is None:
        return Vocabulary()
    reader = _Reader()
    sections: dict[str, Any] = {}
    language: str | None = None
    for key, key_node, value in reader.mapping(root, ""):
        if key not in SECTIONS:
            reader.issue(key, key_node, f"is not a section of a vocabulary ({', '.join(SECTIONS)})")
            continue
        if key == "settings":
            for name, name_node, setting in reader.mapping(value, "settings"):
                if name not in SETTINGS:
                    reader.issue(f"settings.{name}", name_node, "is not a setting of a vocabulary")
                    continue
                language = normal_language(getattr(setting, "value", None))
                if language is None or not isinstance(setting, yaml.ScalarNode):
                    reader.issue(
                        "settings.language",
                        setting,
                        f"the router reads en and pt-BR, not `{getattr(setting, 'value', '')}`",
                    )
                    language = None
            continue
        sections[key] = reader.section(value, key)
    if reader.issues:
        raise VocabularyInvalid(sorted(reader.issues, key=lambda i: (i.line or 0, i.path)))
    return Vocabulary(
        language=language,
        verbs=sections.get("verbs", {}),
        nouns=sections.get("nouns", {}),
        values=sections.get("values", {}),
        tools=sections.get("tools", {}),
        filler=sections.get("filler", {}),
    )
