"""Run the sandbox benchmark: `python -m benchmarks.sandbox [--quick]`."""

from __future__ import annotations

from .run import main

raise SystemExit(main())
