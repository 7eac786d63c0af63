"""`examples/proof/`: for every rule of the table, an agent file that raises it and its fixed twin.

Each folder `examples/proof/<rule>/{raises,fixed}/` is a whole agent (agent.yaml and the rulebook
it names) a user runs as its second line says (`# stalwart verify [--depth N] <path>`). The test
runs that very command through `stalwart verify`, from the files on disk: the `raises` file must
raise exactly its rule (and exit 1 where the rule fails the gate), the fixed twin nothing at all
(exit 0). A rule of the registry with no pair must be one the README lists as not writable.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from proof.engine import BY_ID, REGISTRY
from proof.engine.rules import NOT_WRITABLE as PAGE_NOT_WRITABLE
from proof.engine.rules import example_path, rule_page_fields
from stalwart_agents import cli_verify

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "proof"
FILES = sorted(EXAMPLES.glob("*/*/agent.yaml"))
#: The rules no agent file can raise (the README's "Rules no agent file can raise" says why).
NOT_WRITABLE = {"QG312"}


def _command(path: Path) -> list[str]:
    """The arguments of the `# stalwart verify ...` line the example gives, with its own path."""
    line = path.read_text(encoding="utf-8").splitlines()[1]
    assert line.startswith("# stalwart verify "), f"{path}: line 2 names the command to run"
    words = shlex.split(line[len("# stalwart verify ") :])
    relative = path.relative_to(ROOT).as_posix()
    assert words[-1] == relative, f"{path}: the command names the file itself"
    return [*words[:-1], str(path)]


def _run(path: Path, capsys) -> tuple[int, dict]:
    code = cli_verify.main([*_command(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert err == "", err
    return code, json.loads(out)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.parent.name}-{p.parent.name}")
def test_each_example_raises_its_rule_and_its_fixed_twin_does_not(path: Path, capsys) -> None:
    rule, variant = path.parent.parent.name, path.parent.name
    code, report = _run(path, capsys)
    raised = sorted({finding["rule"] for finding in report["findings"]})
    if variant == "raises":
        assert raised == [rule]
        assert code == (1 if BY_ID[rule].fails_gate else 0)
    else:
        assert variant == "fixed"
        assert raised == [] and code == 0


def test_every_rule_of_the_table_has_a_pair_or_is_listed_as_not_writable() -> None:
    pairs = {p.parent.parent.name for p in FILES}
    for rule in pairs:
        assert {p.parent.name for p in FILES if p.parent.parent.name == rule} == {
            "raises",
            "fixed",
        }
    assert pairs | NOT_WRITABLE == {info.id for info in REGISTRY}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("**Rules no agent file can raise.**", 1)[1].split("\n\n", 1)[0]
    for rule in NOT_WRITABLE:
        assert re.search(rf"`{rule}`", section), f"the README does not say why {rule} is missing"


def test_the_examples_write_the_declarations_in_agent_yaml_not_an_overlay() -> None:
    assert not list(EXAMPLES.glob("**/*.json"))


def _verify(rule: str, variant: str, **options):
    from proof.engine import ProofCache, verify_agent_file

    folder = EXAMPLES / rule / variant
    files = {p.name: p.read_text(encoding="utf-8") for p in folder.iterdir() if p.is_file()}
    text = files.pop("agent.yaml")
    return verify_agent_file(text, files=files, cache=ProofCache(), **options)


def test_an_overlay_s_declaration_wins_over_agent_yaml_s_key_by_key() -> None:
    assert {f.rule for f in _verify("QG020", "raises").findings} == {"QG020"}
    overlay = {"declarations": {"tools": {"search_docs": {"bound_to_user": True}}}}
    assert {f.rule for f in _verify("QG020", "raises", overlay=overlay).findings} == set()
    # The store it reads is still agent.yaml's: the overlay changed one key, not the tool's marks.
    overlay = {"declarations": {"stores": {"docs": {"multi_tenant": False}}}}
    assert {f.rule for f in _verify("QG020", "raises", overlay=overlay).findings} == set()


def test_the_proof_reads_the_same_marks_the_tool_check_loads() -> None:
    from guard.engine import load_agent_yaml

    text = (EXAMPLES / "QG019" / "raises" / "agent.yaml").read_text(encoding="utf-8")
    catalogue = load_agent_yaml(text).catalogue
    assert catalogue.tools["get_customer"].confidential is True
    report = _verify("QG019", "raises")
    assert [f.subject for f in report.findings] == ["send_report"]
    assert "QG019" not in {rule for rule, _ in report.nothing_to_read}


@pytest.mark.parametrize("info", REGISTRY, ids=lambda info: info.id)
def test_each_rule_s_page_names_its_example_files_and_they_exist(info) -> None:
    example = dict(rule_page_fields(info))["Example"]
    if info.id in NOT_WRITABLE:
        assert info.id in PAGE_NOT_WRITABLE and "none" in example
        return
    for variant in ("raises", "fixed"):
        assert f"`{example_path(info.id, variant)}`" in example
        assert (ROOT / example_path(info.id, variant)).is_file()


def test_an_advisory_of_agent_yaml_s_own_is_reported_as_the_shipped_ones_are(tmp_path, capsys):
    import shutil

    shutil.copytree(EXAMPLES / "QG022" / "fixed", tmp_path / "desk")
    agent = tmp_path / "desk" / "agent.yaml"
    text = agent.read_text(encoding="utf-8")
    agent.write_text(
        text + "advisories:\n"
        "  - id: ACME-ADV-7\n"
        "    rails: [refunds]\n"
        "    summary: the refunds flow of 2025 lets a refund through twice\n"
        "    instead: use refunds_v2\n",
        encoding="utf-8",
    )
    code = cli_verify.main([str(agent), "--format", "json"])
    out, err = capsys.readouterr()
    findings = json.loads(out)["findings"]
    assert (code, err) == (1, "")
    assert [(f["rule"], f["on"]) for f in findings] == [("QG022", "refunds")]
    assert "ACME-ADV-7" in findings[0]["message"] and "ACME-ADV-7" in findings[0]["fix"]
