"""Celery tasks of the console's own app: the health ping, the worker heartbeat, the embedded
broker's pruning, and signed alert webhooks."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import socket
import urllib.error
import urllib.request

from celery import shared_task
from django.utils import timezone

MAX_ATTEMPTS = 8
TIMEOUT_SECONDS = 5


@shared_task(name="console.health_ping", ignore_result=True)
def health_ping(nonce: str) -> None:
    from console.models import WorkerPing

    WorkerPing.objects.get_or_create(nonce=nonce, defaults={"hostname": socket.gethostname()})
    WorkerPing.objects.filter(at__lt=timezone.now() - dt.timedelta(hours=1)).exclude(
        nonce__startswith=HEARTBEAT_PREFIX
    ).delete()


HEARTBEAT_PREFIX = "heartbeat:"


@shared_task(name="console.worker_heartbeat", ignore_result=True)
def worker_heartbeat() -> None:
    """Sent by the beat every few seconds: the worker that takes it says when it last did."""
    from console.models import WorkerPing

    hostname = socket.gethostname()
    WorkerPing.objects.update_or_create(
        nonce=f"{HEARTBEAT_PREFIX}{hostname}"[:64],
        defaults={"hostname": hostname, "at": timezone.now()},
    )


@shared_task(name="console.broker_prune", ignore_result=True)
def broker_prune() -> int:
    """Remove the embedded broker's delivered messages older than an hour."""
    from pathlib import Path

    from django.conf import settings

    from console.broker import broker_file, prune_delivered

    return prune_delivered(broker_file(Path(settings.VAR_DIR)))


def notification_body(notification) -> bytes:  # noqa: ANN001
    alert = notification.alert
    payload = {
        "delivery": notification.pk,
        "organisation": notification.organisation.slug,
        "alert": {
            "id": alert.pk,
            "at": alert.at.isoformat(),
            "rule": alert.rule,
            "verdict": alert.verdict,
            "agent": alert.agent,
            "session": alert.session,
            "tool": alert.tool,
            "chain": alert.detail.get("chain", []),
            "actions": alert.detail.get("actions", []),
        },
    }
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """HMAC-SHA256 over `timestamp.body`, hex: what `X-Stalwart-Signature` carries."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


@shared_task(name="console.deliver_notification", bind=True, acks_late=True, max_retries=None)
def deliver_notification(self, notification_id: int) -> str:  # noqa: ANN001
    from console.models import Notification

    notification = (
        Notification.objects.select_related("alert", "organisation__settings")
        .filter(pk=notification_id)
        .first()
    )
    if notification is None or notification.status != Notification.Status.PENDING:
        return "nothing to do"
    body = notification_body(notification)
    timestamp = str(int(timezone.now().timestamp()))
    request = urllib.request.Request(
        notification.url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": "stalwart-alerts/1",
            "X-Stalwart-Delivery": str(notification.pk),
            "X-Stalwart-Timestamp": timestamp,
            "X-Stalwart-Signature": sign(
                notification.organisation.settings.notify_secret, timestamp, body
            ),
        },
    )
    code, error = None, ""
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310
            code = response.status
    except urllib.error.HTTPError as exc:
        code, error = exc.code, f"the endpoint answered {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        error = f"the endpoint could not be reached: {type(exc).__name__}"
    attempts = notification.attempts + 1
    fields = {"attempts": attempts, "response_code": code, "last_error": error[:300]}
    if code is not None and 200 <= code < 300:
        Notification.objects.filter(pk=notification.pk).update(
            status=Notification.Status.DELIVERED, delivered_at=timezone.now(), **fields
        )
        return "delivered"
    if attempts >= MAX_ATTEMPTS:
        Notification.objects.filter(pk=notification.pk).update(
            status=Notification.Status.FAILED, **fields
        )
        return "failed"
    Notification.objects.filter(pk=notification.pk).update(**fields)
    raise self.retry(countdown=min(2**attempts, 300))
