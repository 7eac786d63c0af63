"""Run the gateway benchmark: `python -m benchmarks.gateway [--quick]`."""

from __future__ import annotations

from .run import main

raise SystemExit(main())
