"""`stalwart init --kind support-desk|erp-work-orders DIR`: a commented agent.yaml and a starter
rulebook, named for the schema, that `stalwart verify` passes; nothing is ever overwritten."""

from __future__ import annotations

import pytest

from stalwart_agents import cli, cli_verify
from stalwart_agents.cli_init import KINDS, schema_path
from stalwart_agents.cli_verify import schema_problems


@pytest.mark.parametrize("kind", KINDS)
def test_a_starter_is_written_and_passes_verify(capsys, tmp_path, kind: str) -> None:
    folder = tmp_path / "new" / kind
    assert cli.main(["init", "--kind", kind, str(folder)]) == 0
    assert f"next: stalwart verify {folder / 'agent.yaml'}" in capsys.readouterr().out
    text = (folder / "agent.yaml").read_text(encoding="utf-8")
    assert text.startswith("# ") and "rulebook: ./policy.co" in text
    assert text.rstrip().endswith(f"$schema={schema_path().resolve().as_uri()}")
    assert schema_problems(text, "agent.yaml") == []
    assert (folder / "policy.co").is_file()
    code = cli_verify.main([str(folder / "agent.yaml"), "--strict"])
    out = capsys.readouterr().out
    assert code == 0 and "Compiled the rulebook policy.co" in out and "Gate: passed." in out


def test_init_never_overwrites_a_file(capsys, tmp_path) -> None:
    (tmp_path / "agent.yaml").write_text("mine\n", encoding="utf-8")
    assert cli.main(["init", "--kind", "support-desk", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "agent.yaml` already exists; nothing was written" in err
    assert (tmp_path / "agent.yaml").read_text(encoding="utf-8") == "mine\n"
    assert not (tmp_path / "policy.co").exists()


def test_an_unknown_kind_is_a_usage_error(capsys, tmp_path) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.build_parser().parse_args(["init", "--kind", "shop", str(tmp_path)])
    assert stopped.value.code == 2
