"""`stalwart verify`: files read relative to agent.yaml, three formats, closed exit codes."""

from __future__ import annotations

import json
import shutil

import pytest

from stalwart_agents import cli, cli_verify

from .conftest import CORPUS, SHOP


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli_verify.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_shop_passes_the_gate_and_exits_0(capsys) -> None:
    code, out, err = _run(capsys, str(SHOP / "agent.yaml"))
    assert code == 0 and err == ""
    assert out.startswith("stalwart verify agent.yaml\n")
    assert "Code checks: no finding in 3 file(s)" in out
    assert out.rstrip().endswith("the 2 warnings above are for you to look at and weigh.")


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_json_and_sarif_are_valid_json(capsys, fmt: str) -> None:
    code, out, _ = _run(capsys, str(SHOP / "agent.yaml"), "--format", fmt)
    assert code == 0
    data = json.loads(out)
    assert data.get("format") == "stalwart-verify/1" or data.get("version") == "2.1.0"


def test_a_failing_gate_exits_1(capsys, tmp_path) -> None:
    shutil.copytree(CORPUS / "qg014_fires", tmp_path / "agent")
    code, out, err = _run(capsys, str(tmp_path / "agent" / "agent.yaml"))
    assert code == 1 and err == ""
    assert "Gate: failed." in out


def test_an_overlay_is_merged_and_can_fail_the_gate(capsys, tmp_path) -> None:
    shutil.copytree(CORPUS / "qg001_fires", tmp_path / "agent")
    folder = tmp_path / "agent"
    code, out, _ = _run(
        capsys, str(folder / "agent.yaml"), "--overlay", str(folder / "overlay.json")
    )
    assert code == 1 and "QG001 High on get_order" in out
    code, _, _ = _run(capsys, str(folder / "agent.yaml"))
    assert code == 0


def test_depth_and_turns_are_passed_to_the_proof(capsys) -> None:
    code, out, _ = _run(
        capsys, str(SHOP / "agent.yaml"), "--format", "json", "--depth", "9", "--turns", "1"
    )
    proof = json.loads(out)["proof"]
    assert code == 0 and (proof["depth"], proof["turns"]) == (9, 1)


def test_a_missing_file_the_agent_names_is_invalid_input_exit_1_with_one_line_and_no_traceback(
    capsys, tmp_path
) -> None:
    (tmp_path / "agent.yaml").write_text((SHOP / "agent.yaml").read_text())
    code, out, err = _run(capsys, str(tmp_path / "agent.yaml"))
    assert code == 1 and out == ""
    assert "Traceback" not in err
    assert err.startswith("stalwart verify: error: agent.yaml:12: tools[0].python: the source")


@pytest.mark.parametrize(
    "argv",
    [["--depth", "0", "x.yaml"], ["--format", "xml", "x.yaml"], []],
)
def test_usage_errors_exit_2(capsys, argv) -> None:
    code, _, err = _run(capsys, *argv)
    assert code == 2 and "Traceback" not in err


def test_an_unreadable_agent_file_exits_2(capsys, tmp_path) -> None:
    code, _, err = _run(capsys, str(tmp_path / "nope.yaml"))
    assert code == 2
    assert err == f"stalwart verify: error: cannot read `{tmp_path / 'nope.yaml'}`: no such file\n"


def test_an_invalid_overlay_exits_2_naming_its_paths(capsys, tmp_path) -> None:
    overlay = tmp_path / "overlay.json"
    overlay.write_text(json.dumps({"nodes": [{"id": "x", "kind": "tool"}]}))
    code, _, err = _run(capsys, str(SHOP / "agent.yaml"), "--overlay", str(overlay))
    assert code == 2
    assert f"{overlay}: $.nodes[0].kind: an overlay adds the team's steps" in err
    overlay.write_text("{nope")
    code, _, err = _run(capsys, str(SHOP / "agent.yaml"), "--overlay", str(overlay))
    assert code == 2 and "is not valid JSON" in err


def test_a_whole_graph_document_is_verified_as_it_is(capsys, tmp_path) -> None:
    from proof.engine import build_agent_graph

    from .conftest import shop_files

    doc = build_agent_graph((SHOP / "agent.yaml").read_text(), files=shop_files())
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(doc))
    code, out, _ = _run(capsys, str(path))
    assert code == 0 and "QG105 Review on refund_card (agent.yaml:10)" in out
    doc["entries"] = ["desk_model"]
    path.write_text(json.dumps(doc))
    code, _, err = _run(capsys, str(path))
    assert code == 2 and "$.entries[0]: names `desk_model`, which is not a router" in err


def test_a_rulebook_folder_from_stalwart_rules_compile_is_read_as_it_is(capsys, tmp_path) -> None:
    from rulebooks.compiler import compile_file_to_folder

    folder = tmp_path / "shop"
    shutil.copytree(SHOP, folder)
    compile_file_to_folder(folder / "policy.co", folder / "compiled")
    text = (folder / "agent.yaml").read_text().replace("./policy.co", "./compiled")
    (folder / "agent.yaml").write_text(text)
    (folder / "policy.co").unlink()
    code, out, _ = _run(capsys, str(folder / "agent.yaml"))
    assert code == 0 and "Compiled the rulebook compiled" in out


def test_an_internal_error_exits_2_and_shows_no_traceback(capsys, monkeypatch) -> None:
    import proof.engine

    def explode(*args, **kwargs):
        raise RuntimeError("the prover broke\nsecond line")

    monkeypatch.setattr(proof.engine, "verify_agent_file", explode)
    code, out, err = _run(capsys, str(SHOP / "agent.yaml"))
    assert code == 2 and out == ""
    assert err == "stalwart verify: internal error: the prover broke (please report this)\n"


def test_the_report_can_be_written_to_a_file(capsys, tmp_path) -> None:
    target = tmp_path / "report.sarif"
    code, out, _ = _run(
        capsys, str(SHOP / "agent.yaml"), "--format", "sarif", "--output", str(target)
    )
    assert code == 0 and out == ""
    assert json.loads(target.read_text())["version"] == "2.1.0"


def test_the_command_plugs_into_stalwart_as_a_group(capsys, monkeypatch) -> None:
    monkeypatch.setattr(cli, "GROUP_MODULES", ("stalwart_agents.cli_verify",))
    assert cli.main(["verify", str(SHOP / "agent.yaml"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["gate"]["passed"] is True
    assert cli.main(["verify", "--depth", "-1", str(SHOP / "agent.yaml")]) == 2


def _shallow(tmp_path):
    shutil.copytree(CORPUS / "qg014_fires", tmp_path / "agent")
    return str(tmp_path / "agent" / "agent.yaml")


def test_every_text_report_says_the_depth_and_turns_it_proved_to(capsys) -> None:
    code, out, _ = _run(capsys, str(SHOP / "agent.yaml"))
    assert code == 0
    assert "Proved to a depth of 60 steps per turn over 3 turns; the run's step limit is 60." in out
    assert "Warning: the depth" not in out


def test_a_depth_below_the_step_limit_is_a_warning_in_every_format(capsys, tmp_path) -> None:
    agent = _shallow(tmp_path)
    code, out, _ = _run(capsys, agent, "--depth", "2")
    assert code == 0
    assert "Proved to a depth of 2 steps per turn over 3 turns" in out
    assert "Warning: the depth 2 is below the run's step limit of 60" in out
    _, out, _ = _run(capsys, agent, "--depth", "2", "--format", "json")
    data = json.loads(out)
    assert data["proof"]["depth"] == 2 and data["proof"]["step_limit"] == 60
    assert data["proof"]["below_step_limit"] is True
    assert data["gate"]["passed"] is True and data["gate"]["fails_on_depth"] is False
    _, out, _ = _run(capsys, agent, "--depth", "2", "--format", "sarif")
    run = json.loads(out)["runs"][0]
    assert (run["properties"]["depth"], run["properties"]["step_limit"]) == (2, 60)
    (notice,) = run["invocations"][0]["toolExecutionNotifications"]
    assert notice["level"] == "warning"
    assert "below the run's step limit of 60" in notice["message"]["text"]


def test_under_strict_a_depth_below_the_step_limit_fails_the_gate(capsys, tmp_path) -> None:
    agent = _shallow(tmp_path)
    code, out, _ = _run(capsys, agent, "--depth", "2", "--strict")
    assert code == 1
    assert "Gate: failed. The proof went to a depth of 2, below the run's step limit of 60" in out
    code, out, _ = _run(capsys, agent, "--depth", "2", "--strict", "--format", "json")
    assert code == 1 and json.loads(out)["gate"]["fails_on_depth"] is True


def test_under_strict_the_full_depth_gates_on_the_findings_alone(capsys) -> None:
    code, out, _ = _run(capsys, str(SHOP / "agent.yaml"), "--strict")
    assert code == 0 and "Gate: passed." in out


def test_the_step_limit_is_the_declared_run_budget(capsys, tmp_path) -> None:
    shutil.copytree(SHOP, tmp_path / "shop")
    agent = tmp_path / "shop" / "agent.yaml"
    agent.write_text(agent.read_text() + "budget: {run: 12}\n")
    code, out, _ = _run(capsys, str(agent), "--depth", "12", "--strict")
    assert code == 0 and "the run's step limit is 12." in out
    code, out, _ = _run(capsys, str(agent), "--depth", "11", "--strict")
    assert code == 1 and "below the run's step limit of 12" in out


def _with_firewall(tmp_path, policy: str | None):
    shutil.copytree(SHOP, tmp_path / "shop")
    agent = tmp_path / "shop" / "agent.yaml"
    agent.write_text(agent.read_text() + "firewall: ./firewall.json\n")
    if policy is not None:
        (tmp_path / "shop" / "firewall.json").write_text(policy, encoding="utf-8")
    line = agent.read_text().splitlines().index("firewall: ./firewall.json") + 1
    return str(agent), line


def test_a_firewall_file_that_is_missing_is_invalid_input_naming_the_key_and_its_line(
    capsys, tmp_path
) -> None:
    agent, line = _with_firewall(tmp_path, None)
    code, out, err = _run(capsys, agent)
    assert code == 1 and out == ""
    assert err == (
        f"stalwart verify: error: agent.yaml:{line}: firewall: the policy `./firewall.json` "
        "does not exist\n"
    )


@pytest.mark.parametrize("policy", ["{not json", json.dumps({"rules": "all of them"})])
def test_a_firewall_file_that_is_not_a_policy_is_invalid_input_naming_the_key_and_its_line(
    capsys, tmp_path, policy: str
) -> None:
    agent, line = _with_firewall(tmp_path, policy)
    code, out, err = _run(capsys, agent)
    assert code == 1 and out == ""
    assert err.startswith(f"stalwart verify: error: agent.yaml:{line}: firewall: ")
    assert "Traceback" not in err


def test_a_firewall_file_that_compiles_is_verified_as_before(capsys, tmp_path) -> None:
    policy = {"name": "shop", "default_verdict": "allow", "rules": []}
    agent, _ = _with_firewall(tmp_path, json.dumps(policy))
    code, out, _ = _run(capsys, agent)
    assert code == 0 and "Gate: passed." in out
