"""`stalwart plan`: a plan as JSON, closed exit codes, no traceback.

(The command lives in `stalwart_agents/cli_plan.py`; its tests sit with the router's.)
"""

from __future__ import annotations

import argparse
import json
import shutil

import pytest

import stalwart_agents.cli as cli
from stalwart_agents import cli_plan

from .conftest import SHOP


@pytest.fixture(autouse=True)
def plan_group(monkeypatch):
    if "stalwart_agents.cli_plan" not in cli.GROUP_MODULES:
        monkeypatch.setattr(cli, "GROUP_MODULES", (*cli.GROUP_MODULES, "stalwart_agents.cli_plan"))


def run(capsys, *argv):
    code = cli.main(["plan", *argv])
    out, err = capsys.readouterr()
    return code, out, err


AGENT = str(SHOP / "agent.yaml")


def test_a_plan_is_printed_as_json_and_exits_0(capsys):
    code, out, err = run(capsys, "--agent", AGENT, "--language", "pt-BR",
                         "estorne 40,00 do pedido 4411")  # fmt: skip
    assert code == 0 and err == ""
    plan = json.loads(out)
    assert plan["kind"] == "chain"
    assert plan["call"]["arguments"] == {"order_id": "4411", "amount": 40.0}
    assert plan["steps"] == [
        {"tool": "get_order", "agent": "desk", "arguments": {"order_id": "4411"}}
    ]


def test_an_agent_name_reads_with_that_agents_tools(capsys):
    code, out, _ = run(capsys, "--agent", AGENT, "--agent-name", "billing", "--language", "pt-BR",
                       "estorne 40,00 do pedido 4411")  # fmt: skip
    assert code == 0
    plan = json.loads(out)
    assert (plan["kind"], plan["rule"]) == ("declined", "refunds")


def test_an_unread_turn_still_exits_0(capsys):
    code, out, _ = run(capsys, "--agent", AGENT, "tell me a joke", "--asked-again")
    assert code == 0 and json.loads(out)["action"] == "refuse"


def test_today_counts_relative_days(capsys, tmp_path):
    erp = tmp_path / "agent.yaml"
    data = json.loads((SHOP.parents[1] / "tests/router/fixtures/erp_catalogue.json").read_text())
    import yaml

    erp.write_text(yaml.safe_dump(data), encoding="utf-8")
    code, out, _ = run(capsys, "--agent", str(erp), "--today", "2026-03-04",
                       "list orders since yesterday")  # fmt: skip
    assert code == 0 and json.loads(out)["call"]["arguments"] == {"since": "2026-03-03"}


def test_a_language_the_router_does_not_read_exits_1(capsys):
    code, out, err = run(capsys, "--agent", AGENT, "--language", "pt-PT", "x")
    assert (code, out) == (1, "")
    assert "not `pt-PT`" in err and "Traceback" not in err


def test_a_missing_agent_file_exits_1(capsys, tmp_path):
    code, _, err = run(capsys, "--agent", str(tmp_path / "nope.yaml"), "x")
    assert code == 1 and "no such file" in err


def test_an_invalid_agent_file_prints_every_issue_and_exits_1(capsys, tmp_path):
    bad = tmp_path / "agent.yaml"
    bad.write_text("agents:\n  desk:\n    tools: [ghost]\ncolour: blue\n", encoding="utf-8")
    code, _, err = run(capsys, "--agent", str(bad), "x")
    assert code == 1
    assert "ghost" in err and "colour" in err and "Traceback" not in err


def test_a_tools_module_that_cannot_be_imported_exits_1(capsys, tmp_path):
    bad = tmp_path / "agent.yaml"
    bad.write_text("tools:\n  - python: nowhere.tools\n", encoding="utf-8")
    code, _, err = run(capsys, "--agent", str(bad), "x")
    assert code == 1 and "`nowhere.tools`" in err


def test_an_invalid_vocabulary_exits_1_naming_its_line(capsys, tmp_path):
    vocabulary = tmp_path / "vocabulary.yaml"
    vocabulary.write_text("verbs:\n  refund:\n    xx: [a]\n", encoding="utf-8")
    code, _, err = run(capsys, "--agent", AGENT, "--vocabulary", str(vocabulary), "x")
    assert code == 1 and "verbs.refund.xx (line 3)" in err


def test_the_agent_files_vocabulary_and_language_are_read(capsys, tmp_path):
    folder = tmp_path / "shop"
    shutil.copytree(SHOP, folder)
    (folder / "words.yaml").write_text(
        "verbs:\n  refund:\n    pt-BR: [reembolsar]\n", encoding="utf-8"
    )
    text = (folder / "agent.yaml").read_text(encoding="utf-8")
    (folder / "agent.yaml").write_text(
        text + "vocabulary: words.yaml\nlanguage: pt-BR\n", encoding="utf-8"
    )
    code, out, err = run(capsys, "--agent", str(folder / "agent.yaml"),
                         "reembolse 10 reais do pedido 4411")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["call"]["tool"] == "refund_card"


def test_usage_errors_exit_2(capsys):
    assert cli.main(["plan", "x"]) == 2
    code, _, err = run(capsys, "--agent", AGENT, "--today", "tomorrow", "x")
    assert code == 2 and "--today" in err


def test_register_also_takes_the_subparsers_object():
    parser = argparse.ArgumentParser()
    groups = parser.add_subparsers(dest="group")
    cli_plan.register(groups)
    args = parser.parse_args(["plan", "--agent", "a.yaml", "hi"])
    assert (args.agent, args.turn, args.handler) == ("a.yaml", "hi", cli_plan._plan)
