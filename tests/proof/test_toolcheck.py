"""The tool check as the graph models it: the atoms each way past a tool's check carries."""

from __future__ import annotations

import pytest

from guard.engine import load_catalogue, load_settings
from guard.engine.checks import NAMES
from proof.engine.toolcheck import derive_check_edges, tainting
from rulebooks.compiler import compile_source

PARAMS = {"type": "object", "properties": {"id": {"type": "string"}}}


def _catalogue(**refund):
    return load_catalogue(
        {
            "agents": {"desk": {"tools": ["get", "inbox", "refund"]}},
            "tools": [
                {"name": "get", "kind": "read", "parameters": PARAMS},
                {"name": "inbox", "kind": "read", "parameters": PARAMS, "reads_outside": ["email"]},
                {"name": "refund", "kind": "write", "parameters": PARAMS, **refund},
            ],
            "facts": {"paid": {"from": "get.status == paid", "same": "id"}},
        }
    )


def _edges(catalogue, settings=None, record=None, tool="refund"):
    loaded = load_settings(settings, known_checks=NAMES)
    return {(e.on, e.atoms) for e in derive_check_edges(catalogue, loaded, record, tool)}


def test_a_write_goes_to_a_person_under_its_order_rules() -> None:
    edges = _edges(_catalogue(after=["get"], not_after=["inbox"], at_most=2))
    assert edges == {("confirm", (("below", "refund", 2), ("not_ran", "inbox"), ("ran", "get")))}


def test_switching_the_order_check_off_drops_the_order_atoms() -> None:
    edges = _edges(_catalogue(after=["get"]), settings={"checks": ["your_rules"]})
    assert edges == {("confirm", ())}


def test_a_read_is_allowed_straight_to_the_tool() -> None:
    assert _edges(_catalogue(), tool="get") == {("allow", ())}


def test_a_require_check_needs_the_tool_it_reads() -> None:
    edges = _edges(_catalogue(checks=[{"require": {"from": "get.card", "same": "id"}}]))
    assert edges == {("confirm", (("ran", "get"),))}


def test_each_colang_route_is_one_alternative_with_the_tools_its_conditions_need() -> None:
    record = compile_source(
        "define flow a\n  user x\n  if $paid\n    execute refund\n"
        "define flow b\n  user y\n  execute refund\n",
        filename="p.co",
    )
    assert _edges(_catalogue(), record=record) == {("confirm", (("ran", "get"),)), ("confirm", ())}


def test_a_governed_tool_with_no_route_never_passes() -> None:
    record = compile_source("define flow a\n  user x\n  stop\n  execute refund\n", filename="p.co")
    assert _edges(_catalogue(), record=record) == set()


def test_switching_your_rules_off_ignores_the_rulebook() -> None:
    record = compile_source("define flow a\n  user x\n  stop\n  execute refund\n", filename="p.co")
    edges = _edges(_catalogue(), settings={"checks": ["order"]}, record=record)
    assert edges == {("confirm", ())}


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("confirm", {("confirm", ()), ("allow", (("no_label", ("email",)),))}),
        (
            "refuse",
            {("confirm", (("no_label", ("email",)),)), ("allow", (("no_label", ("email",)),))},
        ),
    ],
)
def test_a_rule_sheet_allow_is_held_back_by_outside_content(policy, expected) -> None:
    record = compile_source("tool,condition,decision,reason\nrefund,,allow,ok\n", filename="p.csv")
    assert _edges(_catalogue(), settings={"taint_policy": policy}, record=record) == expected


def test_an_unconditional_refuse_row_leaves_no_way_past() -> None:
    record = compile_source("tool,condition,decision,reason\nrefund,,refuse,no\n", filename="p.csv")
    assert _edges(_catalogue(), record=record) == set()


def test_labels_the_settings_trust_do_not_taint_a_write() -> None:
    catalogue = _catalogue()
    trusted = load_settings({"label_trust": {"email": "trusted"}}, known_checks=NAMES)
    assert tainting(catalogue, trusted, "refund") == ()
    assert tainting(catalogue, load_settings(None, known_checks=NAMES), "refund") == ("email",)
