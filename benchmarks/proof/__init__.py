"""The proof benchmark: time to prove agent graphs of 10 to 1,000+ nodes at depth 60."""
