"""Celery tasks of the proof: prove a job, and sweep for jobs to send again or to retry.

Both take ids and call one service; both may run twice (acks late, redelivery after a worker is
lost), and the services make that harmless: a finished job or one under a live lease is left
alone.
"""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from proof import services


@shared_task(
    name="proof.run_job",
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def run_job(job_id: int) -> str:
    return services.proof_job_run(job_id=int(job_id))


@shared_task(name="proof.sweep", acks_late=True)
def sweep() -> dict[str, list[int]]:
    """Queued jobs no worker took are sent again; lapsed leases are retried or end `error`."""
    return services.proof_jobs_sweep()
