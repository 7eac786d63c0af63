"""The proof's Django app: graph-proof jobs proved on Celery workers, their API and the Proofs page."""

from __future__ import annotations

from django.apps import AppConfig


class ProofConfig(AppConfig):
    name = "proof"
    verbose_name = "Proofs"
