"""`stalwart firewall validate` and `stalwart firewall check`: output, exit codes, bad input."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stalwart_agents import cli
from stalwart_agents.cli import main

ROOT = Path(__file__).resolve().parents[2]

VALID = {
    "name": "production",
    "default_verdict": "allow",
    "rules": [
        {
            "priority": 10,
            "name": "no rm -rf",
            "tool_name_glob": "shell.*",
            "args_match": [{"path": "$.command", "op": "regex", "value": "rm\\s+-rf"}],
            "verdict": "deny",
        },
        {
            "priority": 20,
            "name": "ssrf",
            "stage": "egress",
            "verdict": "deny",
            "egress": {"deny": ["169.254.169.254", "10.0.0.0/8"]},
        },
        {
            "priority": 30,
            "name": "hold deploys",
            "tool_name_glob": "ci.deploy",
            "verdict": "require_approval",
        },
    ],
}
INVALID = {
    "name": "broken",
    "default_verdict": "allow",
    "rules": [
        {
            "priority": 1,
            "name": "a",
            "verdict": "deny",
            "args_match": [{"path": "$.ip", "op": "cidr", "value": "nope"}],
        },
        {"priority": "2", "name": "a", "verdict": "deny"},
    ],
}


def write(tmp_path: Path, name: str, data: Any) -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_validate_prints_every_problem_with_its_path_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "policy.json", INVALID)
    assert main(["firewall", "validate", path]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"{path}: rules[0].args_match[0].value: not a valid CIDR",
        f"{path}: rules[1].priority: must be an integer",
        f"{path}: rules[1].name: duplicate rule name `a` (see rules[0])",
        "3 problems found",
    ]


def test_validate_a_valid_policy_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "policy.json", VALID)
    assert main(["firewall", "validate", path]) == 0
    assert capsys.readouterr().out == f"{path}: valid (3 rules)\n"


def test_validate_can_write_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "policy.json", INVALID)
    assert main(["firewall", "validate", "--format", "json", path]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is False
    assert report["issues"][0] == {
        "path": "rules[0].args_match[0].value",
        "message": "not a valid CIDR",
    }


def test_a_file_that_is_not_json_is_invalid_input_with_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "policy.json", '{"name": "p",\n  "rules": [1,]}')
    assert main(["firewall", "validate", path]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"stalwart: error: `{path}` is not valid JSON: expecting value at line 2 column 15\n"
    )


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "no such file"),
        (b"\xff\xfe", "not UTF-8 text"),
        ("NaN", "`NaN` is not a JSON number"),
    ],
)
def test_unreadable_input_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Any, fragment: str
) -> None:
    path = tmp_path / "policy.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert main(["firewall", "validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and fragment in err


def test_check_prints_the_decision_and_exits_1_when_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = write(tmp_path, "policy.json", VALID)
    call = write(
        tmp_path, "call.json", {"tool": "shell.exec", "arguments": {"command": "rm -rf /"}}
    )
    assert main(["firewall", "check", "--policy", policy, "--call", call]) == 1
    decision = json.loads(capsys.readouterr().out)
    assert (decision["verdict"], decision["decision"], decision["rule"]) == (
        "deny",
        "refuse",
        "no rm -rf",
    )


def test_check_exits_0_when_allowed_and_1_when_held(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = write(tmp_path, "policy.json", VALID)
    allowed = write(tmp_path, "a.json", {"tool": "shell.exec", "arguments": {"command": "ls"}})
    held = write(tmp_path, "h.json", {"tool": "ci.deploy"})
    assert main(["firewall", "check", "--policy", policy, "--call", allowed]) == 0
    assert json.loads(capsys.readouterr().out)["rule"] is None
    assert main(["firewall", "check", "--policy", policy, "--call", held]) == 1
    assert json.loads(capsys.readouterr().out)["decision"] == "confirm"


def test_check_reads_the_call_from_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = write(tmp_path, "policy.json", VALID)
    call = {"tool": "http.get", "destination": "http://0xA9FEA9FE/latest"}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(call)))
    assert main(["firewall", "check", "--policy", policy, "--call", "-", "--no-resolve"]) == 1
    assert json.loads(capsys.readouterr().out)["rule"] == "ssrf"


def test_check_with_an_invalid_policy_lists_its_problems_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = write(tmp_path, "policy.json", INVALID)
    call = write(tmp_path, "call.json", {"tool": "x"})
    assert main(["firewall", "check", "--policy", policy, "--call", call]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{policy}: rules[0].args_match[0].value: not a valid CIDR" in captured.err
    assert captured.err.endswith(f"stalwart: error: `{policy}` is not a valid policy\n")


def test_a_malformed_call_is_refused_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = write(tmp_path, "policy.json", VALID)
    call = write(tmp_path, "call.json", ["not", "a", "call"])
    assert main(["firewall", "check", "--policy", policy, "--call", call]) == 1
    assert json.loads(capsys.readouterr().out)["reasons"] == [
        "malformed_call: the call is not a JSON object"
    ]


def test_both_inputs_from_stdin_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["firewall", "check", "--policy", "-", "--call", "-"]) == 2
    assert "only one of" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["firewall"],
        ["firewall", "validate"],
        ["firewall", "check", "--policy", "p.json"],
        ["nope"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "usage:" in capsys.readouterr().err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["firewall", "--help"]) == 0
    assert "validate" in capsys.readouterr().out


def test_an_internal_error_exits_2_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(args: Any) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "_firewall_validate", explode)
    path = write(tmp_path, "policy.json", VALID)
    assert main(["firewall", "validate", path]) == 2
    err = capsys.readouterr().err
    assert err == "stalwart: internal error: boom (please report this)\n"
    assert "Traceback" not in err


def test_command_groups_can_be_registered_as_modules(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = type(sys)("stalwart_fake_group")
    module.NAME = "fake"
    module.HELP = "a group added by a module"

    def register(parser: Any) -> None:
        parser.set_defaults(handler=lambda args: 0)

    module.register = register
    monkeypatch.setitem(sys.modules, "stalwart_fake_group", module)
    monkeypatch.setattr(cli, "GROUP_MODULES", ("stalwart_fake_group",))
    assert main(["fake"]) == 0


def test_the_module_runs_as_a_process(tmp_path: Path) -> None:
    policy = write(tmp_path, "policy.json", INVALID)
    result = subprocess.run(
        [sys.executable, "-m", "stalwart_agents", "firewall", "validate", policy],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert (
        result.stdout.splitlines()[0] == f"{policy}: rules[0].args_match[0].value: not a valid CIDR"
    )
    assert result.stderr == ""
