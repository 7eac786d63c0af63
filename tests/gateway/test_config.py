"""gateway.yaml: strict, bounded, every problem named by key path and line; secrets never shown."""

from __future__ import annotations

import pytest

from stalwart_agents import cli
from stalwart_agents.gateway.config import (
    GatewayConfigInvalid,
    MissingVariable,
    load_config,
    resolve,
)

GOOD = """\
agent: desk
servers:
  fs:
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", /srv/shared]
    tools:
      write_file: {after: [read_file], at_most: 3, free_text: [content]}
  github:
    url: https://mcp.example.org/mcp
    headers: {Authorization: "Bearer ${GITHUB_TOKEN}"}
    reads_outside: [github]
"""


def write(tmp_path, text: str):  # noqa: ANN001, ANN201
    path = tmp_path / "gateway.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def problems(tmp_path, text: str) -> list[str]:  # noqa: ANN001
    with pytest.raises(GatewayConfigInvalid) as caught:
        load_config(write(tmp_path, text))
    return [problem.render("gateway.yaml") for problem in caught.value.problems]


def test_a_good_file_loads_with_its_marks_and_defaults(tmp_path) -> None:  # noqa: ANN001
    config = load_config(write(tmp_path, GOOD))
    assert config.agent == "desk"
    assert config.servers["fs"].transport == "stdio"
    assert config.servers["fs"].tools["write_file"].after == ("read_file",)
    assert config.servers["fs"].tools["write_file"].free_text == ("content",)
    assert config.servers["github"].reads_outside == ("github",)
    assert config.pins == (tmp_path / "gateway.pins.json").resolve()


def test_every_problem_is_named_by_key_path_and_line(tmp_path) -> None:  # noqa: ANN001
    found = problems(
        tmp_path,
        "agent: desk\n"
        "colour: blue\n"
        "servers:\n"
        "  shop:\n"
        "    command: python\n"
        "    url: https://example.org/mcp\n"
        "  web:\n"
        "    url: ftp://example.org\n"
        "    tools:\n"
        "      fetch: {kind: maybe, at_most: -1, colour: red}\n"
        "  Bad.Name:\n"
        "    command: x\n",
    )
    assert "gateway.yaml:2: colour: is not a section of gateway.yaml" in found
    assert "gateway.yaml:4: servers.shop: give one of `command` and `url`, not both" in found
    assert (
        "gateway.yaml:8: servers.web.url: must be an http(s) URL, not `ftp://example.org`" in found
    )
    assert any(
        p.startswith("gateway.yaml:10: servers.web.tools.fetch.kind: must be") for p in found
    )
    assert any("servers.web.tools.fetch.at_most" in p for p in found)
    assert "gateway.yaml:10: servers.web.tools.fetch.colour: is not a mark of a tool" in found
    assert any(
        p.startswith("gateway.yaml:11: servers.Bad.Name: is not a usable server name")
        for p in found
    )


def test_headers_come_from_the_environment_and_a_missing_one_names_no_value() -> None:
    headers = {"Authorization": "Bearer ${GITHUB_TOKEN}"}
    assert resolve(headers, {"GITHUB_TOKEN": "ghp_s3cret"}, "servers.github.headers") == {
        "Authorization": "Bearer ghp_s3cret"
    }
    with pytest.raises(MissingVariable) as caught:
        resolve(headers, {}, "servers.github.headers")
    assert str(caught.value) == (
        "servers.github.headers.Authorization: the environment variable `GITHUB_TOKEN` is not set"
    )


def test_a_file_that_is_not_yaml_or_too_large_is_refused(tmp_path) -> None:  # noqa: ANN001
    assert problems(tmp_path, "servers: [unclosed\n")[0].startswith("gateway.yaml:")
    assert "is not valid YAML" in problems(tmp_path, "servers: [unclosed\n")[0]
    huge = "servers:\n" + "".join(f"  s{i}:\n    command: x\n" for i in range(65))
    assert problems(tmp_path, huge) == ["gateway.yaml:1: servers: names more than 64 servers"]
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(20)
    )
    assert "is not valid YAML" in problems(tmp_path, bomb)[0]


def test_the_command_exits_1_naming_every_problem_and_never_a_traceback(tmp_path, capsys) -> None:  # noqa: ANN001
    path = write(tmp_path, "servers:\n  shop: {command: python, port: 3}\n")
    assert cli.main(["gateway", "--config", str(path)]) == 1
    err = capsys.readouterr().err
    assert "servers.shop.port: is not a field of a server" in err
    assert "Traceback" not in err


def test_the_command_without_a_config_is_a_usage_error(capsys) -> None:  # noqa: ANN001
    assert cli.main(["gateway"]) == 2
    assert "--config" in capsys.readouterr().err
    assert cli.main(["gateway", "--config", "nowhere.yaml"]) == 1


def test_http_needs_a_port_and_a_port_needs_http(tmp_path, capsys) -> None:  # noqa: ANN001
    path = write(tmp_path, GOOD)
    assert cli.main(["gateway", "--config", str(path), "--http"]) == 2
    assert "give --port with --http" in capsys.readouterr().err
    assert cli.main(["gateway", "--config", str(path), "--port", "8765"]) == 2
    assert "--port is for --http" in capsys.readouterr().err


def test_http_needs_a_bearer_token_from_a_named_variable_and_binds_loopback(
    tmp_path, capsys, monkeypatch
) -> None:  # noqa: ANN001
    import argparse

    from stalwart_agents import cli_gateway

    path = write(tmp_path, GOOD)
    serve = ["gateway", "--config", str(path), "--http", "--port", "1"]
    assert cli.main(serve) == 2
    assert "--http needs a bearer token" in capsys.readouterr().err
    monkeypatch.delenv("GW_TEST_TOKEN", raising=False)
    assert cli.main([*serve, "--token-env", "GW_TEST_TOKEN"]) == 1
    assert "`GW_TEST_TOKEN` holds no bearer token" in capsys.readouterr().err
    assert cli.main(["gateway", "--config", str(path), "--token-env", "X"]) == 2
    bad = write(tmp_path, GOOD.replace("servers:", "http_token_env: 'not a name'\nservers:", 1))
    assert cli.main(["gateway", "--config", str(bad), "--http", "--port", "1"]) == 1
    assert "http_token_env: must name an environment variable" in capsys.readouterr().err
    parser = argparse.ArgumentParser()
    cli_gateway.register(parser)
    assert parser.parse_args(["--http", "--port", "1"]).host == "127.0.0.1"


def test_turns_console_and_rulebook_default_off_and_are_read_strictly(tmp_path) -> None:  # noqa: ANN001
    config = load_config(write(tmp_path, GOOD))
    assert (config.turns, config.decide, config.bundle_key_env, config.rulebook) == (
        "off",
        None,
        None,
        None,
    )
    (tmp_path / "rules.csv").write_text("tool,condition,decision\n", encoding="utf-8")
    config = load_config(
        write(
            tmp_path,
            "turns: from_client\nrulebook: ./rules.csv\n"
            "console: {decide: local, bundle_key_env: GW_KEY}\n" + GOOD,
        )
    )
    assert (config.turns, config.decide, config.bundle_key_env) == (
        "from_client",
        "local",
        "GW_KEY",
    )
    assert config.rulebook == (tmp_path / "rules.csv").resolve()
    assert load_config(write(tmp_path, "turns: off\n" + GOOD)).turns == "off"
    found = problems(
        tmp_path,
        "turns: always\nrulebook: ./nowhere.co\n"
        "console: {decide: maybe, bundle_key_env: 'not a name', url: x}\n" + GOOD,
    )
    assert "gateway.yaml:1: turns: must be `off` or `from_client`, not `always`" in found
    assert "gateway.yaml:2: rulebook: the rulebook `./nowhere.co` does not exist" in found
    assert "gateway.yaml:3: console.decide: must be `console` or `local`, not `maybe`" in found
    assert any(p.startswith("gateway.yaml:3: console.bundle_key_env: must name") for p in found)
    assert "gateway.yaml:3: console.url: is not a field of the console section" in found


def test_new_resources_is_withhold_or_allow_and_a_bad_value_is_named_by_its_path(
    tmp_path,  # noqa: ANN001
) -> None:
    found = problems(tmp_path, "servers:\n  shop:\n    command: python\n    new_resources: yes\n")
    assert found == [
        "gateway.yaml:4: servers.shop.new_resources: must be `withhold` or `allow`, not `True`"
    ]
    assert load_config(write(tmp_path, GOOD)).servers["fs"].new_resources == "withhold"
    allowing = GOOD.replace("    reads_outside: [github]\n", "    new_resources: allow\n")
    assert load_config(write(tmp_path, allowing)).servers["github"].new_resources == "allow"
