"""Run the framework doors' benchmark: `python -m benchmarks.frameworks [--quick]`."""

from __future__ import annotations

from .run import main

raise SystemExit(main())
