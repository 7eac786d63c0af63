"""Hostile YAML: alias bombs and deep nesting are refused with their line, before anything expands.

The attacker's alias bomb was 541 bytes (nine anchors of nine aliases each) and cost 2 GB and
50 seconds; their 5,000-deep nesting hit Python's recursion limit. Both made `stalwart verify`,
`check` and `plan` exit 2 ("internal error"). Each bomb here is built in a temporary folder, small
enough (262,144 values once expanded) that a reader without the budget only wastes seconds.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from guard.engine import CatalogueInvalid, load_agent_yaml
from guard.engine.kinds import parse_tool_kinds
from guard.engine.safe_yaml import MAX_ALIASES, MAX_DEPTH
from router.engine.errors import VocabularyInvalid
from router.engine.vocabulary import load_vocabulary
from stalwart_agents import cli

BUDGET = 0.5


def alias_bomb(levels: int = 6, width: int = 8) -> str:
    """`levels` anchors, each a list of `width` aliases of the one before: width**levels values,
    under a section the agent file allows, so that nothing else about the file is wrong."""
    lines = ["tools:", "  - name: look_up", "agents: {desk: {tools: [look_up]}}", "replies:"]
    lines.append("  l0: &l0 [" + ", ".join(["lol"] * width) + "]")
    for level in range(1, levels + 1):
        lines.append(f"  l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def deep_nesting(depth: int = 5_000) -> str:
    return "agents: {desk: {tools: []}}\ntools: " + "[" * depth + "]" * depth + "\n"


def test_an_alias_bomb_in_agent_yaml_is_refused_with_its_line():
    text = alias_bomb()
    started = time.perf_counter()
    with pytest.raises(CatalogueInvalid) as caught:
        load_agent_yaml(text)
    assert time.perf_counter() - started < BUDGET
    issue = caught.value.issues[0]
    assert issue.path == "agent.yaml:10"
    assert "expands to more than" in issue.message


def test_more_aliases_than_the_budget_are_refused_with_the_line_of_the_first_too_many():
    aliases = ", ".join(["*name"] * (MAX_ALIASES + 1))
    text = f"name: &name look_up\ntools: [{{name: look_up}}]\nagents: {{}}\nx: [{aliases}]\n"
    with pytest.raises(CatalogueInvalid) as caught:
        load_agent_yaml(text)
    issue = caught.value.issues[0]
    assert issue.path == "agent.yaml:4"
    assert f"more than {MAX_ALIASES} aliases" in issue.message


def test_deep_nesting_in_agent_yaml_is_refused_with_its_line_not_a_recursion_error():
    with pytest.raises(CatalogueInvalid) as caught:
        load_agent_yaml(deep_nesting())
    issue = caught.value.issues[0]
    assert issue.path == "agent.yaml:2"
    assert f"more than {MAX_DEPTH} deep" in issue.message


def test_an_alias_bomb_in_a_tool_kinds_file_is_refused_with_its_line():
    kinds, issues = parse_tool_kinds(alias_bomb())
    assert kinds == {}
    assert [str(issue.path) for issue in issues] == ["tool_kinds"]
    assert "line 10" in issues[0].message


def test_an_alias_bomb_in_a_vocabulary_file_is_refused_with_its_line():
    with pytest.raises(VocabularyInvalid) as caught:
        load_vocabulary(alias_bomb())
    assert caught.value.issues[0].line == 10


@pytest.fixture
def bombs(tmp_path):
    (tmp_path / "bomb.yaml").write_text(alias_bomb())
    (tmp_path / "deep.yaml").write_text(deep_nesting())
    (tmp_path / "call.json").write_text(json.dumps({"tool": "look_up", "arguments": {}}))
    return tmp_path


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["verify", "{dir}/bomb.yaml"], "bomb.yaml:10"),
        (["verify", "{dir}/deep.yaml"], "deep.yaml:2"),
        (["check", "--agent", "{dir}/bomb.yaml", "--agent-name", "desk", "--call",
          "{dir}/call.json"], "bomb.yaml:10"),
        (["check", "--agent", "{dir}/deep.yaml", "--agent-name", "desk", "--call",
          "{dir}/call.json"], "deep.yaml:2"),
        (["plan", "--agent", "{dir}/bomb.yaml", "look up 4411"], "bomb.yaml:10"),
        (["plan", "--agent", "{dir}/deep.yaml", "look up 4411"], "deep.yaml:2"),
    ],
)  # fmt: skip
def test_the_command_line_refuses_hostile_yaml_as_invalid_input_with_its_line(
    bombs, capsys, argv, line
):
    code = cli.main([part.format(dir=bombs) for part in argv])
    _, err = capsys.readouterr()
    assert code == 1
    assert line in err and "is not valid YAML: it " in err
    assert "internal error" not in err and "Traceback" not in err


RECURSIVE = (
    "agents:\n  desk: &desk\n    tools: [look_up]\n    again: *desk\ntools: [{name: look_up}]\n"
)


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "{dir}/loop.yaml"],
        ["check", "--agent", "{dir}/loop.yaml", "--agent-name", "desk", "--call", "{dir}/c.json"],
        ["plan", "--agent", "{dir}/loop.yaml", "look up 4411"],
    ],
    ids=["verify", "check", "plan"],
)
def test_a_document_that_refers_to_itself_is_refused_with_its_line(tmp_path, capsys, argv):
    (tmp_path / "loop.yaml").write_text(RECURSIVE, encoding="utf-8")
    (tmp_path / "c.json").write_text('{"tool": "look_up", "arguments": {}}', encoding="utf-8")
    code = cli.main([part.format(dir=tmp_path) for part in argv])
    _, err = capsys.readouterr()
    assert code == 1, err
    assert re.search(r"loop\.yaml:\d+: is not valid YAML", err), err
    assert "internal error" not in err and "Traceback" not in err
