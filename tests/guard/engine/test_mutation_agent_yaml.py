"""Reading agent.yaml where mutation testing found it unguarded.

An agent.yaml that is malformed is refused with every issue, each naming its section, tool or line;
a tool that nobody marked counts as a write unless inference is asked for (the checks page, "Tipos
de ferramenta"), and a tool-kinds file always wins.
"""

from __future__ import annotations

import pytest

from guard.engine import CatalogueInvalid, load_agent_yaml
from guard.engine.agent_yaml import parse_yaml


def issues_of(text: str, **options) -> list[str]:
    with pytest.raises(CatalogueInvalid) as caught:
        load_agent_yaml(text, **options)
    return [str(issue) for issue in caught.value.issues]


PING = {"name": "ping", "kind": "read"}


def test_a_repeated_key_is_named_exactly_with_its_line():
    assert issues_of("tools: []\nagents: {}\ntools: []\n") == [
        "agent.yaml:3: is not valid YAML: the key `tools` appears twice in one mapping"
    ]


def test_a_repeated_key_after_a_complex_key_is_still_found():
    assert issues_of("? [a]\n: 1\nx: 1\nx: 2\n") == [
        "agent.yaml:4: is not valid YAML: the key `x` appears twice in one mapping"
    ]


def test_a_yaml_error_names_the_file_the_caller_gave():
    assert issues_of("agents: {a: 1\n", filename="shop.yaml") == [
        "shop.yaml:2: is not valid YAML: expected ',' or '}', but got '<stream end>'"
    ]


def test_parse_yaml_names_agent_yaml_by_default():
    with pytest.raises(CatalogueInvalid) as caught:
        parse_yaml("a: b: c\n")
    assert [str(issue) for issue in caught.value.issues] == [
        "agent.yaml:1: is not valid YAML: mapping values are not allowed here"
    ]


def test_a_character_yaml_refuses_is_an_issue_of_the_file_without_a_line():
    found = issues_of("tools: []\x07\n")
    assert len(found) == 1
    assert found[0].startswith("agent.yaml: is not valid YAML: unacceptable character #x0007")


def test_a_file_that_is_not_a_mapping_is_refused():
    assert issues_of("- ping\n- pong\n") == [
        "agent.yaml: must be a mapping with `agents` and `tools`"
    ]
    assert issues_of("- ping\n", filename="desk.yaml") == [
        "desk.yaml: must be a mapping with `agents` and `tools`"
    ]


def test_unknown_sections_are_all_named_even_when_keys_are_not_text():
    assert issues_of("tools: []\n1: one\nsurprise: 2\n") == [
        "1: is not a section of an agent file",
        "surprise: is not a section of an agent file",
    ]


def test_a_file_without_tools_loads_empty():
    loaded = load_agent_yaml("agents: {}\n")
    assert dict(loaded.catalogue.tools) == {}
    assert loaded.data == {"agents": {}, "tools": []}


def test_tools_that_are_not_a_list_are_refused():
    assert issues_of("tools: {ping: {kind: read}}\n") == [
        "tools: must be a list of tools or `python: <module>` entries"
    ]


def test_every_malformed_module_entry_is_named_and_the_rest_still_read():
    text = (
        "tools:\n"
        "  - python: shop.tools\n    name: x\n"
        "  - python: 7\n"
        "  - python: a.tools\n"
        "  - python: b.tools\n"
        "  - name: ping\n    kind: nope\n"
    )
    assert issues_of(text) == [
        "tools[0]: must be `python: <module>` alone",
        "tools[1]: must be `python: <module>` alone",
        "tools[2].python: the module `a.tools` was not given to the loader",
        "tools[3].python: the module `b.tools` was not given to the loader",
        "tools[4].kind: must be one of read, write, sends_out, not `nope`",
    ]


def test_a_rulebook_that_is_not_a_path_is_refused():
    assert issues_of("tools: []\nrulebook: [policy.co]\n") == [
        "rulebook: must be the path of a rulebook"
    ]


def test_an_unmarked_tool_is_a_write_unless_inference_is_asked_for():
    text = "tools:\n  - name: get_weather\n    description: Read the weather\n"
    assert load_agent_yaml(text).catalogue.tools["get_weather"].kind == "write"
    assert load_agent_yaml(text, infer=True).catalogue.tools["get_weather"].kind == "read"


def test_a_tool_kinds_file_given_to_the_loader_or_written_in_the_file_wins():
    text = "tools:\n  - name: ping\n    kind: write\n"
    assert load_agent_yaml(text, tool_kinds="ping: read\n").catalogue.tools["ping"].kind == "read"
    in_file = text + "tool_kinds: {ping: sends_out}\n"
    assert load_agent_yaml(in_file).catalogue.tools["ping"].kind == "sends_out"


def test_the_loaded_file_keeps_the_catalogue_data_with_module_tools_flattened():
    text = "tools:\n  - python: lab.tools\n  - name: pong\n    kind: read\nagents:\n  a: {tools: [ping]}\n"
    loaded = load_agent_yaml(text, modules={"lab.tools": [PING]})
    assert loaded.data == {
        "agents": {"a": {"tools": ["ping"]}},
        "tools": [PING, {"name": "pong", "kind": "read"}],
    }
