"""`stalwart check` and `stalwart rules compile`: answers as JSON, closed exit codes, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

from stalwart_agents.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop"


def _write(path: Path, data) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def test_check_prints_the_decision(tmp_path, capsys):
    call = _write(
        tmp_path / "call.json",
        {
            "tool": "refund_card",
            "arguments": {"order_id": "4411", "amount": 40.0},
            "origins": {"order_id": "typed", "amount": "typed"},
        },
    )
    facts = _write(tmp_path / "facts.json", {"order_paid": True})
    code = main(
        [
            "check",
            "--agent",
            str(SHOP / "agent.yaml"),
            "--agent-name",
            "billing",
            "--call",
            call,
            "--context",
            facts,
        ]
    )
    out = json.loads(capsys.readouterr().out)
    # The file reads `order_paid` from get_order's result, and the file wins over --context: with
    # no get_order for 4411 in the history, the order is not paid and the rulebook refuses.
    assert (code, out["decision"], out["reasons"]) == (1, "refuse", ["refuse"])
    history = _write(
        tmp_path / "history.json",
        [
            {
                "tool": "get_order",
                "arguments": {"order_id": "4411"},
                "result": {"status": "paid", "card": "visa"},
            }
        ],
    )
    unpaid = _write(tmp_path / "unpaid.json", {"order_paid": False})
    code = main(
        [
            "check",
            "--agent",
            str(SHOP / "agent.yaml"),
            "--agent-name",
            "billing",
            "--call",
            call,
            "--history",
            history,
            "--context",
            unpaid,
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert (code, out["decision"], out["reasons"]) == (0, "confirm", ["write"])


def test_check_reads_the_persons_turns_with_the_runtime(tmp_path, capsys):
    call = _write(
        tmp_path / "call.json",
        {"tool": "get_order", "arguments": {"order_id": "4411"}},
    )
    agent = ["check", "--agent", str(SHOP / "agent.yaml"), "--agent-name", "desk", "--call", call]
    assert main(agent) == 0
    assert json.loads(capsys.readouterr().out)["detail"]["origins"]["order_id"]["from"] == "model"
    assert main([*agent, "--turn", "show me order 4411"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["detail"]["origins"]["order_id"] == {"origin": "typed", "from": "turn 0"}


def test_check_exits_1_on_a_refusal(tmp_path, capsys):
    call = _write(
        tmp_path / "call.json",
        {"tool": "refund_card", "arguments": {"order_id": "4411", "amount": 40.0}},
    )
    code = main(
        ["check", "--agent", str(SHOP / "agent.yaml"), "--agent-name", "billing", "--call", call]
    )
    out = json.loads(capsys.readouterr().out)
    assert (code, out["decision"], out["detail"]["flow"]) == (1, "refuse", "refunds")


def test_check_reads_a_history_of_calls_that_ran(tmp_path, capsys):
    (tmp_path / "agent.yaml").write_text(
        "agents:\n  desk:\n    tools: [get_order, refund]\n"
        "tools:\n"
        "  - name: get_order\n    kind: read\n"
        "    parameters: {type: object, properties: {order_id: {type: string}}}\n"
        "  - name: refund\n    kind: write\n    after: [get_order]\n"
        "    parameters: {type: object, properties: {order_id: {type: string}}}\n"
    )
    call = _write(tmp_path / "call.json", {"tool": "refund", "arguments": {"order_id": "1"}})
    before = main(["check", "--agent", str(tmp_path / "agent.yaml"), "--call", call])
    first = json.loads(capsys.readouterr().out)
    history = _write(
        tmp_path / "history.json",
        [{"tool": "get_order", "arguments": {"order_id": "1"}, "result": {"status": "paid"}}],
    )
    after = main(
        ["check", "--agent", str(tmp_path / "agent.yaml"), "--call", call, "--history", history]
    )
    second = json.loads(capsys.readouterr().out)
    assert (before, first["reasons"]) == (1, ["order_rule"])
    assert (after, second["decision"]) == (0, "confirm")


def test_check_names_what_is_wrong(tmp_path, capsys):
    (tmp_path / "call.json").write_text("{not json")
    code = main(
        [
            "check",
            "--agent",
            str(SHOP / "agent.yaml"),
            "--agent-name",
            "billing",
            "--call",
            str(tmp_path / "call.json"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "line 1 column 2" in err and "Traceback" not in err
    code = main(
        ["check", "--agent", str(SHOP / "agent.yaml"), "--call", str(tmp_path / "call.json")]
    )
    assert code == 1 and "--agent-name" in capsys.readouterr().err
    assert main(["check", "--agent", str(tmp_path / "missing.yaml"), "--call", "x"]) == 1
    assert main(["check"]) == 2


def test_rules_compile_writes_a_folder_an_agent_reads_as_it_is(tmp_path, capsys):
    from rulebooks.compiler import read_record_folder
    from stalwart_agents import Agent

    out = tmp_path / "compiled"
    code = main(["rules", "compile", str(SHOP / "policy.co"), "-o", str(out)])
    assert code == 0
    assert "refund_card" in capsys.readouterr().out
    record = read_record_folder(out)
    assert list(record["tools"]) == ["refund_card"]
    agent_yaml = (SHOP / "agent.yaml").read_text().replace("./policy.co", str(out))
    (tmp_path / "agent.yaml").write_text(agent_yaml)
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "tools.py").write_text((SHOP / "tools.py").read_text())
    (tmp_path / "agent.yaml").replace(tmp_path / "shop" / "agent.yaml")
    agent = Agent.from_file(tmp_path / "shop" / "agent.yaml")
    assert agent.rules().record == record


def test_rules_compile_shows_the_line_of_an_error(tmp_path, capsys):
    bad = tmp_path / "policy.co"
    bad.write_text("define flow x\n  goto y\n")
    code = main(["rules", "compile", str(bad), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1
    assert "policy.co:2" in err and "goto y" in err and "^" in err
    assert not (tmp_path / "out").exists()
