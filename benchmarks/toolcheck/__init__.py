"""Benchmark of the tool check: latency per call and how it grows with the session history."""
