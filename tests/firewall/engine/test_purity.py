"""The engine stays pure: no framework, broker or network import outside the resolver."""

from __future__ import annotations

import ast
from pathlib import Path

import firewall.engine

ENGINE = Path(firewall.engine.__file__).parent
FORBIDDEN = {"django", "rest_framework", "celery", "redis", "requests", "httpx", "urllib.request"}
NETWORK = {"socket", "concurrent.futures", "threading"}


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_engine_modules_import_no_framework_and_no_network() -> None:
    for path in sorted(ENGINE.glob("*.py")):
        modules = imported_modules(path)
        roots = {name.split(".")[0] for name in modules}
        assert not roots & {name.split(".")[0] for name in FORBIDDEN - {"urllib.request"}}, path
        assert "urllib.request" not in modules, path
        if path.name != "resolver.py":
            assert not modules & NETWORK, path


def test_every_engine_module_says_what_it_is_for() -> None:
    for path in sorted(ENGINE.glob("*.py")):
        docstring = ast.get_docstring(ast.parse(path.read_text()))
        assert docstring and docstring.splitlines()[0].strip(), path
