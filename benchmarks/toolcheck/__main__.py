"""Run the tool-check benchmark: `python -m benchmarks.toolcheck [--quick]`."""

from __future__ import annotations

from .run import main

raise SystemExit(main())
