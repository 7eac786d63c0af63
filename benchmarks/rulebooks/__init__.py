"""Benchmark of the rulebook compiler and its gate: `python -m benchmarks.rulebooks [--quick]`."""
