"""Run the rulebook benchmark: `python -m benchmarks.rulebooks [--quick] [--json FILE]`."""

from __future__ import annotations

from .run import main

raise SystemExit(main())
