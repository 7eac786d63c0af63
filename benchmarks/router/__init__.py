"""Benchmark of the router: turns read into plans per second, with a 200-tool catalogue."""
