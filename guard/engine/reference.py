"""The catalogue's reference tables, made from the engine's own lists (the README shows them).

`render_catalogue_reference()` writes the table of a tool's fields and the table of the forms a
tool's `checks:` item can take; a test holds the README's copy to it, and holds these tables to the
loader's (`catalogue.TOOL_KEYS`) and the checks' (`tool_checks.FORMS`, `tool_checks.REASONS`), so a
field or a check the engine reads cannot go undocumented.
"""

from __future__ import annotations

from .catalogue import AGENT_KEYS, CATALOGUE_KEYS, CHANNEL_AUTH, ON_UNREAD, PRIVILEGES, STORE_KEYS
from .kinds import KINDS
from .taint import TRUST_LEVELS
from .tool_checks import PERIODS, SPEND_PERIODS

#: (field, how it is written, what the tool check does with it), in the order the README gives.
TOOL_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("name", "`get_order`", "the tool's name: a letter or `_`, then letters, digits, `_ . -`"),
    ("description", "text", "read by the kind inference (`infer: true`) and shown to people"),
    ("kind", " / ".join(f"`{kind}`" for kind in KINDS), "what the tool does; unmarked is `write`"),
    ("parameters", "JSON Schema 2020-12", "step 3: an argument it does not declare is refused"),
    ("result_schema", "JSON Schema", "a result's shape; a write without one is linted "
     "(`write_without_result_schema`)"),
    ("after", "`[tool]` or `[{tool, bind}]`", "step 5: runs only after that tool ran (bound)"),
    ("not_after", "`[tool]` or `[{tool, bind}]`", "step 5: never after that tool ran (bound)"),
    ("at_most", "a whole number", "step 5: at most N calls of the tool in the session"),
    ("compensation", "`tool` or `{tool, bind}`", "step 6: the undo of this tool"),
    ("undo", "`none`, `tool` or `{tool, bind}`", "the agent file's word for `compensation`"),
    ("irreversible", "`true` / `false`", "step 11: `irreversible_pivot`, always asked"),
    ("idempotent", "`true` / `false`", "an attempt that may have run is run again with "
     "its key, not `UNCERTAIN`"),
    ("checks", "a list (below)", "step 7: the tool's own checks"),
    ("reads_outside", "`true` or `[label]`", "what it returns is outside content (labels)"),
    ("requires_trust", " / ".join(f"`{level}`" for level in TRUST_LEVELS), "step 9 / 11: the "
     "trust a label needs not to taint this write (default `trusted`)"),
    ("withdrawn", "`true` / `false`", "admission: `withdrawn`, refused"),
    ("secret", "`[argument]`", "these values are never shown (detail, approvals, events)"),
    ("fetches", "`[argument]`", "a read's addresses: step 4 lets them through, the address "
     "check holds them"),
    ("cost", "cents, or `{argument: name}`", "what one call costs the run (`cap_cost`)"),
    ("confidential", "`true` / `false`", "the proof (QG019): what it returns must not leave, so "
     "a send the model chooses after it waits for a person"),
    ("reads_store", "a store of `stores:`", "the proof (QG020, QG021): the store it reads"),
    ("writes_store", "a store of `stores:`", "the proof (QG021): the store it writes"),
    ("bound_to_user", "`true` / `false`", "the proof (QG020): it takes the tenant from the "
     "user's identity, never from the call"),
    ("source", "text (`shop-tools`)", "the proof (QG106): the package its code comes from"),
    ("server", "text (`mcp+https://tools.example/orders`)", "the proof (QG106): the server it "
     "runs on"),
    ("pin", "text (`1.4.2`, `sha256:...`)", "the proof (QG106): what `source` / `server` is "
     "pinned to"),
)  # fmt: skip

#: (form, how it is written, what it reads, the reasons it refuses with).
CHECK_FORMS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    (
        "condition",
        "`{argument: amount, at_most: 100}` (or `at_least`, `equals`, `one_of: [..]`); the value "
        "may be `{from: get_order.total, same: order_id}`",
        "the call's argument, and an earlier result",
        ("condition_failed", "condition_unknown"),
    ),
    (
        "require",
        "`{require: {from: get_order.paid, same: order_id}}`",
        "an earlier result's field: true, non-zero, non-empty",
        ("condition_failed", "condition_unknown"),
    ),
    (
        "limit",
        "`{at_most: {count: 3, per: day}}`, per " + ", ".join(f"`{p}`" for p in PERIODS),
        "`usage={'count': {'day': 2}}` from the host",
        ("usage_unknown", "limit_reached"),
    ),
    (
        "spend",
        "`{spend: {argument: amount, at_most: 500, per: day}}`, per "
        + ", ".join(f"`{p}`" for p in SPEND_PERIODS),
        "`usage={'spend': {'day': 120}}` from the host; `per: run` sums the argument over the "
        "tool's calls in the verified history",
        ("spend_unknown", "spend_exceeded"),
    ),
    (
        "cap_cost",
        "`{cap_cost: 500}` (cents)",
        "the run's cost (every history entry's `cost`) plus this call's",
        ("cost_unknown", "cost_exceeded"),
    ),
)


def _row(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def render_catalogue_reference() -> str:
    """The README's generated part of "The catalogue": sections, agent fields, tool fields, checks."""
    lines = [
        "Sections of a catalogue: " + ", ".join(f"`{key}`" for key in sorted(CATALOGUE_KEYS)) + ".",
        "Fields of an agent: "
        + ", ".join(f"`{key}`" for key in sorted(AGENT_KEYS))
        + f"; `privilege` is one of {', '.join(f'`{p}`' for p in PRIVILEGES)}, `on_unread` one of "
        + ", ".join(f"`{mode}`" for mode in ON_UNREAD)
        + ", `channel` is `{url, auth}` with `auth` one of "
        + ", ".join(f"`{auth}`" for auth in CHANNEL_AUTH)
        + ".",
        "Fields of a store (`stores: {notes: {...}}`): "
        + ", ".join(f"`{key}`" for key in sorted(STORE_KEYS))
        + ".",
        "",
        _row(("Tool field", "Written", "What the check does with it")),
        _row(("---", "---", "---")),
    ]
    lines += [_row((f"`{key}`", written, does)) for key, written, does in TOOL_FIELDS]
    lines += [
        "",
        _row(("Check (`checks:` item)", "Written", "Reads", "Refuses with")),
        _row(("---", "---", "---", "---")),
    ]
    lines += [
        _row((f"`{form}`", written, reads, ", ".join(f"`{reason}`" for reason in reasons)))
        for form, written, reads, reasons in CHECK_FORMS
    ]
    return "\n".join(lines) + "\n"
