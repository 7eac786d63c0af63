"""The command line reads at most `MAX_INPUT_BYTES` of any file it is given (a call, a policy, an
agent file): a larger one, or a device that never ends, is refused naming the file, exiting as the
command does for a file it cannot read."""

from __future__ import annotations

from pathlib import Path

import pytest

from stalwart_agents import cli

SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop" / "agent.yaml"
LIMIT = 4096


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setattr(cli, "MAX_INPUT_BYTES", LIMIT, raising=False)


def padded(path: Path, text: str) -> Path:
    """`text` with spaces after it, past the limit: valid content, only too large."""
    path.write_text(text + " " * (LIMIT + 10), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["firewall", "validate", "{big}"],
        ["check", "--agent", str(SHOP), "--agent-name", "desk", "--call", "{big}"],
        ["verify", "{yaml}"],
        ["plan", "--agent", "{yaml}", "look up 4411"],
        ["check", "--agent", "{yaml}", "--agent-name", "desk", "--call", "{call}"],
    ],
    ids=["firewall-policy", "check-call", "verify-agent", "plan-agent", "check-agent"],
)
def test_a_file_past_the_limit_is_refused_naming_it(tmp_path, capsys, small_limit, argv):
    big = padded(tmp_path / "big.json", '{"name": "p", "rules": []}')
    yaml = padded(tmp_path / "agent.yaml", SHOP.read_text(encoding="utf-8"))
    call = tmp_path / "call.json"
    call.write_text('{"tool": "get_order", "arguments": {"order_id": "4411"}}', encoding="utf-8")
    named = {"big": big, "yaml": yaml, "call": call}
    code = cli.main([part.format(**named) for part in argv])
    _, err = capsys.readouterr()
    # Exit as each command exits for a file it cannot read (verify: 2, the others: 1).
    assert code == (2 if argv[0] == "verify" else 1), err
    assert f"larger than {LIMIT:,} bytes" in err, err
    assert "internal error" not in err and "Traceback" not in err


def test_a_device_that_never_ends_is_refused(capsys):
    code = cli.main(["firewall", "validate", "/dev/zero"])
    _, err = capsys.readouterr()
    assert code == 1
    assert "/dev/zero" in err and "larger than" in err
