"""Registration lints: the exact lines chapter 45's `stalwart verify` prints for the shop."""

from __future__ import annotations

from guard.engine import lint_catalogue, load_catalogue, render_lints

SHOP_LINES = [
    "write_not_retry_safe (warning) on charge_card: a write with no idempotency, so an ambiguous "
    "failure goes to a person",
    "write_without_result_schema (warning) on charge_card: a write with no result schema, so its "
    "outcome could not be reported",
    "compensation_not_retry_safe (warning) on charge_card: 'refund_card' undoes it and is not "
    "retry-safe",
    "write_not_retry_safe (warning) on refund_card: a write with no idempotency, so an ambiguous "
    "failure goes to a person",
    "write_without_result_schema (warning) on refund_card: a write with no result schema, so its "
    "outcome could not be reported",
    "write_without_result_schema (warning) on send_receipt: a write with no result schema, so its "
    "outcome could not be reported",
    "compensation_out_of_reach (warning) on charge_card: agent 'desk' can call it but not "
    "'refund_card', which undoes it, so a run of that agent cannot undo it",
]


def test_the_shop_lints_are_the_chapters_lines(shop_file):
    assert [str(lint) for lint in lint_catalogue(shop_file.catalogue)] == SHOP_LINES


def test_the_lint_section_renders_as_verify_prints_it(shop_file):
    text = render_lints(lint_catalogue(shop_file.catalogue))
    lines = text.splitlines()
    assert lines[0] == "Lints from the runtime (none of these blocks the agent):"
    assert [line.strip() for line in lines[1:]] == SHOP_LINES


def lints(*tools, agents=None) -> list[str]:
    data = {"tools": list(tools), "agents": agents or {}}
    return [lint.code for lint in lint_catalogue(load_catalogue(data))]


def test_a_write_neither_compensated_nor_irreversible_is_linted():
    assert lints({"name": "w", "kind": "write", "idempotent": True, "result_schema": {}}) == [
        "write_without_compensation"
    ]
    assert (
        lints(
            {
                "name": "w",
                "kind": "write",
                "idempotent": True,
                "result_schema": {},
                "irreversible": True,
            }
        )
        == []
    )


def test_an_undo_tool_is_not_asked_for_an_undo_of_its_own():
    undo = {"name": "u", "kind": "write", "idempotent": True, "result_schema": {}}
    write = {**undo, "name": "w", "compensation": "u"}
    assert lints(write, undo) == []


def test_an_unmarked_tool_counts_as_a_write_and_reads_are_never_linted():
    assert lints({"name": "orders"}) == [
        "write_without_compensation",
        "write_not_retry_safe",
        "write_without_result_schema",
    ]
    assert lints({"name": "get", "kind": "read"}) == []


def test_an_undo_out_of_reach_is_linted_per_agent():
    undo = {"name": "u", "kind": "write", "idempotent": True, "result_schema": {}}
    write = {**undo, "name": "w", "compensation": "u"}
    assert lints(write, undo, agents={"a": {"tools": ["w"]}, "b": {"tools": ["w", "u"]}}) == [
        "compensation_out_of_reach"
    ]
