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
EXAMPLES = sorted((ROOT / "examples").glob("**/agent.yaml"))
CORPUS = sorted((ROOT / "tests" / "proof" / "corpus").glob("*/agent.yaml"))
STARTERS = sorted((ROOT / "stalwart_agents" / "starters").glob("*/agent.yaml"))
#: Every agent file of the repository: the examples, the proof's corpus, the starters, the test
#: agents, and the README's agent files (its YAML blocks that start a file with `agents:`).
EVERY_FILE = sorted(
    p
    for p in ROOT.glob("**/agent.yaml")
    if not {".venv", "node_modules", ".git"} & set(p.relative_to(ROOT).parts)
)


def _readme_agent_files() -> list[str]:
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.S)
    return [block for block in blocks if re.search(r"^agents:", block, re.M)]


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


def test_every_agent_file_of_the_repository_is_checked() -> None:
    assert set(EXAMPLES + CORPUS + STARTERS) <= set(EVERY_FILE)
    assert len([p for p in EXAMPLES if "proof" in p.parts]) >= 56


@pytest.mark.parametrize("path", EVERY_FILE, ids=lambda p: p.parent.relative_to(ROOT).as_posix())
def test_every_example_agent_file_validates(path: Path) -> None:
    assert schema_problems(path.read_text(encoding="utf-8"), path.name) == []


@pytest.mark.parametrize("index", range(len(_readme_agent_files())))
def test_every_agent_file_the_readme_shows_validates(index: int) -> None:
    assert schema_problems(_readme_agent_files()[index], "README.md") == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.parent.relative_to(ROOT).as_posix())
def test_every_example_names_the_schema_for_editors(path: Path) -> None:
    import os

    schema = ROOT / "stalwart_agents" / "schemas" / "agent.schema.json"
    relative = Path(os.path.relpath(schema, path.parent)).as_posix()
    assert f"# yaml-language-server: $schema={relative}" in path.read_text(encoding="utf-8")


def _shop_with(tmp_path: Path, extra: str) -> tuple[str, int]:
    shutil.copytree(SHOP, tmp_path / "shop")
    agent = tmp_path / "shop" / "agent.yaml"
    text = agent.read_text(encoding="utf-8")
    agent.write_text(text + extra, encoding="utf-8")
    return str(agent), len(text.splitlines()) + 1


MISTAKES = [
    ("an unknown section", "budgets: 20\n", "budgets: is not a key the agent file reads", 0),
    (
        "an edge's `on`, which YAML reads as true",
        "edges:\n  - {from: desk_model, to: desk_end, on: reply}\n",
        "edges[0].True: is not a key the agent file reads (YAML reads a bare `on` as true",
        1,
    ),
    (
        "an edge with no `to`",
        "edges:\n  - {from: desk_model, exit_after: 3}\n",
        "edges[0]: 'to' is a required property",
        1,
    ),
    (
        "a counter of no traversals",
        "edges:\n  - {from: desk_model, to: desk_end, exit_after: 0}\n",
        "edges[0].exit_after: 0 is less than the minimum of 1",
        1,
    ),
    (
        "a step field the loader does not read",
        "steps:\n  mine:\n    agent: desk\n    goes_to: [desk_end]\n",
        "steps.mine.goes_to: is not a key the agent file reads",
        3,
    ),
    (
        "a condition that is not one",
        "steps:\n  mine:\n    routes: [{to: desk_end, when: [{after: get_order}]}]\n",
        "steps.mine.routes[0]",
        2,
    ),
    (
        "a store flag that is text",
        "stores:\n  notes: {persistent: yes please}\n",
        "stores.notes.persistent: 'yes please' is not of type 'boolean'",
        1,
    ),
    (
        "a check name the tool check does not have",
        "settings:\n  checks: [order, ordering]\n",
        "settings.checks[1]: 'ordering' is not one of",
        1,
    ),
    (
        "an advisory naming no rail",
        "advisories:\n  - {id: MY-1, summary: no rail}\n",
        "advisories[0]",
        1,
    ),
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


# An agent file the schema passes and the loader then refuses: each is invalid input, exit 1, with
# the field and its line (the list first, then the declarations the proof reads).
BASE = (
    "agents:\n"
    "  desk:\n"
    "    tools: [get_order, refund_card]\n"
    "tools:\n"
    "  - name: get_order\n"
    "    kind: read\n"
    "    parameters: {type: object, properties: {order_id: {type: string}}, required: [order_id]}\n"
    "    reads_outside: [email]\n"
    "  - name: refund_card\n"
    "    kind: write\n"
    "    parameters: {type: object, properties: {order_id: {type: string}}, required: [order_id]}\n"
)
INVALID = [
    (
        "a confidential mark that is not true or false",
        ("    kind: read\n", "    kind: read\n    confidential: sometimes\n"),
        "agent.yaml:7: tools[0].confidential: 'sometimes' is not of type 'boolean'",
    ),
    (
        "a channel with no authentication word the proof knows",
        (
            "    tools: [get_order, refund_card]\n",
            "    tools: [get_order, refund_card]\n    channel: {url: 'https://a.example', auth: pw}\n",
        ),
        "agent.yaml:4: agents.desk.channel.auth: 'pw' is not one of",
    ),
    (
        "a pin that is empty",
        ("    kind: write\n", "    kind: write\n    server: mcp+https://t.example\n    pin: ''\n"),
        "agent.yaml:12: tools[1].pin: '' should be non-empty",
    ),
    (
        "an undo naming a missing tool",
        ("", "undo:\n  refund_card: {tool: cancel_refund}\n"),
        "agent.yaml:13: undo.refund_card.tool: names a tool the catalogue does not have: "
        "`cancel_refund`",
    ),
    (
        "an undo for a tool the file does not have",
        ("", "undo:\n  cancel_refund: none\n"),
        "agent.yaml:13: undo.cancel_refund: names a tool the agent file does not have",
    ),
    (
        "an agent listing a tool the catalogue lacks",
        ("tools: [get_order, refund_card]", "tools: [get_order, refund_card, delete_order]"),
        "agent.yaml:3: agents.desk.tools[2]: names a tool the catalogue does not have: "
        "`delete_order`",
    ),
    (
        "an unknown hands_off_to",
        ("tools: [get_order, refund_card]\n", "tools: [get_order]\n    hands_off_to: [billing]\n"),
        "agent.yaml:4: agents.desk.hands_off_to[0]: names an agent the file does not have: "
        "`billing`",
    ),
    (
        "a duplicate key",
        ("    kind: write\n", "    kind: write\n    kind: read\n"),
        "agent.yaml:11: is not valid YAML: the key `kind` appears twice in one mapping",
    ),
    (
        "a fact read from a reads_outside tool",
        ("", "facts:\n  order_paid: {from: get_order.status == paid, same: order_id}\n"),
        "agent.yaml:13: facts.order_paid.from: `get_order` reads outside content",
    ),
    (
        "a tool writing a store `stores:` does not have",
        ("    kind: write\n", "    kind: write\n    writes_store: memo\n"),
        "agent.yaml:11: tools[1].writes_store: names a store `stores:` does not have: `memo`",
    ),
    (
        "an edge from a step the graph does not have",
        ("", "edges:\n  - {from: desk_model, to: desk_tool_refund_card}\n"),
        "agent.yaml:13: edges[0]: must go `from` and `to` nodes the graph has: the graph has no "
        "`desk_model`",
    ),
    (
        "a step's route to a step the graph does not have",
        ("", "steps:\n  mine:\n    agent: desk\n    routes: [desk_nowhere]\n"),
        "agent.yaml:15: steps.mine.routes[0]: names a node the graph does not have: `desk_nowhere`",
    ),
    (
        "a route claiming a condition only a check enforces",
        (
            "",
            "steps:\n  mine:\n    agent: desk\n    from: [desk_router]\n"
            "    routes: [{to: desk_tool_get_order, when: [{ran: get_order}]}]\n",
        ),
        "agent.yaml:16: steps.mine.routes[0].when: only a tool check's `allow` or `confirm` edge "
        "carries conditions on the call",
    ),
]


def _write(tmp_path: Path, change: tuple[str, str]) -> str:
    old, new = change
    text = BASE + new if old == "" else BASE.replace(old, new, 1)
    assert text != BASE
    agent = tmp_path / "agent.yaml"
    agent.write_text(text, encoding="utf-8")
    return str(agent)


@pytest.mark.parametrize(
    ("change", "message"), [m[1:] for m in INVALID], ids=[m[0] for m in INVALID]
)
def test_an_invalid_agent_file_is_exit_1_naming_the_field_and_its_line(
    capsys, tmp_path, change: tuple[str, str], message: str
) -> None:
    code = cli_verify.main([_write(tmp_path, change)])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert f"stalwart verify: error: {message}" in err and "Traceback" not in err


def test_the_base_of_the_invalid_files_is_itself_valid(capsys, tmp_path) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text(BASE, encoding="utf-8")
    assert cli_verify.main([str(agent)]) in (0, 1)
    out, err = capsys.readouterr()
    assert err == "" and "Gate:" in out
