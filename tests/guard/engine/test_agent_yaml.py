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
