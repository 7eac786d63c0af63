"""The conditions an edge of the graph may carry (`when`), read into hashable atoms.

An edge is taken only when every atom of its `when` list holds over what the session did so far:

    {"ran": "get_order"}                       the tool ran earlier in the session
    {"not_ran": "send_receipt"}                it did not
    {"below": {"tool": "refund_card", "count": 2}}   the tool ran fewer than `count` times
    {"no_label": ["email", "web"]}             no content with any of these labels was read
    {"chooser": ["model"]}                     the pending call was chosen by the model
                                               (`person` through the router, `model`, `opaque`)

Only the tool check enforces conditions on calls: the atoms `ran`, `not_ran`, `below` and
`no_label` are allowed on the edges that leave a check or a person's confirmation, and only those
the catalogue, the rulebook and the settings justify (see `toolcheck`). `chooser` says where an
edge returns to once a call was decided, and may be on any edge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

CHOOSERS = ("person", "model", "opaque")
ATOM_KINDS = ("ran", "not_ran", "below", "no_label", "chooser")
#: Atoms that stand for what the tool check enforces.
CHECK_ATOMS = frozenset({"ran", "not_ran", "below", "no_label"})

Atom = tuple[Any, ...]


def atom_from(raw: Any) -> tuple[Atom | None, str | None]:
    """Read one atom; return (atom, None) or (None, what is wrong with it)."""
    if not isinstance(raw, Mapping) or len(raw) != 1:
        return None, "must be an object with exactly one of " + ", ".join(
            f"`{k}`" for k in ATOM_KINDS
        )
    ((key, value),) = raw.items()
    if key in ("ran", "not_ran"):
        if not isinstance(value, str) or not value:
            return None, f"`{key}` must name a tool"
        return (key, value), None
    if key == "below":
        if not isinstance(value, Mapping) or set(value) != {"tool", "count"}:
            return None, "`below` must be `{tool, count}`"
        count = value["count"]
        if not isinstance(value["tool"], str) or not isinstance(count, int) or count < 1:
            return None, "`below` must name a tool and a count of 1 or more"
        if isinstance(count, bool):
            return None, "`below.count` must be a whole number"
        return ("below", value["tool"], count), None
    if key == "no_label":
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            return None, "`no_label` must be a non-empty list of labels"
        return ("no_label", tuple(sorted(set(value)))), None
    if key == "chooser":
        if not isinstance(value, list) or not value or not all(v in CHOOSERS for v in value):
            return None, "`chooser` must be a non-empty list of " + ", ".join(CHOOSERS)
        return ("chooser", tuple(sorted(set(value)))), None
    return None, f"`{key}` is not a condition of an edge"


def atom_to_json(atom: Atom) -> dict[str, Any]:
    """The document form of an atom."""
    kind = atom[0]
    if kind in ("ran", "not_ran"):
        return {kind: atom[1]}
    if kind == "below":
        return {"below": {"tool": atom[1], "count": atom[2]}}
    return {kind: list(atom[1])}


def canonical_atoms(atoms: Iterable[Atom]) -> tuple[Atom, ...]:
    """Atoms without repeats, in a stable order."""
    return tuple(sorted(set(atoms), key=repr))


def describe(atom: Atom) -> str:
    """An atom in words, for a witness: `after get_order ran`."""
    kind = atom[0]
    if kind == "ran":
        return f"{atom[1]} ran"
    if kind == "not_ran":
        return f"{atom[1]} did not run"
    if kind == "below":
        return f"{atom[1]} ran fewer than {atom[2]} times"
    if kind == "no_label":
        return "nothing labelled " + ", ".join(atom[1]) + " was read"
    return "the call was chosen by the " + " or the ".join(atom[1])
