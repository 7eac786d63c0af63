"""Reading agent.yaml text into a catalogue; the shop of chapter 45."""

from __future__ import annotations

import pytest

from guard.engine import CatalogueInvalid, load_agent_yaml

from .conftest import shop_agent_file, shop_tools_module


def issues_of(text: str, **options) -> list[str]:
    with pytest.raises(CatalogueInvalid) as caught:
        load_agent_yaml(text, **options)
    return [str(issue) for issue in caught.value.issues]


def test_the_shop_file_reads_into_its_two_desks_and_five_tools():
    shop = shop_agent_file()
    assert sorted(shop.catalogue.agents) == ["billing", "desk"]
    assert shop.catalogue.agents["desk"].hands_off_to == ("billing",)
    assert shop.catalogue.agents["desk"].model == "anthropic:claude-sonnet-5-5"
    assert shop.catalogue.agents["billing"].privilege == "high"
    assert sorted(shop.catalogue.tools) == [
        "charge_card", "get_order", "read_inbox", "refund_card", "send_receipt",
    ]  # fmt: skip
    assert shop.rulebook == "./policy.co"
    assert set(shop.catalogue.facts) == {"card_on_file", "order_paid"}


def test_a_module_the_caller_did_not_give_is_an_issue():
    assert issues_of("tools:\n  - python: shop.tools\n") == [
        "tools[0].python: the module `shop.tools` was not given to the loader"
    ]


def test_an_issue_in_a_tool_from_a_module_names_the_module():
    tools = [dict(tool) for tool in shop_tools_module().TOOLS]
    tools[2] = {**tools[2], "kind": "mail"}
    found = issues_of("tools:\n  - python: shop.tools\n", modules={"shop.tools": tools})
    assert found == ["shop.tools[2].kind: must be one of read, write, sends_out, not `mail`"]


def test_yaml_errors_and_repeated_keys_name_the_line():
    assert issues_of("agents:\n  desk: [\n")[0].startswith("agent.yaml:3: is not valid YAML")
    repeated = issues_of("tools: []\nagents: {}\ntools: []\n")
    assert repeated[0].startswith("agent.yaml:3: is not valid YAML: the key `tools` appears twice")


def test_an_unknown_section_is_refused_and_other_parts_sections_are_kept():
    assert issues_of("tools: []\nsurprise: 1\n") == ["surprise: is not a section of an agent file"]
    other = load_agent_yaml("tools: []\nreplies: {composer: template}\n").other
    assert other == {"replies": {"composer": "template"}}


def test_tools_may_be_written_out_in_the_file():
    text = "tools:\n  - name: ping\n    kind: read\nagents:\n  a: {tools: [ping]}\n"
    assert load_agent_yaml(text).catalogue.tools["ping"].kind == "read"
    assert issues_of("tools:\n  - name: ping\n    kind: nope\n") == [
        "tools[0].kind: must be one of read, write, sends_out, not `nope`"
    ]


UNDO_FILE = """
agents:
  desk: {tools: [pay, refund, ship]}
tools:
  - {name: pay, kind: write, parameters: {type: object, properties: {amount: {type: number}}}}
  - {name: refund, kind: write, parameters: {type: object, properties: {amount: {type: number}}}}
  - {name: ship, kind: write, undo: none, parameters: {type: object}}
undo:
  pay: {tool: refund, bind: {amount: arguments.amount}}
  refund: none
"""


def test_the_undo_section_says_each_tools_undo_or_that_a_run_may_leave_it_done():
    from guard.engine import lint_catalogue

    catalogue = load_agent_yaml(UNDO_FILE).catalogue
    assert catalogue.tools["pay"].compensation.tool == "refund"
    assert catalogue.tools["refund"].undo_none and catalogue.tools["ship"].undo_none
    assert not catalogue.tools["pay"].undo_none
    lints = [(lint.code, lint.tool) for lint in lint_catalogue(catalogue)]
    assert not [entry for entry in lints if entry[0] == "write_without_compensation"]


@pytest.mark.parametrize(
    ("section", "path", "message"),
    [
        ("undo:\n  nope: none\n", "undo.nope", "names a tool the agent file does not have"),
        ("undo:\n  ship: none\n", "undo.ship", "the tool already says its undo"),
        ("undo: [pay]\n", "undo", "must map tool names"),
        ("undo:\n  pay: true\n", "undo.pay", "must be `none`, a tool name"),
        ("undo:\n  pay: {tool: gone}\n", "undo.pay.tool", "names a tool the catalogue"),
    ],
)
def test_an_undo_that_cannot_be_read_is_refused_by_its_path(section, path, message):
    text = UNDO_FILE.split("undo:\n  pay")[0] + section
    with pytest.raises(CatalogueInvalid) as caught:
        load_agent_yaml(text)
    found = [(issue.path, issue.message) for issue in caught.value.issues]
    assert any(p == path and message in m for p, m in found), found


def test_a_tool_cannot_say_its_undo_twice():
    text = UNDO_FILE.replace("undo: none, parameters", "undo: none, compensation: pay, parameters")
    with pytest.raises(CatalogueInvalid) as caught:
        load_agent_yaml(text.split("undo:\n  pay")[0])
    assert any(issue.path == "tools[2].undo" for issue in caught.value.issues)
