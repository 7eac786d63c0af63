"""The requirements files repeat pyproject.toml's pins: one answer for what the package needs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def _name(requirement: str) -> str:
    return re.split(r"[\[=<>!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _pins(lines: list[str]) -> dict[str, str]:
    return {_name(line): line.strip() for line in lines}


def _file(name: str) -> dict[str, str]:
    lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
    return _pins([line for line in lines if line.strip() and not line.startswith(("#", "-r"))])


PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS = PROJECT["optional-dependencies"]


def test_every_dependency_is_pinned_exactly():
    for requirement in PROJECT["dependencies"] + [r for e in EXTRAS.values() for r in e]:
        assert "==" in requirement, f"`{requirement}` is not pinned with =="


def test_requirements_txt_is_the_core_and_the_console_extra():
    assert _file("requirements.txt") == _pins(PROJECT["dependencies"] + EXTRAS["console"])


INTEGRATIONS = ("langgraph", "openai-agents", "gateway", "models", "documents", "bundles")


def test_requirements_dev_txt_is_the_otel_dev_and_integration_extras():
    wanted = EXTRAS["otel"] + EXTRAS["dev"] + [r for name in INTEGRATIONS for r in EXTRAS[name]]
    assert _file("requirements-dev.txt") == _pins(wanted)


def test_the_engines_and_the_sdk_need_no_console_package():
    core = {_name(r) for r in PROJECT["dependencies"]}
    assert not core & {"django", "djangorestframework", "celery", "redis", "gunicorn"}


def test_only_extras_for_code_that_exists_are_declared():
    assert set(EXTRAS) == {"console", "otel", "dev", *INTEGRATIONS}
