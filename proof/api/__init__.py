"""The proofs' API under /v1/: submit a graph-proof job, follow it, download its report."""
