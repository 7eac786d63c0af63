"""`stalwart console`: hands its arguments on as given, and without the extra says which to install."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from stalwart_agents import cli, cli_console


@pytest.fixture
def without_django(monkeypatch):
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        return None if name.partition(".")[0] == "django" else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_a_console_command_without_the_extra_names_it_in_one_line_and_exits_2(
    without_django, capsys
):
    assert cli.main(["console", "manage", "migrate"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "pip install 'stalwart[console]'" in err and "Traceback" not in err


def test_a_missing_module_of_an_extra_names_the_extra():
    error = cli.missing_module_error(ModuleNotFoundError("no", name="opentelemetry.sdk"))
    assert "pip install 'stalwart[otel]'" in str(error)


def test_a_missing_core_module_says_to_reinstall():
    error = cli.missing_module_error(ModuleNotFoundError("no", name="yaml"))
    assert "reinstall stalwart" in str(error)


def test_an_import_that_fails_inside_a_command_is_one_line_not_a_traceback(monkeypatch, capsys):
    def broken(arguments):  # noqa: ANN001, ANN202
        raise ModuleNotFoundError("No module named 'yaml'", name="yaml")

    monkeypatch.setitem(cli_console.SUBCOMMANDS, "manage", (broken, "x"))
    assert cli.main(["console", "manage", "check"]) == 2
    assert capsys.readouterr().err.startswith("stalwart: error: `yaml` is not installed")


def test_options_after_a_console_subcommand_are_handed_on_untouched(monkeypatch):
    seen = []
    monkeypatch.setitem(cli_console.SUBCOMMANDS, "serve", (lambda a: seen.append(a) or 0, "x"))
    assert cli.main(["console", "serve", "--bind", "127.0.0.1:9", "--workers", "1"]) == 0
    assert seen == [["--bind", "127.0.0.1:9", "--workers", "1"]]


def test_the_cli_imports_no_django_for_other_commands():
    code = (
        "import sys; from stalwart_agents import cli; cli.build_parser(); "
        "print(sorted(m for m in ('django', 'celery', 'rest_framework') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.django_db
def test_manage_runs_a_management_command(capsys, monkeypatch):
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "console.settings.test")
    assert cli.main(["console", "manage", "check"]) == 0
    assert "no issues" in capsys.readouterr().out
