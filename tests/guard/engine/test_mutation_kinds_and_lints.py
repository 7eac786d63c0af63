"""Tool kinds and lints where mutation testing found them unguarded.

The checks page, "Tipos de ferramenta": with `infer: true` a tool nobody marked is read from its
name, description and arguments by small word lists, and the strictest reading wins. Lints are the
lines `stalwart verify` prints, and their dict form is what `--format json` shows.
"""

from __future__ import annotations

from guard.engine import infer_kind, lint_catalogue, load_catalogue, render_lints
from guard.engine.addresses import find_destinations
from guard.engine.schema import compile_parameters


def test_a_description_that_starts_with_a_sending_verb_in_es_sends_out():
    assert infer_kind("announce", "Publishes the news to the list") == "sends_out"
    assert infer_kind("announce", "Announces the news") == "write"


def test_a_reading_verb_followed_by_a_changing_word_is_a_write():
    assert infer_kind("fetch_refund") == "write"
    assert infer_kind("fetch_order") == "read"


def test_an_unmarked_tool_with_a_recipient_argument_sends_out_when_inferred():
    data = {
        "tools": [
            {
                "name": "get_digest",
                "description": "Gets the digest",
                "parameters": {"type": "object", "properties": {"recipient": {"type": "string"}}},
            }
        ]
    }
    assert load_catalogue(data, infer=True).tools["get_digest"].kind == "sends_out"


def test_a_write_without_an_undo_is_linted_with_its_line_and_its_dict():
    data = {"tools": [{"name": "wipe", "kind": "write", "idempotent": True, "result_schema": {}}]}
    (lint,) = lint_catalogue(load_catalogue(data))
    assert str(lint) == (
        "write_without_compensation (warning) on wipe: a write neither compensated nor marked "
        "irreversible"
    )
    assert lint.to_dict() == {
        "code": "write_without_compensation",
        "severity": "warning",
        "tool": "wipe",
        "message": "a write neither compensated nor marked irreversible",
    }


def test_a_catalogue_without_lints_says_so():
    assert render_lints([]) == "Lints from the runtime: none.\n"


# -- which arguments hold a host ---------------------------------------------------------------


def hosts(properties: dict) -> frozenset[str]:
    schema, issues = compile_parameters({"type": "object", "properties": properties}, "p")
    assert issues == []
    return schema.host_arguments


def test_an_argument_holds_a_host_by_its_format_or_by_a_word_of_its_name():
    assert hosts({"target": {"type": "string", "format": "hostname"}}) == {"target"}
    assert hosts({"Server": {"type": "string"}}) == {"Server"}
    assert hosts({"callback-url": {}, "mirror.host": {}, "order_id": {}}) == {
        "callback-url",
        "mirror.host",
    }


def test_a_host_argument_is_read_as_a_host_and_any_other_is_not():
    host_arguments = hosts({"Server": {}, "note": {}})
    arguments = {"Server": "intranet.example", "note": "intranet.example"}
    found = find_destinations(arguments, host_arguments)
    assert [(item.pointer, item.host, item.form) for item in found] == [
        ("/Server", "intranet.example", "host")
    ]
