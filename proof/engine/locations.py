"""Where things were written: `{file, line}` locations and the line of every field of a YAML file.

`yaml_lines(text)` composes the YAML (no construction, so nothing runs) and maps each field path,
written the way the catalogue loader names them (`agents.desk.tools[0]`, `facts.order_paid`), to
its 1-based line. A graph node keeps a list of locations, the first the one a finding points at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from guard.engine import safe_yaml


@dataclass(frozen=True, order=True)
class Location:
    """A place in a source file (1-based line)."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line}


def locations_from(raw: Any) -> tuple[Location, ...]:
    """Read a document's `at` list (already validated) into locations."""
    if not isinstance(raw, list):
        return ()
    out = []
    for item in raw:
        if isinstance(item, Mapping) and isinstance(item.get("file"), str):
            line = item.get("line")
            if isinstance(line, int) and not isinstance(line, bool):
                out.append(Location(item["file"], line))
    return tuple(out)


def at_list(locations: Iterable[Location | None]) -> list[dict[str, Any]]:
    """The `at` list of a document: the locations given, without repeats, in order."""
    seen: list[Location] = []
    for location in locations:
        if location is not None and location not in seen:
            seen.append(location)
    return [location.to_dict() for location in seen]


def _key_text(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else "?"


#: libyaml's safe loader where PyYAML was built with it (much faster), else the Python one.
FAST_LOADER = safe_yaml.FAST_LOADER


def yaml_lines(text: str) -> dict[str, int]:
    """Every field path of a YAML document and its line; empty when the text does not compose."""
    try:
        root = safe_yaml.compose(text)
    except yaml.YAMLError:
        return {}
    lines: dict[str, int] = {}

    def walk(node: yaml.Node, path: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                child = f"{path}.{_key_text(key_node)}" if path else _key_text(key_node)
                lines.setdefault(child, key_node.start_mark.line + 1)
                walk(value_node, child)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                child = f"{path}[{index}]"
                lines.setdefault(child, item.start_mark.line + 1)
                walk(item, child)

    if root is not None:
        walk(root, "")
    return lines
