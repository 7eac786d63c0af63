"""The JSON Schema of agent.yaml: published with the package, kept to what the loader reads, met
by every example, and checked first by `stalwart verify` -- every error with its line, exit 1."""

from __future__ import annotations

import shutil
from pathlib import Path

import jsonschema
import pytest

from guard.engine.agent_yaml import OTHER_SECTIONS
from guard.engine.catalogue import AGENT_KEYS, CATALOGUE_KEYS, TOOL_KEYS
from guard.engine.settings import SETTINGS_KEYS
from stalwart_agents import cli_verify
from stalwart_agents.cli_verify import agent_schema, schema_problems
from stalwart_agents.runtime import RUNTIME_SETTINGS

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop"
EXAMPLES = sorted((ROOT / "examples").glob("*/agent.yaml"))
CORPUS = sorted((ROOT / "tests" / "proof" / "corpus").glob("*/agent.yaml"))
STARTERS = sorted((ROOT / "stalwart_agents" / "starters").glob("*/agent.yaml"))


def test_the_schema_is_a_valid_json_schema_published_in_the_package() -> None:
    schema = agent_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert (ROOT / "stalwart_agents" / "schemas" / "agent.schema.json").is_file()


def test_the_schema_declares_exactly_the_keys_the_loader_reads() -> None:
    schema = agent_schema()
    assert set(schema["properties"]) == set(CATALOGUE_KEYS) | set(OTHER_SECTIONS)
    defs = schema["$defs"]
    assert set(defs["agent"]["properties"]) == set(AGENT_KEYS)
    assert set(defs["tool"]["properties"]) == set(TOOL_KEYS)
    # The tool check's settings, and the two the runtime reads itself (the said modes, language).
    assert set(defs["settings"]["properties"]) == set(SETTINGS_KEYS) | set(RUNTIME_SETTINGS)
    assert set(schema["properties"]["budget"]["else"]["properties"]) == {"run", "agents"}


@pytest.mark.parametrize("path", EXAMPLES + CORPUS + STARTERS, ids=lambda p: p.parent.name)
def test_every_example_agent_file_validates(path: Path) -> None:
    assert schema_problems(path.read_text(encoding="utf-8"), path.name) == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.parent.name)
def test_every_example_names_the_schema_for_editors(path: Path) -> None:
    assert (
        "# yaml-language-server: $schema=../../stalwart_agents/schemas/agent.schema.json"
        in path.read_text(encoding="utf-8")
    )


def _shop_with(tmp_path: Path, extra: str) -> tuple[str, int]:
    shutil.copytree(SHOP, tmp_path / "shop")
    agent = tmp_path / "shop" / "agent.yaml"
    text = agent.read_text(encoding="utf-8")
    agent.write_text(text + extra, encoding="utf-8")
    return str(agent), len(text.splitlines()) + 1


MISTAKES = [
    ("an unknown section", "budgets: 20\n", "budgets: is not a key the agent file reads", 0),
    ("a budget of no steps", "budget: {run: 0}\n", "budget.run: 0 is less than the minimum", 0),
    ("a budget that is text", "budget: lots\n", "budget: 'lots' is not of type 'object'", 0),
    ("a firewall that is not a path", "firewall: 3\n", "firewall: 3 is not of type 'string'", 0),
    (
        "an agent key the loader does not read",
        "language: pt-BR\nsettings:\n  timeout: 3\n",
        "settings.timeout: is not a key the agent file reads",
        2,
    ),
]


@pytest.mark.parametrize(
    ("extra", "message", "offset"),
    [m[1:] for m in MISTAKES],
    ids=[m[0] for m in MISTAKES],
)
def test_a_file_that_breaks_the_schema_is_exit_1_naming_the_line(
    capsys, tmp_path, extra: str, message: str, offset: int
) -> None:
    agent, line = _shop_with(tmp_path, extra)
    code = cli_verify.main([agent])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert f"stalwart verify: error: agent.yaml:{line + offset}: " in err
    assert message in err and "Traceback" not in err


def test_every_schema_error_is_reported_each_with_its_line() -> None:
    text = (
        "agents:\n"
        "  desk:\n"
        "    privilege: root\n"
        "    tools: [get_order]\n"
        "tools:\n"
        "  - name: get_order\n"
        "    kind: fetch\n"
        "    irreversible: maybe\n"
    )
    problems = schema_problems(text, "agent.yaml")
    assert len(problems) == 3
    assert problems[0].startswith("agent.yaml:3: agents.desk.privilege: 'root' is not one of")
    assert any(p.startswith("agent.yaml:7: tools[0].kind") for p in problems)
    assert any(p.startswith("agent.yaml:8: tools[0].irreversible") for p in problems)


def test_a_module_entry_with_a_tool_s_key_names_the_key_and_its_line() -> None:
    problems = schema_problems("agents: {}\ntools:\n  - python: shop.tools\n    kind: read\n", "a")
    assert problems == ["a:4: tools[0].kind: is not a key the agent file reads"]
