"""Run the proof benchmark: `python -m benchmarks.proof [--quick]`."""

from __future__ import annotations

from .run import main

raise SystemExit(main())
