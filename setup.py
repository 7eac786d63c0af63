"""Build hook: the console's site-wide `templates/`, `static/` and the shop example travel in the wheel.

They live at the top of the checkout (Django's project-level folders, and `examples/shop/`, which
the Try a turn page and `seed_demo` read), outside any package, so setuptools' package data cannot
name them; this copies them into `console/site/` of the built package, where
`console.settings.base` looks first (`SITE_DIR`). An editable install reads them in place.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SITE_FOLDERS = ("templates", "static", "examples/shop")


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for name in SITE_FOLDERS:
            source = Path(name)
            if not source.is_dir():
                raise SystemExit(
                    f"the `{name}` folder is missing: the console cannot serve without it"
                )
            self.copy_tree(str(source), str(Path(self.build_lib) / "console" / "site" / name))


setup(cmdclass={"build_py": BuildPy})
