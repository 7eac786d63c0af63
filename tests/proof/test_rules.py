"""The rule registry: the chapter's gate table exactly, one source for the report and the docs."""

from __future__ import annotations

import pytest

from proof.engine import BY_ID, REGISTRY, render_rules_table
from proof.engine.rules import TYPES, render_rules_reference

#: The chapter's table (pt-BR edition): rule, title, type, fails the gate, stops Agent(...).
CHAPTER_TABLE = [
    ("QG001", "Missing check", "Vulnerability", True, True),
    ("QG002", "Escapable guard", "Vulnerability", True, True),
    ("QG003", "Multi-turn escape", "Vulnerability", True, True),
    ("QG004", "Permissive by default", "Bug", False, False),
    ("QG005", "Unshippable policy", "Bug", True, False),
    ("QG006", "Unverified region", "Bug", False, False),
    ("QG007", "Read before written", "Vulnerability", False, True),
    ("QG008", "Call without execute", "Vulnerability", False, True),
    ("QG009", "Undefined bot message", "Vulnerability", False, True),
    ("QG010", "Dead action", "Vulnerability", False, True),
    ("QG011", "Confused deputy", "Vulnerability", True, True),
    ("QG012", "Cascading injection", "Vulnerability", True, True),
    ("QG013", "Irreversible before undoable", "Bug", False, False),
    ("QG014", "Order rule escapable", "Vulnerability", True, True),
    ("QG015", "Undeclared route", "Bug", False, False),
    ("QG016", "Unmodelled path", "Vulnerability", True, True),
    ("QG017", "Model writes code that runs", "Vulnerability", True, True),
    ("QG018", "Model writes a query or a destination", "Vulnerability", False, True),
    ("QG019", "Confidential data leaves", "Vulnerability", False, True),
    ("QG020", "Retrieval not bound to the user", "Vulnerability", False, True),
    ("QG021", "Untrusted content persisted", "Vulnerability", False, True),
    ("QG022", "Rail with a published advisory", "Vulnerability", True, True),
    ("QG023", "Unbounded loop", "Bug", False, False),
    ("QG101", "Unchecked action", "Security hotspot", False, False),
    ("QG104", "Check missing against its peers", "Security hotspot", False, False),
    ("QG105", "Unrecoverable write", "Security hotspot", False, False),
    ("QG106", "Unpinned tool source", "Security hotspot", False, False),
    ("QG107", "Unauthenticated agent channel", "Security hotspot", False, False),
    ("QG312", "Engine disagreement", "Bug", True, False),
]


def test_registry_is_the_chapters_gate_table_in_order() -> None:
    ours = [(r.id, r.title, r.type, r.fails_gate, r.stops_agent) for r in REGISTRY]
    assert ours == CHAPTER_TABLE


@pytest.mark.parametrize("info", REGISTRY, ids=lambda r: r.id)
def test_every_rule_says_what_it_proves_what_it_does_not_and_how_to_fix_it(info) -> None:
    assert info.type in TYPES
    assert len(info.proves) > 40 and len(info.does_not_prove) > 20 and len(info.fix) > 20
    assert all(tag.endswith(":2026") for tag in info.owasp)


def test_chapter_rules_with_nothing_to_read_use_the_chapters_sentences() -> None:
    assert BY_ID["QG017"].nothing_to_read == "no argument is declared as code or a shell command"
    assert (
        BY_ID["QG106"].nothing_to_read
        == "no tool declares a source or a server, and the catalogue declares no modules"
    )
    assert BY_ID["QG107"].nothing_to_read == "no agent in the catalogue declares a remote channel"


def test_chapter_owasp_tags_of_the_shops_two_findings() -> None:
    assert BY_ID["QG023"].owasp == ("LLM06:2026", "ASI08:2026")
    assert BY_ID["QG105"].owasp == ("LLM03:2026", "ASI08:2026")


def test_docs_table_is_generated_from_the_registry() -> None:
    table = render_rules_table()
    lines = table.strip().splitlines()
    assert lines[0] == "| Rule | Title | Type | Fails the gate | Stops `Agent(...)` |"
    assert lines[2] == "| `QG001` | Missing check | Vulnerability | yes | yes |"
    assert lines[-1] == "| `QG312` | Engine disagreement | Bug | yes | no |"
    assert len(lines) == 2 + len(REGISTRY)


def test_reference_page_has_a_section_per_rule() -> None:
    page = render_rules_reference()
    assert page.count("\n## ") + page.startswith("## ") == len(REGISTRY)
    assert "**Does not prove.**" in page


def test_fix_text_fills_the_subject_and_keeps_literal_braces() -> None:
    assert "`bind: {order_id: order_id}`" in BY_ID["QG003"].fix_for(
        tool="refund_card", argument="order_id"
    )
    assert BY_ID["QG101"].fix_for(tool="close_ticket").startswith("Give 'close_ticket'")


#: The agent.yaml key each rule's page must name (what a user writes for the proof to read it).
AGENT_YAML_KEYS = {
    "QG001": ["steps.<id>", "`from`", "`routes`", "`edges:`"],
    "QG012": ["`reads_outside`", "`settings.checks`", "`outside_content`", "`allow`"],
    "QG014": ["`after`", "`not_after`", "`at_most`", "`settings.checks`", "`order`"],
    "QG015": ["`hands_off_to`", "`steps:`", "`edges:`"],
    "QG016": ["`steps.<id>`", "`routes`"],
    "QG017": ["`format`", "`parameters`", "`code`", "`shell`"],
    "QG018": ["`format`", "`sql`", "`query`", "`path`", "`uri`", "`template`", "`fetches`"],
    "QG019": ["`confidential: true`"],
    "QG020": ["`stores.<store>.multi_tenant`", "`reads_store`", "`bound_to_user`"],
    "QG021": ["`stores.<store>.persistent`", "`writes_store`", "`reads_store`"],
    "QG022": ["`advisories:`"],
    "QG023": ["`budget:`", "`exit_after`", "`edges:`"],
    "QG106": ["`source`", "`server`", "`pin`"],
    "QG107": ["`channel: {url, auth}`"],
}


@pytest.mark.parametrize("rule_id", sorted(AGENT_YAML_KEYS))
def test_each_rule_s_page_names_the_agent_yaml_key_it_reads(rule_id: str) -> None:
    reads = BY_ID[rule_id].reads
    for key in AGENT_YAML_KEYS[rule_id]:
        assert key in reads, f"{rule_id}'s page does not name {key}"
    assert "only" not in reads  # nothing the rule reads is left to a graph document alone


def test_every_key_a_rule_page_names_is_one_the_loader_or_its_schema_knows() -> None:
    import json
    import re
    from pathlib import Path

    schema = json.loads(
        (
            Path(__file__).resolve().parents[2] / "stalwart_agents/schemas/agent.schema.json"
        ).read_text(encoding="utf-8")
    )
    known: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            known.update(node.get("properties", {}))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    from guard.engine.checks import NAMES

    known |= NAMES  # the checks `settings.checks` switches on
    for info in REGISTRY:
        for key in re.findall(r"`([a-z_]+)(?::[^`]*)?`", info.reads):
            if key.endswith("_") or key in {"declarations", "nodes", "opaque", "allow"}:
                continue
            if key in {"code", "shell", "sql", "query", "path", "uri", "url", "template"}:
                continue  # the words of `format`
            if key in {"python", "javascript", "bash", "command", "run", "agents"}:
                continue
            if key in {
                "require",
                "same",
                "from",
                "bind",
                "stop",
                "bot",
                "define",
                "kind",
                "format",
                "sends_out",
            }:
                continue  # the forms of a `checks:` item, a fact, an order rule, a rulebook
            assert key in known, f"{info.id} names `{key}`, which agent.yaml does not have"
