"""Run the firewall benchmark: `python -m benchmarks.firewall [--quick] [--json FILE]`."""

from __future__ import annotations

from .run import main

raise SystemExit(main())
