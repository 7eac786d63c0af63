"""Run the HTTP benchmark: `python -m benchmarks.http [--quick]` (PostgreSQL and Redis needed)."""

from __future__ import annotations

from .run import main

raise SystemExit(main())
