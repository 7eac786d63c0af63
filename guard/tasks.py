"""Celery tasks of the guard: reconciling the secondary steps of PARTIAL writes.

The steps live in the database outbox (`PendingStep`), so a broker outage delays them and loses
nothing: the beat runs `guard.reconcile` periodically, and an executor that left a step pending
asks for a run at once. The task is idempotent (each step is locked while it runs, and a step done
is never run again) and acknowledged late.
"""

from __future__ import annotations

import logging

from celery import shared_task

log = logging.getLogger(__name__)


@shared_task(name="guard.reconcile", acks_late=True, ignore_result=True)
def reconcile() -> int:
    from guard.executor import reconcile_pending

    return reconcile_pending()


@shared_task(name="guard.expire_checked", ignore_result=True)
def expire_checked() -> int:
    """The writes `/check` allowed that were never reported, once their token lifetime passed."""
    from django.utils import timezone

    from guard.running import let_expired_go

    return let_expired_go(now=timezone.now())


def reconcile_soon() -> None:
    """Ask a worker to reconcile now; when the broker is down the beat's run takes over."""
    from console.celery import app

    try:
        app.send_task("guard.reconcile", countdown=1)
    except Exception:  # noqa: BLE001 - the periodic run finds the step in the outbox
        log.warning("could not ask for a reconciliation; the periodic run will")
