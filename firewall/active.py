"""The active policy and the organisation's controls, remembered per process while nothing changed.

`POST /v1/firewall/evaluate` needs, for every call, the organisation's active policy (its row and
its published version's key and number) and whether the call's tool is switched off for its agent
or its session held. Read by one statement per call, that read was a fifth of what a decision cost
the console beyond an authenticated no-op. Those rows change a few times a day; a hold or a switch
raised by a sequence alert must still stop the next calls: at once in the process that raised it,
and in the others once Redis delivers its announcement (milliseconds; a call decided in that
gap is decided without it).

So each process keeps, per organisation, the policy row with its published key and number and the
whole set of switched-off tools and held sessions, and answers every call from them while they are
current. Current means all of:

- this process hears every announced change (`console.bundle_changes.mark`: its Redis listener is
  subscribed), and no change of the organisation has been counted since the mark noted before the
  rows were read; every write of these rows announces itself once it commits (the rows' signals,
  and `bundle_changed` where a write goes around them), in this process at once and in every other
  through Redis pub/sub;
- the rows were read less than `STALWART_BUNDLE_RECHECK` seconds ago (1 s), for a change nobody
  announced (a row written by hand, a publish to a Redis that was down);
- the call is not inside a transaction of its caller's (which may hold writes of its own, not yet
  announced).

Anything else reads the rows again: two statements (the policy, then the controls), so a decision
stays within three with its event. An organisation with more than `MAX_CONTROLS` switches and
holds outstanding keeps its controls in the database and reads them per call, as before.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from django.db import connection

from console import bundle_changes
from console.controls import Kept, kept_sql
from console.statements import ModelRows, cursor, unchecked
from firewall.models import Policy, PolicyVersion

#: Switched-off tools and held sessions an organisation may have outstanding and still be kept.
MAX_CONTROLS = 4096
#: Organisations kept per process (the least recently used is dropped past it).
MAX_ORGANISATIONS = 1024

#: The policy's fields read with it: all of them, so nothing is deferred.
POLICY_ROW = ModelRows(Policy, tuple(field.name for field in Policy._meta.concrete_fields))


@dataclass(frozen=True)
class Active:
    """An organisation's active policy (None: it has none) and its outstanding controls.

    `policy` carries `published_key` and `published_number`; it is shared by every call that
    reads it, so nothing may change it. `controls` are the switches and holds in force
    (`console.controls.Kept`), None when there were too many to keep."""

    policy: Policy | None
    controls: Kept | None

    def flags(self, call: dict[str, Any]) -> tuple[bool, bool] | None:
        """The call's (tool switched off, session held); None when the controls were not kept."""
        if self.controls is None:
            return None
        return self.controls.flags(
            agent=str(call.get("agent", "")),
            tool=str(call.get("tool", "")),
            session=str(call.get("session", "")),
        )


_lock = threading.Lock()
_kept: OrderedDict[int, tuple[tuple[int, int], float, Active]] = OrderedDict()


@functools.cache
def _statements(vendor: str) -> tuple[str, str]:
    """The two reads of a miss, written out once per database vendor: the policy, the controls."""
    policy = (
        f"SELECT {POLICY_ROW.columns(connection, 'p')}, v.key, v.number "
        f"FROM {Policy._meta.db_table} p "
        f"LEFT JOIN {PolicyVersion._meta.db_table} v ON v.id = p.published_id "
        f"WHERE p.organisation_id = %s AND p.active LIMIT 1"
    )
    return policy, kept_sql(MAX_CONTROLS + 1)


def _read(organisation_id: int) -> Active:
    """The organisation's rows as they are now: two statements."""
    policy_sql, controls_sql = _statements(connection.vendor)

    def read() -> Active:
        with cursor() as rows:
            rows.execute(policy_sql, [organisation_id])
            row = rows.fetchone()
            rows.execute(controls_sql, [organisation_id, organisation_id])
            controls = rows.fetchall()
        policy = None
        if row is not None:
            policy = POLICY_ROW.instance(row[: len(POLICY_ROW)], connection)
            policy.published_key, policy.published_number = row[len(POLICY_ROW) :]
        if len(controls) > MAX_CONTROLS:
            return Active(policy, None)
        return Active(policy, Kept.of(controls))

    return unchecked(read)


def active(organisation_id: int) -> Active | None:
    """The organisation's active policy and controls, from what this process kept while they are
    current (the module's docstring), else read again and kept; None where nothing may be kept
    (this process does not hear every change, or the caller is inside a transaction)."""
    if connection.in_atomic_block:
        return None
    mark = bundle_changes.mark(organisation_id)
    if mark is None:
        return None
    now = time.monotonic()
    with _lock:
        kept = _kept.get(organisation_id)
        if kept is not None and kept[0] == mark and now - kept[1] < bundle_changes.recheck_every():
            _kept.move_to_end(organisation_id)
            return kept[2]
    found = _read(organisation_id)
    with _lock:
        _kept[organisation_id] = (mark, now, found)
        _kept.move_to_end(organisation_id)
        while len(_kept) > MAX_ORGANISATIONS:
            _kept.popitem(last=False)
    return found


def forget() -> None:
    """Drop everything kept (tests)."""
    with _lock:
        _kept.clear()
