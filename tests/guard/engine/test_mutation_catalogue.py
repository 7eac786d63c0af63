"""Loading a catalogue where mutation testing found it unguarded.

The principle: a catalogue that is malformed is refused with every issue, each naming its path,
in document order; order rules and undos bound to values of earlier calls hold only for those
values (chapter 45, steps 5 and 6).
"""

from __future__ import annotations

from typing import Any

import pytest

from guard.engine import CatalogueInvalid, ToolCheck, load_catalogue

from .conftest import KEY

ORDER = {"type": "object", "properties": {"order_id": {"type": "string"}}}
SHIP = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "carrier": {"type": "string"}},
}


def issues_of(data: Any, **options: Any) -> list[str]:
    with pytest.raises(CatalogueInvalid) as caught:
        load_catalogue(data, **options)
    return [str(issue) for issue in caught.value.issues]


def shipping(after: Any = None, compensation: Any = None) -> dict[str, Any]:
    ship: dict[str, Any] = {"name": "ship", "kind": "write", "parameters": SHIP}
    if after is not None:
        ship["after"] = after
    if compensation is not None:
        ship["compensation"] = compensation
    return {
        "tools": [
            {"name": "get_order", "kind": "read", "parameters": ORDER},
            ship,
            {"name": "unship", "kind": "write", "parameters": SHIP},
        ]
    }


def test_bindings_that_are_not_a_mapping_are_refused():
    data = shipping(after=[{"tool": "get_order", "bind": ["order_id"]}])
    assert issues_of(data) == ["tools[1].after[0].bind: must be a mapping of argument to source"]


def test_every_malformed_binding_is_named():
    data = shipping(
        after=[
            {
                "tool": "get_order",
                "bind": {"order_id": "result.", "carrier": "9lives", "ghost": "order_id"},
            }
        ]
    )
    assert issues_of(data) == [
        "tools[1].after[0].bind.carrier: must be `result.<field>` or `arguments.<field>`, not `9lives`",
        "tools[1].after[0].bind.ghost: is not an argument of the tool: `ghost`",
        "tools[1].after[0].bind.order_id: must be `result.<field>` or `arguments.<field>`, not `result.`",
    ]


def test_an_after_rule_bound_to_an_argument_holds_only_for_that_value():
    check = ToolCheck(
        shipping(after=[{"tool": "get_order", "bind": {"order_id": "arguments.order_id"}}]),
        key=KEY,
    )
    history = check.new_history("s")
    check.record(history, {"tool": "get_order", "arguments": {"order_id": "A1"}}, {})
    typed = {"order_id": "typed", "carrier": "typed"}
    ok = {"tool": "ship", "arguments": {"order_id": "A1", "carrier": "dhl"}, "origins": typed}
    assert check.check(ok, session=history).reasons == ("write",)
    other = {**ok, "arguments": {"order_id": "B2", "carrier": "dhl"}}
    refused = check.check(other, session=history)
    assert refused.reasons == ("order_rule",)
    assert refused.detail["bind"] == {"order_id": "arguments.order_id"}


def test_an_undo_bound_to_the_step_it_undoes_needs_its_values():
    check = ToolCheck(
        shipping(compensation={"tool": "unship", "bind": {"order_id": "arguments.order_id"}}),
        key=KEY,
    )
    history = check.new_history("s")
    check.record(history, {"tool": "ship", "arguments": {"order_id": "A1", "carrier": "dhl"}}, {})
    undo = {"tool": "unship", "arguments": {"order_id": "A1"}, "compensation_of": 0}
    assert check.check(undo, session=history).reasons == ("compensation",)
    wrong = {**undo, "arguments": {"order_id": "B2"}}
    assert check.check(wrong, session=history).reasons == ("compensation_mismatch",)


def test_a_result_schema_must_be_a_json_schema():
    data = {"tools": [{"name": "t", "result_schema": "object"}]}
    assert issues_of(data) == ["tools[0].result_schema: must be a JSON Schema"]
    data = {"tools": [{"name": "t", "result_schema": {"type": "thing"}}]}
    found = issues_of(data)
    assert len(found) == 1
    assert found[0].startswith("tools[0].result_schema: is not a valid JSON Schema: ")
    assert "'thing'" in found[0]
    assert load_catalogue({"tools": [{"name": "t", "result_schema": True}]}).tools["t"]


def test_issues_of_tools_come_in_the_tools_order_not_the_texts():
    tools = [{"name": f"t{index}", "kind": "read"} for index in range(12)]
    tools[2]["kind"] = "reads"
    tools[10]["kind"] = "reads"
    assert issues_of({"tools": tools}) == [
        "tools[2].kind: must be one of read, write, sends_out, not `reads`",
        "tools[10].kind: must be one of read, write, sends_out, not `reads`",
    ]


def test_the_catalogue_tells_a_tools_kind_with_and_without_inference():
    data = {"tools": [{"name": "get_weather", "description": "Reads the weather"}]}
    catalogue = load_catalogue(data, infer=True)
    assert catalogue.kind("get_weather") == "read"
    assert catalogue.kind("get_weather", infer=False) == "write"


# -- every malformed field of a tool is refused at its path --------------------------------------

ARGS = {"type": "object", "properties": {"order_id": {"type": "string"}}}

INVALID_TOOLS = [
    ({"description": 5}, ["tools[0].description: must be text"]),
    ({"at_most": "two"}, ["tools[0].at_most: must be a whole number, 0 or more"]),
    ({"at_most": True}, ["tools[0].at_most: must be a whole number, 0 or more"]),
    (
        {"requires_trust": "high"},
        ["tools[0].requires_trust: must be one of outside, internal, trusted, not `high`"],
    ),
    ({"secret": "order_id"}, ["tools[0].secret: must be a list of argument names"]),
    ({"secret": [1]}, ["tools[0].secret: must be a list of argument names"]),
    ({"after": "get_order"}, ["tools[0].after: must be a list of tools"]),
    ({"not_after": {"tool": "get_order"}}, ["tools[0].not_after: must be a list of tools"]),
    (
        {"after": [5, {"tool": "get_order", "when": "now"}]},
        [
            "tools[0].after[0]: must be a tool name or `{tool, bind}`",
            "tools[0].after[1]: must be a tool name or `{tool, bind}`",
        ],
    ),
    (
        {"after": ["ghost", "phantom"]},
        [
            "tools[0].after[0].tool: names a tool the catalogue does not have: `ghost`",
            "tools[0].after[1].tool: names a tool the catalogue does not have: `phantom`",
        ],
    ),
    (
        {"not_after": [{"tool": "get_order", "bind": {"x": "order_id"}}]},
        ["tools[0].not_after[0].bind.x: is not an argument of the tool: `x`"],
    ),
    ({"compensation": 5}, ["tools[0].compensation: must be a tool name or `{tool, bind}`"]),
    (
        {"compensation": {"tool": "get_order", "undo": True}},
        ["tools[0].compensation: must be a tool name or `{tool, bind}`"],
    ),
    (
        {"compensation": {"tool": "get_order", "bind": {"x": "order_id"}}},
        ["tools[0].compensation.bind.x: is not an argument of the tool: `x`"],
    ),
    (
        {"reads_outside": "bad label"},
        ["tools[0].reads_outside: must be true, false, or a list of labels"],
    ),
    ({"reads_outside": []}, ["tools[0].reads_outside: must be true, false, or a list of labels"]),
    (
        {"reads_outside": ["web", "bad label"]},
        ["tools[0].reads_outside: must be true, false, or a list of labels"],
    ),
    ({"reads_outside": 3}, ["tools[0].reads_outside: must be true, false, or a list of labels"]),
    ({"checks": {"at_most": 3}}, ["tools[0].checks: must be a list of checks"]),
    (
        {"checks": ["at_most 3", 7]},
        ["tools[0].checks[0]: must be a mapping", "tools[0].checks[1]: must be a mapping"],
    ),
]


@pytest.mark.parametrize(("fields", "expected"), INVALID_TOOLS)
def test_a_malformed_field_of_a_tool_is_refused_at_its_path(fields, expected):
    data = {
        "tools": [
            {"name": "refund", "kind": "write", "parameters": ARGS, **fields},
            {"name": "get_order", "kind": "read", "parameters": ARGS},
        ]
    }
    assert issues_of(data) == expected
    assert issues_of(data, infer=True) == expected


def test_an_unmarked_tools_description_is_read_when_inferring():
    data = {"tools": [{"name": "notice", "description": "Sends a notice to the team"}]}
    assert load_catalogue(data, infer=True).tools["notice"].kind == "sends_out"


def test_a_tool_limited_to_zero_calls_loads_and_never_runs():
    check = ToolCheck({"tools": [{"name": "ping", "kind": "read", "at_most": 0}]}, key=KEY)
    decision = check.check({"tool": "ping"}, session=check.new_history("s"))
    assert (decision.reasons, decision.rule) == (("order_rule",), "at_most 0")


def test_reading_outside_content_labels_it_outside_or_with_the_labels_given():
    data = {
        "tools": [
            {"name": "browse", "kind": "read", "reads_outside": True},
            {"name": "inbox", "kind": "read", "reads_outside": "email"},
            {"name": "pay", "kind": "write"},
        ]
    }
    catalogue = load_catalogue(data)
    assert catalogue.outside_tools == {"browse": ("outside",), "inbox": ("email",)}
    check = ToolCheck(data, key=KEY)
    history = check.new_history("s")
    check.record(history, {"tool": "browse"}, "<html>")
    decision = check.check({"tool": "pay"}, session=history)
    assert decision.reasons == ("tainted_call",)
    assert decision.detail["labels"] == ["outside"]


# -- agents, the catalogue itself, tool kinds and facts --------------------------------------------

GET_ORDER = {"name": "get_order", "kind": "read"}

INVALID_CATALOGUES = [
    ({"agents": ["desk"]}, ["agents: must be a mapping of agent name to agent"]),
    (
        {"agents": {"bad name": {}, "9desk": {}}},
        [
            "agents.9desk: is not a valid agent name: `9desk`",
            "agents.bad name: is not a valid agent name: `bad name`",
        ],
    ),
    (
        {"agents": {"desk": ["get_order"], "billing": "refund"}},
        ["agents.billing: must be a mapping", "agents.desk: must be a mapping"],
    ),
    (
        {"agents": {"desk": {"colour": "red", "budget": 3}}},
        [
            "agents.desk.budget: is not a field of an agent",
            "agents.desk.colour: is not a field of an agent",
        ],
    ),
    (
        {"agents": {"desk": {"tools": "get_order"}}},
        ["agents.desk.tools: must be a list of tool names"],
    ),
    (
        {"agents": {"desk": {"hands_off_to": "billing"}}},
        ["agents.desk.hands_off_to: must be a list of agent names"],
    ),
    (
        {"agents": {"desk": {"privilege": "root"}}},
        ["agents.desk.privilege: must be one of low, normal, high, not `root`"],
    ),
    (
        {"agents": {"desk": {"on_unread": "shrug"}}},
        ["agents.desk.on_unread: must be one of refuse, model, ask, answer, not `shrug`"],
    ),
    ({"tools": {"get_order": {}}}, ["tools: must be a list of tools"]),
    (
        {"tools": ["get_order", 7, GET_ORDER]},
        ["tools[0]: must be a mapping", "tools[1]: must be a mapping"],
    ),
    (
        {"tools": [{"name": "bad name"}, {"name": 7}, GET_ORDER]},
        [
            "tools[0].name: must be a tool name, not `bad name`",
            "tools[1].name: must be a tool name, not `7`",
        ],
    ),
    (
        {"tools": [GET_ORDER], "tool_kinds": "a: [\n"},
        ["tool_kinds: the file is not valid YAML at line 2"],
    ),
    (
        {"tools": [GET_ORDER], "tool_kinds": "- a\n"},
        ["tool_kinds: must be a mapping of tool name to kind"],
    ),
    (
        {"tools": [GET_ORDER], "tool_kinds": {1: "read", 2: "read"}},
        [
            "tool_kinds: a tool name is not a string: `1`",
            "tool_kinds: a tool name is not a string: `2`",
        ],
    ),
    (
        {
            "tools": [{"name": "inbox", "kind": "read", "reads_outside": ["email"]}],
            "facts": {"x": {"from": "inbox.subject"}},
        },
        ["facts.x.from: `inbox` reads outside content, so a fact is never read from it"],
    ),
    (
        {"tools": [GET_ORDER], "facts": {"x": {"from": 5}}},
        ["facts.x.from: `from` is a text like `get_order.status`"],
    ),
]


@pytest.mark.parametrize(("data", "expected"), INVALID_CATALOGUES)
def test_a_malformed_catalogue_is_refused_with_every_issue_at_its_path(data, expected):
    assert issues_of(data) == expected


def test_an_agent_loads_as_written():
    data = {
        "tools": [GET_ORDER, {"name": "refund", "kind": "write"}],
        "agents": {
            "desk": {
                "tools": ["refund", "get_order"],
                "hands_off_to": ["billing"],
                "model": "anthropic:claude",
                "on_unread": "ask",
            },
            "billing": {},
        },
    }
    desk = load_catalogue(data).agents["desk"]
    assert (desk.name, desk.tool_order, desk.tools) == (
        "desk",
        ("refund", "get_order"),
        {"refund", "get_order"},
    )
    assert (desk.hands_off_to, desk.model, desk.on_unread, desk.privilege) == (
        ("billing",),
        "anthropic:claude",
        "ask",
        "normal",
    )
    billing = load_catalogue(data).agents["billing"]
    assert (billing.tools, billing.model, billing.on_unread) == (frozenset(), None, None)


def test_a_catalogue_loads_unmarked_tools_as_writes_and_without_tools_is_empty():
    assert load_catalogue({"tools": [{"name": "get_weather"}]}).tools["get_weather"].kind == "write"
    assert dict(load_catalogue({}).tools) == {}
