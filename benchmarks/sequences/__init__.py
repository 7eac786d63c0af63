"""Benchmark of sequence matching on workers: throughput per worker process, and alert delay."""
