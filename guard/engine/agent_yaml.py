"""Reading an agent.yaml's text into a catalogue (the engine gets the text, never the file).

The sections the tool check reads are `agents`, `tools`, `facts`, `tool_kinds` and `stores`; the
sections other parts of Stalwart read (`rulebook`, `firewall`, `settings`, `replies`, `models`,
`documents` -- which the SDK checks and indexes --, the team's own `steps` and `edges` and the
`advisories` the proof reads, ...) are kept as they are in `AgentFile.other`. Any other top-level key is refused. `rulebook` and `firewall` name files
beside agent.yaml (the rulebook, and the firewall policy JSON `Agent.chat` evaluates calls with):
each must be a non-empty path, and what the file holds is read by the SDK, which names this key
and its line when the file is missing or invalid.

`tools:` lists tools written out in full (mappings with `name`), or modules that define them:
`- python: shop.tools`. The engine imports nothing: the caller gives each module's tool entries in
`modules={"shop.tools": [...]}` (the SDK imports the module and passes its `TOOLS`). An issue in a
tool that came from a module names it there: `shop.tools[2].parameters: ...`.

YAML is read with the safe loader within `safe_yaml`'s budget of aliases, depth and size, and a
key written twice in one mapping is an error (plain YAML keeps the last one silently).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from . import safe_yaml
from .catalogue import CATALOGUE_KEYS, Catalogue, load_catalogue
from .errors import CatalogueInvalid, Issue

OTHER_SECTIONS = frozenset(
    {
        "undo",
        "rulebook",
        "firewall",
        "settings",
        "replies",
        "documents",
        "vocabulary",
        "budget",
        "language",
        "name",
        "description",
        "models",
        "steps",
        "edges",
        "advisories",
    }
)


class _StrictLoader(yaml.SafeLoader):
    """The safe loader, refusing a key repeated within one mapping."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, (list, dict)):
            continue
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"the key `{key}` appears twice in one mapping", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


@dataclass(frozen=True)
class AgentFile:
    """An agent.yaml, read: its catalogue, the catalogue's data, and the sections others read."""

    catalogue: Catalogue
    data: Mapping[str, Any]
    rulebook: str | None = None
    other: Mapping[str, Any] = field(default_factory=dict)
    firewall: str | None = None


def parse_yaml(text: str, *, filename: str = "agent.yaml") -> Any:
    """Read YAML text strictly; raise `CatalogueInvalid` naming the file and line."""
    try:
        return safe_yaml.load(text, loader=_StrictLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        problem = getattr(error, "problem", None) or str(error)
        where = f"{filename}:{mark.line + 1}" if mark is not None else filename
        raise CatalogueInvalid([Issue(where, f"is not valid YAML: {problem}")]) from None


def load_agent_yaml(
    text: str,
    *,
    modules: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    tool_kinds: str | Mapping[str, Any] | None = None,
    infer: bool = False,
    filename: str = "agent.yaml",
) -> AgentFile:
    """Read an agent.yaml's text into its catalogue; raise `CatalogueInvalid` with every issue."""
    data = parse_yaml(text, filename=filename)
    if not isinstance(data, Mapping):
        raise CatalogueInvalid([Issue(filename, "must be a mapping with `agents` and `tools`")])
    issues: list[Issue] = []
    for key in sorted(set(data) - CATALOGUE_KEYS - OTHER_SECTIONS, key=str):
        issues.append(Issue(str(key), "is not a section of an agent file"))
    tools: list[Any] = []
    origins: list[str] = []
    raw_tools = data.get("tools", [])
    if not isinstance(raw_tools, list):
        issues.append(Issue("tools", "must be a list of tools or `python: <module>` entries"))
        raw_tools = []
    for index, entry in enumerate(raw_tools):
        if isinstance(entry, Mapping) and "python" in entry:
            module = entry["python"]
            if set(entry) != {"python"} or not isinstance(module, str):
                issues.append(Issue(f"tools[{index}]", "must be `python: <module>` alone"))
                continue
            given = (modules or {}).get(module)
            if given is None:
                issues.append(
                    Issue(
                        f"tools[{index}].python",
                        f"the module `{module}` was not given to the loader",
                    )
                )
                continue
            for position, tool in enumerate(given):
                tools.append(tool)
                origins.append(f"{module}[{position}]")
        else:
            tools.append(entry)
            origins.append(f"tools[{index}]")
    rulebook = data.get("rulebook")
    if rulebook is not None and not isinstance(rulebook, str):
        issues.append(Issue("rulebook", "must be the path of a rulebook"))
        rulebook = None
    firewall = data.get("firewall")
    if "firewall" in data and (not isinstance(firewall, str) or not firewall.strip()):
        issues.append(Issue("firewall", "must be the path of a firewall policy (JSON)"))
        firewall = None
    folded: dict[int, str] = {}
    if "undo" in data:
        tools = _with_undo(data.get("undo"), tools, issues, folded)
    catalogue_data = {
        key: data[key] for key in ("agents", "facts", "tool_kinds", "stores") if key in data
    }
    catalogue_data["tools"] = tools
    try:
        catalogue = load_catalogue(catalogue_data, tool_kinds=tool_kinds, infer=infer)
    except CatalogueInvalid as error:
        issues.extend(_relabel(_undo_section(issue, folded), origins) for issue in error.issues)
        catalogue = None
    if issues or catalogue is None:
        raise CatalogueInvalid(issues)
    other = {key: data[key] for key in OTHER_SECTIONS if key in data}
    return AgentFile(
        catalogue=catalogue, data=catalogue_data, rulebook=rulebook, other=other, firewall=firewall
    )


def _with_undo(
    section: Any, tools: list[Any], issues: list[Issue], folded: dict[int, str]
) -> list[Any]:
    """Fold the `undo:` section (tool -> `none`, an undo tool, or `{tool, bind}`) into the tools.

    It is how an agent file says the undo of a tool that a module declares: `undo: {refund_card:
    none}` says a failed run may leave `refund_card` done; `undo: {charge_card: {tool:
    refund_card, bind: {...}}}` is `compensation` in the catalogue's words.
    """
    if not isinstance(section, Mapping):
        issues.append(Issue("undo", "must map tool names to `none` or their undo"))
        return tools
    by_name = {
        tool.get("name"): index for index, tool in enumerate(tools) if isinstance(tool, Mapping)
    }
    merged = list(tools)
    for name, undo in section.items():
        index = by_name.get(name)
        if index is None:
            issues.append(Issue(f"undo.{name}", "names a tool the agent file does not have"))
            continue
        tool = merged[index]
        if "undo" in tool or "compensation" in tool:
            issues.append(Issue(f"undo.{name}", "the tool already says its undo"))
            continue
        merged[index] = {**tool, "undo": undo}
        folded[index] = str(name)
    return merged


def _undo_section(issue: Issue, folded: dict[int, str]) -> Issue:
    """An issue in an undo the top-level `undo:` section gave, named there: `undo.refund_card`."""
    match = re.match(r"^tools\[(\d+)\]\.undo(.*)$", issue.path)
    if match is None or int(match.group(1)) not in folded:
        return issue
    return Issue(f"undo.{folded[int(match.group(1))]}{match.group(2)}", issue.message)


def _relabel(issue: Issue, origins: list[str]) -> Issue:
    """Name a flattened tool by where it was written: `shop.tools[2]` or `tools[1]`."""
    match = re.match(r"^tools\[(\d+)\]", issue.path)
    if match is None:
        return issue
    index = int(match.group(1))
    if index >= len(origins):
        return issue
    return Issue(origins[index] + issue.path[match.end() :], issue.message)
