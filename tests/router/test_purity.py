"""The router engine is pure: no Django, DRF, Celery, Redis, console or I/O library import."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "router" / "engine"
FORBIDDEN = {
    "django", "rest_framework", "celery", "redis", "django_htmx", "console", "requests",
    "httpx", "urllib.request", "socket", "subprocess", "sqlite3", "pathlib",
}  # fmt: skip


def imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_engine_module_imports_django_or_io():
    for path in sorted(ENGINE.glob("*.py")):
        for name in imported(path):
            root = name.split(".")[0]
            assert root not in FORBIDDEN and name not in FORBIDDEN, f"{path.name} imports {name}"


def test_every_engine_module_says_what_it_is_for_and_uses_future_annotations():
    for path in sorted(ENGINE.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        assert ast.get_docstring(tree), path.name
        assert "from __future__ import annotations" in text, path.name
