"""Loading a catalogue strictly: every issue at once, each naming its path."""

from __future__ import annotations

import pytest

from guard.engine import CatalogueInvalid, load_catalogue

from .conftest import lab_catalogue


def issues_of(data, **options) -> list[str]:
    with pytest.raises(CatalogueInvalid) as caught:
        load_catalogue(data, **options)
    return [str(issue) for issue in caught.value.issues]


def test_the_lab_catalogue_loads_with_its_lookups():
    catalogue = load_catalogue(lab_catalogue())
    assert catalogue.tools["refund_card"].compensation.tool == "cancel_refund"
    assert catalogue.undo_tools == {"cancel_refund"}
    assert catalogue.outside_tools == {"fetch_page": ("web",)}
    assert catalogue.tools["orders"].kind == "write"
    assert catalogue.agents["assistant"].tools >= {"get_order", "pay"}


def test_every_issue_is_reported_at_once_each_with_its_path():
    data = {
        "agents": {
            "desk": {"tools": ["get_order", "nope"], "hands_off_to": ["ghost"], "model": "gpt"}
        },
        "tools": [
            {"name": "get_order", "kind": "reader"},
            {"name": "refund", "parameters": {"type": "array"}},
            {
                "name": "charge",
                "parameters": {"type": "object", "properties": {"x": {"type": "wrong"}}},
            },
            {"name": "get_order"},
            {
                "name": "undo_me",
                "compensation": {"tool": "missing"},
                "after": [{"tool": "get_order", "bind": {"y": "z"}}],
            },
            {
                "name": "limits",
                "at_most": -1,
                "irreversible": "yes",
                "colour": "red",
                "secret": ["pin"],
            },
        ],
        "facts": {"paid": {"from": "ghost.status == paid"}},
        "extra": 1,
    }
    found = issues_of(data)
    assert "agents.desk.tools[1]: names a tool the catalogue does not have: `nope`" in found
    assert "agents.desk.hands_off_to[0]: names an agent the file does not have: `ghost`" in found
    assert "agents.desk.model: must be `provider:model`, not `gpt`" in found
    assert "tools[0].kind: must be one of read, write, sends_out, not `reader`" in found
    assert "tools[1].parameters.type: must be `object`: a tool takes named arguments" in found
    assert any(
        issue.startswith("tools[2].parameters.properties.x.type: is not a valid JSON Schema")
        for issue in found
    )
    assert "tools[3].name: repeats the tool `get_order` of tools[0]" in found
    assert (
        "tools[4].compensation.tool: names a tool the catalogue does not have: `missing`" in found
    )
    assert "tools[4].after[0].bind.y: is not an argument of the tool: `y`" in found
    assert "tools[5].at_most: must be a whole number, 0 or more" in found
    assert "tools[5].irreversible: must be true or false, not `yes`" in found
    assert "tools[5].colour: is not a field of a tool" in found
    assert "tools[5].secret: names an argument the tool does not declare: `pin`" in found
    assert "facts.paid.from: `ghost` is not a tool of the agent" in found
    assert "extra: is not a section of a catalogue" in found


def test_a_remote_reference_in_a_schema_is_refused():
    data = {
        "tools": [
            {
                "name": "t",
                "parameters": {"type": "object", "properties": {"a": {"$ref": "https://x/s"}}},
            }
        ]
    }
    assert issues_of(data) == [
        "tools[0].parameters.properties.a.$ref: a reference outside the schema is not allowed: `https://x/s`"
    ]


def test_tool_checks_are_validated_with_their_paths():
    data = {
        "tools": [
            {
                "name": "create_order",
                "parameters": {"type": "object", "properties": {"quantity": {"type": "integer"}}},
                "checks": [
                    {"argument": "quantity", "at_most": {"from": "check_stock.in_stock"}},
                    {"at_most": {"count": 3, "per": "fortnight"}},
                    {"spend": {"argument": "price", "at_most": 10, "per": "day"}},
                    {"argument": "quantity", "between": [1, 2]},
                ],
            }
        ]
    }
    found = issues_of(data)
    assert (
        "tools[0].checks[0].at_most.from: names a tool the catalogue does not have: `check_stock`"
        in found
    )
    assert (
        "tools[0].checks[1].at_most.per: must be one of minute, hour, day, week, month, "
        "not `fortnight`" in found
    )
    assert (
        "tools[0].checks[2].spend.argument: must name an argument of this tool, not `price`"
        in found
    )
    assert "tools[0].checks[3]: must have exactly one of at_most, at_least, equals, one_of" in found


def test_a_tool_kinds_file_naming_an_unknown_tool_or_kind_is_refused():
    found = issues_of(lab_catalogue(), tool_kinds="get_order: reads\nghost: read\n")
    assert "tool_kinds.get_order: must be one of read, write, sends_out, not `reads`" in found
    assert "tool_kinds.ghost: names a tool the catalogue does not have: `ghost`" in found


def test_a_catalogue_that_is_not_a_mapping_is_refused():
    assert issues_of([]) == ["a catalogue must be a mapping with `tools`"]


def test_an_after_rule_reads_a_bare_field_from_the_result():
    data = lab_catalogue()
    data["tools"][4]["after"] = [{"tool": "get_order", "bind": {"order_id": "order_id"}}]
    rule = load_catalogue(data).tools["refund_card"].after[0]
    assert rule.bind[0].source == ("result", "order_id")
    assert rule.text == "after get_order"


def _marked(tool: dict, **extra) -> dict:
    base = {"name": "q", "kind": "read", "parameters": {"type": "object", "properties": {}}}
    return {"agents": {"desk": {"tools": ["q"]}}, "tools": [{**base, **tool}], **extra}


def test_the_marks_the_proof_reads_are_loaded_into_the_tool_and_the_agent():
    catalogue = load_catalogue(
        {
            "agents": {"desk": {"tools": ["q"], "channel": {"url": "https://a.example/a2a"}}},
            "stores": {"docs": {"multi_tenant": True}},
            "tools": [
                {
                    "name": "q",
                    "kind": "read",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "sql": {"type": "string", "format": "sql"},
                            "note": {"type": "string"},
                        },
                    },
                    "confidential": True,
                    "reads_store": "docs",
                    "bound_to_user": True,
                    "server": "mcp+https://tools.example/q",
                    "pin": "1.2.3",
                }
            ],
        }
    )
    tool = catalogue.tools["q"]
    assert tool.argument_kinds == {"sql": "sql"}
    assert (tool.confidential, tool.reads_store, tool.bound_to_user) == (True, "docs", True)
    assert (tool.server, tool.pin, tool.source, tool.writes_store) == (
        "mcp+https://tools.example/q",
        "1.2.3",
        None,
        None,
    )
    assert catalogue.stores["docs"].multi_tenant and not catalogue.stores["docs"].persistent
    assert catalogue.agents["desk"].channel == {"url": "https://a.example/a2a", "auth": "none"}


@pytest.mark.parametrize(
    ("tool", "extra", "path", "message"),
    [
        ({"confidential": "yes"}, {}, "tools[0].confidential", "must be true or false"),
        ({"bound_to_user": 1}, {}, "tools[0].bound_to_user", "must be true or false"),
        ({"reads_store": "docs"}, {}, "tools[0].reads_store", "names a store `stores:` does not"),
        ({"writes_store": ""}, {}, "tools[0].writes_store", "must be a non-empty text"),
        ({"pin": 3}, {}, "tools[0].pin", "must be a non-empty text"),
        ({}, {"stores": {"docs": {"persistent": "no"}}}, "stores.docs.persistent", "true or false"),
        ({}, {"stores": {"docs": {"tenants": 2}}}, "stores.docs.tenants", "not a field of a store"),
        ({}, {"stores": ["docs"]}, "stores", "must map store names"),
    ],
)
def test_a_mark_the_proof_reads_is_refused_by_its_path_when_it_is_wrong(tool, extra, path, message):
    with pytest.raises(CatalogueInvalid) as caught:
        load_catalogue(_marked(tool, **extra))
    assert any(i.path == path and message in i.message for i in caught.value.issues), (
        caught.value.issues
    )


@pytest.mark.parametrize(
    ("channel", "path", "message"),
    [
        ({"url": "https://a.example", "auth": "password"}, "agents.desk.channel.auth", "one of"),
        ({"auth": "token"}, "agents.desk.channel.url", "the channel's address"),
        ({"url": "https://a.example", "port": 1}, "agents.desk.channel.port", "not a field"),
        ("https://a.example", "agents.desk.channel", "must be `{url, auth}`"),
    ],
)
def test_an_agent_s_channel_is_refused_by_its_path_when_it_is_wrong(channel, path, message):
    data = _marked({})
    data["agents"]["desk"]["channel"] = channel
    with pytest.raises(CatalogueInvalid) as caught:
        load_catalogue(data)
    assert any(i.path == path and message in i.message for i in caught.value.issues), (
        caught.value.issues
    )
