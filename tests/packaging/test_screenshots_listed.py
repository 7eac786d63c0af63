"""The README's console screenshots are the pages `make screenshots` takes, each one on disk."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_page_make_screenshots_takes_is_in_the_readme_and_on_disk():
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "scripts/screenshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    taken = [stem for stem, _, _ in module.PAGES]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| ([a-z-]+) \| !\[", readme, flags=re.M)
    assert listed == taken
    for stem in taken:
        for size in ("desktop", "phone"):
            assert (ROOT / "docs" / "screenshots" / f"{stem}-{size}.png").is_file(), (stem, size)
