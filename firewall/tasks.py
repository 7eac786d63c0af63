"""Celery tasks of the firewall: drain the event outbox through the sequence matchers, and sweep it."""

from __future__ import annotations

import datetime as dt

from celery import shared_task
from django.db import OperationalError
from django.utils import timezone

from console.models import Event, MatchState, Notification
from firewall.matching import drain_shard

# A task drains at most this many batches before it hands the shard to the next task.
MAX_BATCHES = 100


@shared_task(
    name="firewall.match_shard",
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=None,
)
def match_shard(shard: int) -> int:
    total = 0
    for _ in range(MAX_BATCHES):
        taken = drain_shard(int(shard))
        total += taken
        if not taken:
            return total
    match_shard.apply_async(args=[shard])
    return total


@shared_task(name="firewall.sweep", acks_late=True)
def sweep() -> list[int]:
    """Send a drain for every shard with pending events, and re-send stuck notifications.

    This is what makes a broker outage cost only delay: events written while no task could be
    sent are found here once the broker answers again.
    """
    shards = sorted(
        set(
            Event.objects.filter(match_state=MatchState.PENDING)
            .values_list("shard", flat=True)
            .distinct()
        )
    )
    for shard in shards:
        match_shard.apply_async(args=[shard])
    stale = timezone.now() - dt.timedelta(seconds=30)
    for pk in Notification.objects.filter(
        status=Notification.Status.PENDING, attempts=0, created_at__lt=stale
    ).values_list("pk", flat=True):
        from console.tasks import deliver_notification

        deliver_notification.apply_async(args=[pk])
    return shards
