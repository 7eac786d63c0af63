"""Celery tasks of the console's own app: the health ping a worker answers."""

from __future__ import annotations

import datetime as dt
import socket

from celery import shared_task
from django.utils import timezone


@shared_task(name="console.health_ping", ignore_result=True)
def health_ping(nonce: str) -> None:
    from console.models import WorkerPing

    WorkerPing.objects.get_or_create(nonce=nonce, defaults={"hostname": socket.gethostname()})
    WorkerPing.objects.filter(at__lt=timezone.now() - dt.timedelta(hours=1)).delete()
