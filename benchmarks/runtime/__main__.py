"""Run the runtime benchmark: `python -m benchmarks.runtime [--quick]` (PostgreSQL and Redis needed)."""

from __future__ import annotations

from .run import main

raise SystemExit(main())
