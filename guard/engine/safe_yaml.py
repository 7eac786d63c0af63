"""The one way Stalwart reads YAML: the safe loader, inside a budget of aliases, depth and size.

PyYAML's safe loader builds no objects from tags, but it still expands aliases and recurses once
per level of nesting: a 541-byte file of nine anchors, each listing the one before nine times,
expands to 9^9 nodes (gigabytes, for a minute), and 5,000 nested `[` exhaust Python's recursion
limit. Before any loader sees a document, `check` reads its events (libyaml's parser where PyYAML
has it: a flat state machine, linear in the text, which expands nothing) and keeps count:

- aliases: at most `MAX_ALIASES` in a document;
- depth: collections nested at most `MAX_DEPTH` deep;
- size: at most `MAX_NODES` nodes once every alias is expanded (each anchor's expanded size is
  known when its collection closes, so an alias costs its size without being expanded);
- recursion: no alias inside the collection of its own anchor (`&a [*a]` expands without end,
  and a reader that walks it recurses until Python stops it).

A document over a budget raises `YamlTooLarge`, a `yaml.MarkedYAMLError` carrying the line where
the budget ran out, so every caller that reports a YAML problem with its line reports this one the
same way. `load` and `compose` are `check` followed by the safe loader.
"""

from __future__ import annotations

from typing import Any

import yaml

#: Aliases (`*name`) a document may use.
MAX_ALIASES = 100
#: How deep collections may nest.
MAX_DEPTH = 64
#: Nodes a document may hold with every alias expanded.
MAX_NODES = 100_000

#: libyaml's safe loader where PyYAML was built with it (much faster), else the Python one.
FAST_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlTooLarge(yaml.MarkedYAMLError):
    """A document over the budget of aliases, depth or expanded size; `problem_mark` says where."""

    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem=problem, problem_mark=mark)


def check(text: str | bytes) -> None:
    """Raise `YamlTooLarge` if `text` is over a budget.

    A syntax error ends the count quietly: the loader that reads the text next reports it, in its
    own words, at the same place (the events before it were within budget)."""
    try:
        _count(text)
    except YamlTooLarge:
        raise
    except yaml.YAMLError:
        return


def _count(text: str | bytes) -> None:
    aliases = 0
    anchors: dict[str, int] = {}
    # One entry per open collection: its anchor and its expanded size so far.
    open_: list[list[Any]] = []
    for event in yaml.parse(text, Loader=FAST_LOADER):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if len(open_) >= MAX_DEPTH:
                raise YamlTooLarge(
                    f"it nests collections more than {MAX_DEPTH} deep", event.start_mark
                )
            open_.append([event.anchor, 1])
            continue
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            anchor, size = open_.pop()
            if anchor is not None:
                anchors[anchor] = size
        elif isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise YamlTooLarge(f"it uses more than {MAX_ALIASES} aliases", event.start_mark)
            if any(entry[0] == event.anchor for entry in open_):
                # An alias inside its own anchor: the document expands without end.
                raise YamlTooLarge(
                    f"it refers to itself (`*{event.anchor}` inside `&{event.anchor}`)",
                    event.start_mark,
                )
            size = anchors.get(event.anchor, 1)
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor is not None:
                anchors[event.anchor] = 1
        else:
            continue
        if open_:
            open_[-1][1] += size
            if open_[-1][1] > MAX_NODES:
                raise YamlTooLarge(
                    f"it expands to more than {MAX_NODES} values through its aliases",
                    event.start_mark,
                )


def load(text: str | bytes, *, loader: type | None = None) -> Any:
    """The document in `text`, read by the safe `loader` (libyaml's by default) within budget."""
    check(text)
    return yaml.load(text, Loader=loader or FAST_LOADER)  # noqa: S506 - a safe loader


def compose(text: str | bytes, *, loader: type | None = None) -> Any:
    """The node tree of the document in `text` (with marks), within budget."""
    check(text)
    return yaml.compose(text, Loader=loader or FAST_LOADER)
