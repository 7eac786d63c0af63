"""The audit chain: how a row's hash is made, how a row is appended, and how a chain is verified.

Each organisation has its own chain. A row's hash is SHA-256 over the canonical JSON of its content
and the previous row's hash, so editing, removing or reordering a row behind the ORM's back breaks
every hash after it; `verify_chain` names the first row where the chain no longer holds.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone

from console.models import AuditRow, Organisation
from console.redaction import redact

GENESIS = "0" * 64
REDACTED_CHANGE = {"redacted": True}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def row_hash(
    *,
    organisation_id: int,
    seq: int,
    at: str,
    actor: str,
    actor_id: int | None,
    action: str,
    object_type: str,
    object_id: str,
    changes: Any,
    prev_hash: str,
) -> str:
    content = {
        "organisation": organisation_id,
        "seq": seq,
        "at": at,
        "actor": actor,
        "actor_id": actor_id,
        "action": action,
        "object_type": object_type,
        "object_id": object_id,
        "changes": changes,
        "prev": prev_hash,
    }
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _hash_of(row: AuditRow) -> str:
    return row_hash(
        organisation_id=row.organisation_id,
        seq=row.seq,
        at=row.at.isoformat(),
        actor=row.actor,
        actor_id=row.actor_id,
        action=row.action,
        object_type=row.object_type,
        object_id=row.object_id,
        changes=row.changes,
        prev_hash=row.prev_hash,
    )


def field_changes(
    old: dict[str, Any], new: dict[str, Any], *, hidden: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The fields whose values differ, old and new; hidden fields (blobs, secrets) are named only."""
    changes: dict[str, Any] = {}
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name), new.get(name)
        if _jsonable(before) == _jsonable(after):
            continue
        changes[name] = (
            dict(REDACTED_CHANGE)
            if name in hidden
            else {
                "old": _jsonable(before),
                "new": _jsonable(after),
            }
        )
    return changes


def append(
    *,
    organisation: Organisation,
    actor_label: str,
    actor_id: int | None,
    action: str,
    object_type: str,
    object_id: str,
    changes: dict[str, Any],
) -> AuditRow:
    """Append a row to the organisation's chain, inside the caller's transaction.

    The organisation row is locked first, so two writers never both extend the same head.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError(
            "audit rows are written inside the transaction of the change they record"
        )
    Organisation.objects.select_for_update().only("pk").get(pk=organisation.pk)
    head = AuditRow.objects.filter(organisation=organisation).order_by("-seq").first()
    seq = head.seq + 1 if head else 1
    prev = head.hash if head else GENESIS
    at = timezone.now()
    row = AuditRow(
        organisation=organisation,
        seq=seq,
        at=at,
        actor=actor_label,
        actor_id=actor_id,
        action=action,
        object_type=object_type,
        object_id=str(object_id),
        changes=_jsonable(redact(changes)),
        prev_hash=prev,
    )
    row.hash = _hash_of(row)
    row.save()
    return row


@dataclass(frozen=True)
class ChainBreak:
    organisation: str
    seq: int
    row_id: int | None
    problem: str

    def __str__(self) -> str:
        where = f"row {self.row_id}" if self.row_id is not None else "a missing row"
        return f"audit chain of `{self.organisation}` broken at seq {self.seq} ({where}): {self.problem}"


def verify_chain(organisation: Organisation) -> ChainBreak | None:
    """The first place where the organisation's chain does not hold, or None when all of it does."""
    prev = GENESIS
    expected_seq = 1
    for row in AuditRow.objects.filter(organisation=organisation).order_by("seq").iterator():
        if row.seq != expected_seq:
            return ChainBreak(
                organisation.slug,
                expected_seq,
                None,
                f"seq {expected_seq} is missing (next is {row.seq})",
            )
        if row.prev_hash != prev:
            return ChainBreak(
                organisation.slug,
                row.seq,
                row.pk,
                "its previous hash does not match the row before it",
            )
        if _hash_of(row) != row.hash:
            return ChainBreak(
                organisation.slug, row.seq, row.pk, "its hash does not match its content"
            )
        prev = row.hash
        expected_seq += 1
    return None
