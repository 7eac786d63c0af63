"""Benchmarks of decision logs: feed delay, ingest rate, and matcher scale-out (`make bench-decisionlog`)."""
