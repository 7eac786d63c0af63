"""Announcing that an organisation's rows changed: Redis pub/sub, with a periodic re-check.

Every change that alters an organisation's bundle (a hold, a tool switch, a write switch, a
published or activated firewall version, the settings, a rulebook record, a rotated key), or the
active policy's row (its name, its draft), calls `bundle_changed(organisation_id)`. Once its
transaction commits, that counts the change in this process at once and publishes the
organisation's id, with the process's own tag, on one Redis channel; every console process
listens on it from one background thread and counts what it hears from the others the same way.

Two readers use the counts:

- A bundle long-poll (`wait_for_change`) notes the count before it reads the bundle, then sleeps
  until the count moves or its re-check interval passes, whichever comes first, and reads the
  bundle again. A change is never missed between the read and the sleep (the count was noted
  first), and a change nobody announced (a row written by hand) is seen at the next re-check.
- What a process keeps of an organisation's active policy and controls (`firewall.active`) is
  current while `mark` gives what it gave before the rows were read. `mark` also moves when the
  listener subscribes again (what was published meanwhile was never heard) and is None while it
  is not subscribed, so nothing is kept then.

Redis down, or not configured (`make run`): nothing is published or heard from other processes,
changes made in this process still wake its long-polls, every long-poll re-checks each
`STALWART_BUNDLE_RECHECK` seconds, and nothing is kept; nothing fails. The listener reconnects by
itself.

The channel's name carries the Redis database number, since pub/sub channels are shared by every
database of one server (two deployments on one Redis would otherwise wake each other).

`poll_slot()` bounds how many long-polls wait at once in this process
(`STALWART_BUNDLE_MAX_POLLS`): each holds a web thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading
import time
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)

#: Seconds between two re-checks of a waiting long-poll (the safety net; `STALWART_BUNDLE_RECHECK`).
RECHECK = 1.0
#: Seconds the listener waits before it connects again after Redis failed (doubling to the last).
RECONNECT = (0.5, 1.0, 2.0, 5.0)

_lock = threading.Condition()
_counts: dict[int, int] = {}
_listener: threading.Thread | None = None
_listening = threading.Event()  # set while the listener is subscribed
_epoch = 0  # moves each time the listener subscribes or loses its subscription
_active = 0  # long-polls waiting in this process


_publishers: dict[str, Any] = {}


def _redis(*, shared: bool = False) -> Any | None:
    """A Redis client of `REDIS_URL` (None without one); `shared` gives the one this process
    publishes with (its pool keeps the connection), else a new one (the listener's own)."""
    url = getattr(settings, "REDIS_URL", "")
    if not url:
        return None
    import redis

    if shared and url in _publishers:
        return _publishers[url]
    # The listener names itself (`CLIENT LIST` shows which process listens).
    named = {} if shared else {"client_name": f"stalwart-changes-{os.getpid()}"}
    client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=1, **named)
    if shared:
        _publishers[url] = client
    return client


def channel(client: Any) -> str:
    db = client.connection_pool.connection_kwargs.get("db", 0)
    return f"stalwart:{db}:bundle-changed"


def recheck_every() -> float:
    return max(0.05, float(getattr(settings, "STALWART_BUNDLE_RECHECK", RECHECK)))


def _count(organisation_id: int) -> None:
    with _lock:
        _counts[organisation_id] = _counts.get(organisation_id, 0) + 1
        _lock.notify_all()


#: After a publish failed, this process does not try again for this many seconds: a Redis that
#: does not answer must not hold every commit that changes a bundle for its connect timeout.
QUIET_AFTER_FAILURE = 5.0
_quiet_until = 0.0


_origins: dict[int, str] = {}


def _origin() -> str:
    """This process's tag on what it publishes (a forked process has its own)."""
    pid = os.getpid()
    if pid not in _origins:
        _origins[pid] = secrets.token_hex(8)
    return _origins[pid]


def _announce(organisation_id: int) -> None:
    global _quiet_until
    _count(organisation_id)
    if time.monotonic() < _quiet_until:
        return  # Redis failed a moment ago: the other processes' re-checks see this change
    try:
        client = _redis(shared=True)
        if client is not None:
            client.publish(channel(client), f"{organisation_id} {_origin()}")
    except Exception as exc:  # noqa: BLE001 - Redis down: the other processes re-check instead
        _quiet_until = time.monotonic() + QUIET_AFTER_FAILURE
        log.warning("bundle change not published (long-polls fall back to re-checks): %s", exc)


def bundle_changed(organisation_id: int) -> None:
    """Announce that the organisation's bundle changed, once the current transaction commits."""
    transaction.on_commit(lambda: _announce(int(organisation_id)))


def _listen() -> None:
    failures = 0
    while True:
        client = None
        try:
            client = _redis()
            if client is None:
                return
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            pubsub.subscribe(channel(client))
            _subscribed(True)
            failures = 0
            while True:
                message = pubsub.get_message(timeout=1.0)
                if message is None or message.get("type") != "message":
                    continue
                try:
                    organisation, _, origin = bytes(message["data"]).decode().partition(" ")
                    if origin != _origin():  # this process's own were counted as made
                        _count(int(organisation))
                except (TypeError, ValueError):
                    continue
        except Exception as exc:  # noqa: BLE001 - the listener outlives any Redis failure
            _subscribed(False)
            log.warning("bundle change listener: Redis failed, re-checking meanwhile: %s", exc)
            with contextlib.suppress(Exception):
                if client is not None:
                    client.close()
            time.sleep(RECONNECT[min(failures, len(RECONNECT) - 1)])
            failures += 1


def _subscribed(now: bool) -> None:
    """The listener's subscription began (True) or ended (False): either way, what was counted
    before says nothing of what was published meanwhile (`mark`)."""
    global _epoch
    with _lock:
        _epoch += 1
        if now:
            _listening.set()
        else:
            _listening.clear()


def _ensure_listener() -> None:
    global _listener
    if _listener is not None and _listener.is_alive():
        return
    with _lock:
        if _listener is None or not _listener.is_alive():
            if not getattr(settings, "REDIS_URL", ""):
                return
            # No listener runs (none yet, or this is a forked child of a process that had one):
            # whatever says it listens is not so until this one subscribes.
            _subscribed(False)
            _listener = threading.Thread(
                target=_listen, name="stalwart-bundle-changes", daemon=True
            )
            _listener.start()


def listening() -> bool:
    """Whether this process hears other processes' changes now (Redis subscribed)."""
    return _listening.is_set()


def seen(organisation_id: int) -> int:
    """How many changes of the organisation this process has counted (note it before reading)."""
    _ensure_listener()
    with _lock:
        return _counts.get(organisation_id, 0)


def mark(organisation_id: int) -> tuple[int, int] | None:
    """While this process hears every announced change (its listener subscribed): a mark that
    stays the same until a change of the organisation is counted or the subscription is lost and
    made again; else None. Note it before reading what a change would alter: what was read is
    current while `mark` still gives the same."""
    _ensure_listener()
    with _lock:
        if not _listening.is_set():
            return None
        return _epoch, _counts.get(organisation_id, 0)


def wait_for_change(organisation_id: int, since: int, timeout: float) -> bool:
    """Sleep until a change is counted after `since` (True) or `timeout` seconds pass (False)."""
    deadline = time.monotonic() + max(0.0, timeout)
    with _lock:
        while _counts.get(organisation_id, 0) == since:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _lock.wait(left)
        return True


def max_polls() -> int:
    return max(0, int(getattr(settings, "STALWART_BUNDLE_MAX_POLLS", 2)))


@contextlib.contextmanager
def poll_slot() -> Iterator[bool]:
    """True when this long-poll may wait (fewer than `STALWART_BUNDLE_MAX_POLLS` are waiting in
    this process), else False: then it answers at once."""
    global _active
    with _lock:
        free = _active < max_polls()
        if free:
            _active += 1
    try:
        yield free
    finally:
        if free:
            with _lock:
                _active -= 1
