"""Run the router benchmark: `python -m benchmarks.router [--quick]`."""

from __future__ import annotations

from .run import main

raise SystemExit(main())
