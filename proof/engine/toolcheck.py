"""The tool check as the graph models it: which edges leave a tool's check, under which atoms.

The runtime's check decides every call with the catalogue, the compiled rulebook and the settings
(`guard.engine`); the proof does not run it, it reads it. For one tool this module derives the ways
a call can pass the check -- to the tool (`allow`) or to a person (`confirm`) -- each with the
atoms (see `atoms`) that must hold, from:

- the `order` check (switched on unless `settings.checks` leaves it out): `after` -> `ran`,
  `not_after` -> `not_ran`, `at_most` -> `below`;
- the tool's own checks and the rulebook's gate (`your_rules`): a `require` or `from` reads an
  earlier result -> `ran`; a Colang rulebook passes a call when any of the tool's routes holds, so
  each route is one alternative, with the tools its conditions need (`conditions.requires`); a
  governed tool with no route never passes; a rule sheet refuses (an unconditional refuse row: no
  alternative), confirms or allows per row;
- the `outside_content` check on a write: the labels below the trust the write requires, under
  `no_label` -- on every alternative where `taint_policy` is `refuse`, on `allow` alone where it is
  `confirm` (a tainted write is asked instead);
- step 11: a write no rule allowed waits for a person (`any_other_write` cannot be switched off).

`derive_check_edges` is used twice: to build the graph, and to validate a graph a caller gives,
whose check edges may carry only atoms one of these alternatives carries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from guard.engine import Catalogue, Settings
from guard.engine.checks import switched_on
from guard.engine.taint import tainting_labels
from guard.engine.tool_checks import ValueFrom

from .atoms import Atom, canonical_atoms
from .conditions import requires
from .locations import Location

ALLOW = "allow"
CONFIRM = "confirm"


@dataclass(frozen=True)
class CheckEdge:
    """One way a call can pass a tool's check."""

    on: str  # allow (to the tool) or confirm (to a person)
    atoms: tuple[Atom, ...]
    at: tuple[Location, ...] = ()

    @property
    def target(self) -> str:
        return "tool" if self.on == ALLOW else "human"


def fact_tools(catalogue: Catalogue) -> dict[str, str]:
    """Each file fact and the tool it is read from."""
    return {source.name: source.tool for source in catalogue.fact_sources}


def tainting(catalogue: Catalogue, settings: Settings, tool: str) -> tuple[str, ...]:
    """The labels a `reads_outside` tool can bring that are below what `tool` requires."""
    labels = {label for found in catalogue.outside_tools.values() for label in found}
    required = catalogue.tools[tool].requires_trust
    return tuple(tainting_labels(labels, required=required, label_trust=settings.label_trust))


def _own_atoms(catalogue: Catalogue, tool: str, on: frozenset[str]) -> list[Atom]:
    entry = catalogue.tools[tool]
    atoms: list[Atom] = []
    if "order" in on:
        atoms.extend(("ran", rule.tool) for rule in entry.after)
        atoms.extend(("not_ran", rule.tool) for rule in entry.not_after)
        if entry.at_most is not None and entry.at_most >= 1:
            atoms.append(("below", tool, entry.at_most))
    if "your_rules" in on:
        for item in entry.checks:
            if isinstance(item.value, ValueFrom):
                atoms.append(("ran", item.value.tool))
    return atoms


def _route_alternatives(
    record: Mapping[str, Any], tool: str, facts: Mapping[str, str], file: str
) -> list[tuple[list[Atom], tuple[Location, ...]]] | None:
    """(atoms, where) per way the rulebook lets `tool` pass; None when it does not govern it."""
    governed = record.get("tools", {}).get(tool)
    if not isinstance(governed, Mapping):
        return None
    routes = governed.get("routes") or []
    rules = governed.get("rules") or []
    if not routes and not rules:
        return []
    out: list[tuple[list[Atom], tuple[Location, ...]]] = []
    for route in routes:
        needed: set[str] = set()
        for condition in route.get("conditions", ()):
            if "test" in condition:
                needed |= requires(condition["test"], bool(condition.get("holds")), facts)
        for spec in route.get("arguments", {}).values():
            if isinstance(spec, Mapping) and "test" in spec:
                needed |= requires(spec["test"], True, facts)
        out.append(([("ran", t) for t in sorted(needed)], (Location(file, route["line"]),)))
    return out


def _sheet_alternatives(
    rules: list[Mapping[str, Any]], facts: Mapping[str, str], file: str, write: bool
) -> list[tuple[str, list[Atom], tuple[Location, ...]]]:
    """(on, atoms, where) per way a rule sheet lets the call pass."""

    def unconditional(row: Mapping[str, Any]) -> bool:
        return row.get("test") is None and not row.get("at_most") and not row.get("spend")

    if any(r["decision"] == "refuse" and unconditional(r) for r in rules):
        return []
    always_confirm = any(r["decision"] == "confirm" and unconditional(r) for r in rules)
    out: list[tuple[str, list[Atom], tuple[Location, ...]]] = []
    if write or always_confirm:
        out.append((CONFIRM, [], ()))
    else:
        out.append((ALLOW, [], ()))
    for row in rules:
        where = (Location(file, row["row"]),) if isinstance(row.get("row"), int) else ()
        test = row.get("test")
        needed = sorted(requires(test, True, facts)) if test is not None else []
        atoms: list[Atom] = [("ran", t) for t in needed]
        if row["decision"] == "confirm":
            out.append((CONFIRM, atoms, where))
        elif row["decision"] == "allow" and not always_confirm:
            out.append((ALLOW, atoms, where))
    return out


def derive_check_edges(
    catalogue: Catalogue,
    settings: Settings,
    record: Mapping[str, Any] | None,
    tool: str,
    *,
    rulebook_file: str = "rulebook",
    defined: tuple[Location, ...] = (),
) -> list[CheckEdge]:
    """Every way a call of `tool` can pass its check (see the module docstring)."""
    entry = catalogue.tools[tool]
    on = switched_on(settings.checks)
    base = _own_atoms(catalogue, tool, on)
    facts = fact_tools(catalogue)
    alternatives: list[tuple[str, list[Atom], tuple[Location, ...]]]
    governed = None
    if record is not None and "your_rules" in on:
        governed = record.get("tools", {}).get(tool)
    if isinstance(governed, Mapping) and governed.get("rules"):
        alternatives = _sheet_alternatives(
            list(governed["rules"]), facts, rulebook_file, entry.is_write
        )
    elif isinstance(governed, Mapping):
        routes = _route_alternatives(record or {}, tool, facts, rulebook_file) or []
        pass_on = CONFIRM if entry.is_write else ALLOW
        alternatives = [(pass_on, atoms, where) for atoms, where in routes]
    else:
        alternatives = [(CONFIRM if entry.is_write else ALLOW, [], ())]
    labels = tainting(catalogue, settings, tool) if entry.is_write else ()
    taint = bool(labels) and "outside_content" in on
    edges: dict[tuple[str, tuple[Atom, ...]], CheckEdge] = {}
    for kind, atoms, where in alternatives:
        full = list(base) + list(atoms)
        if taint and (settings.taint_policy == "refuse" or kind == ALLOW):
            full.append(("no_label", labels))
        key = (kind, canonical_atoms(full))
        if key not in edges:
            edges[key] = CheckEdge(kind, key[1], tuple(where) + tuple(defined))
    return list(edges.values())
