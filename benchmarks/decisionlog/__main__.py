"""Run the decision-log benchmark: `python -m benchmarks.decisionlog [--quick]` (PostgreSQL, Redis)."""

from __future__ import annotations

from .run import main

raise SystemExit(main())
