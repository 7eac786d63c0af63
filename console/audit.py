"""The audit chain: how a row's hash is made, how a row is appended, and how a chain is verified.

Each organisation has its own chain. A row's hash is HMAC-SHA256, under the audit key, of the
canonical JSON of its content and the previous row's hash: editing, removing or reordering a row
behind the ORM's back breaks the chain, and without the key nobody can compute the hashes again.
The chain's head (its length and last hash) is kept outside the rows in a checkpoint signed with
the same key and rewritten in the transaction of every row, so rows cut from the tail (or all of
them) and rows added behind the chain's back disagree with it. `verify_chain` names the first
place where the chain, or its checkpoint, no longer holds.

The key is `STALWART_AUDIT_KEY`, or (unset) an HMAC of `SECRET_KEY`; the database holds neither.
Rows written before the chain was keyed (plain SHA-256) are re-keyed by migration 0002 once their
plain chain has been verified (`rekey_organisation`).
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.utils import timezone

from console.models import AuditCheckpoint, AuditRow, Organisation
from console.redaction import redact

log = logging.getLogger(__name__)

GENESIS = "0" * 64
REDACTED_CHANGE = {"redacted": True}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def audit_key() -> bytes:
    """The key of the chain: `STALWART_AUDIT_KEY`, or one derived from `SECRET_KEY`."""
    configured = getattr(settings, "STALWART_AUDIT_KEY", "")
    if configured:
        return hashlib.sha256(b"stalwart audit key\0" + configured.encode("utf-8")).digest()
    return hmac.new(
        settings.SECRET_KEY.encode("utf-8"), b"stalwart audit chain", hashlib.sha256
    ).digest()


def _canonical(content: dict[str, Any]) -> bytes:
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def row_hash(
    *,
    key: bytes | None = None,
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
    return hmac.new(key or audit_key(), _canonical(content), hashlib.sha256).hexdigest()


def legacy_row_hash(**content: Any) -> str:
    """The hash rows had before the chain was keyed: plain SHA-256 of the same content."""
    content["prev"] = content.pop("prev_hash")
    content["organisation"] = content.pop("organisation_id")
    return hashlib.sha256(_canonical(content)).hexdigest()


def _content(row: Any) -> dict[str, Any]:
    return dict(
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


def _hash_of(row: AuditRow, key: bytes | None = None) -> str:
    return row_hash(key=key, **_content(row))


def checkpoint_signature(
    *, organisation_id: int, length: int, head: str, key: bytes | None = None
) -> str:
    """The signature of a checkpoint: HMAC-SHA256 of the organisation, the length and the head."""
    message = f"stalwart audit checkpoint\0{organisation_id}\0{length}\0{head}".encode()
    return hmac.new(key or audit_key(), message, hashlib.sha256).hexdigest()


def _checkpoint(checkpoint_model: Any, organisation_id: int, length: int, head: str) -> None:
    checkpoint_model.objects.update_or_create(
        organisation_id=organisation_id,
        defaults={
            "length": length,
            "head": head,
            "signature": checkpoint_signature(
                organisation_id=organisation_id, length=length, head=head
            ),
            "at": timezone.now(),
        },
    )


def anchor_new_organisation(organisation: Organisation) -> None:
    """The checkpoint of an empty chain, written when the organisation is created: a chain whose
    checkpoint is gone then reads as tampered with, not as a chain that never had rows."""
    _checkpoint(AuditCheckpoint, organisation.pk, 0, GENESIS)


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
    _checkpoint(AuditCheckpoint, organisation.pk, seq, row.hash)
    if anchor_file() is not None:
        anchor = {"organisation": organisation.pk, "slug": organisation.slug, "length": seq}
        transaction.on_commit(lambda: write_anchor(**anchor, head=row.hash))
    return row


# -- anchors outside the database ----------------------------------------------------------------


def anchor_file() -> Path | None:
    """The append-only file of signed anchors (`STALWART_AUDIT_ANCHOR_FILE`), or None when off."""
    configured = getattr(settings, "STALWART_AUDIT_ANCHOR_FILE", None)
    return Path(configured) if configured else None


def _database() -> str:
    """Which database the anchors are of, so that a file shared by two databases keeps apart."""
    return f"{connection.vendor}:{connection.settings_dict['NAME']}"


def _anchor_signature(database: str, organisation: int, length: int, head: str) -> str:
    message = f"stalwart audit anchor\0{database}\0{organisation}\0{length}\0{head}".encode()
    return hmac.new(audit_key(), message, hashlib.sha256).hexdigest()


def write_anchor(*, organisation: int, slug: str, length: int, head: str) -> None:
    """Append a signed anchor (the chain held `length` rows ending in `head`) once the row that
    made it so has committed. A file that cannot be written loses an anchor, never a change."""
    path = anchor_file()
    if path is None:
        return
    database = _database()
    line = json.dumps(
        {
            "database": database,
            "organisation": organisation,
            "slug": slug,
            "length": length,
            "head": head,
            "signature": _anchor_signature(database, organisation, length, head),
        },
        sort_keys=True,
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as out:
            fcntl.flock(out, fcntl.LOCK_EX)
            out.write(line + "\n")
    except OSError as exc:
        log.warning("could not write the audit anchor to %s: %s", path, exc.strerror)


def read_anchors() -> dict[int, dict[str, Any]]:
    """The longest validly signed anchor of each organisation of this database, from the file."""
    path = anchor_file()
    if path is None or not path.exists():
        return {}
    database = _database()
    best: dict[int, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            try:
                item = json.loads(line)
                fields = (item["organisation"], item["length"], item["head"], item["signature"])
            except (ValueError, KeyError, TypeError):
                continue
            organisation, length, head, signature = fields
            if item.get("database") != database or not isinstance(length, int):
                continue
            expected = _anchor_signature(database, organisation, length, str(head))
            if not hmac.compare_digest(expected, str(signature)):
                continue
            if organisation not in best or length > best[organisation]["length"]:
                best[organisation] = item
    return best


def anchor_break(organisation: Organisation, anchor: dict[str, Any]) -> ChainBreak | None:
    """Whether the chain still holds the row an anchor from outside the database names."""
    length, head = anchor["length"], anchor["head"]
    row = AuditRow.objects.filter(organisation=organisation, seq=length).only("hash").first()
    if row is None or not hmac.compare_digest(row.hash, head):
        return ChainBreak(
            organisation.slug,
            length,
            row.pk if row else None,
            f"the anchor outside the database holds {length} rows ending in another head "
            "(the chain was cut or rewritten, and its checkpoint with it)",
        )
    return None


def missing_organisations(anchors: dict[int, dict[str, Any]]) -> list[ChainBreak]:
    """Organisations the anchors know that the database no longer holds."""
    present = set(Organisation.objects.filter(pk__in=list(anchors)).values_list("pk", flat=True))
    return [
        ChainBreak(
            str(item.get("slug", organisation)),
            1,
            None,
            f"the organisation is gone, and its anchor outside the database holds "
            f"{item['length']} rows",
        )
        for organisation, item in sorted(anchors.items())
        if organisation not in present
    ]


@dataclass(frozen=True)
class ChainBreak:
    organisation: str
    seq: int
    row_id: int | None
    problem: str

    def __str__(self) -> str:
        where = f"row {self.row_id}" if self.row_id is not None else "a missing row"
        return f"audit chain of `{self.organisation}` broken at seq {self.seq} ({where}): {self.problem}"


def verify_chain(
    organisation: Organisation, anchors: dict[int, dict[str, Any]] | None = None
) -> ChainBreak | None:
    """The first place where the organisation's chain does not hold, or None when all of it does:
    every row's keyed hash and link, the signed checkpoint against the chain's length and head,
    then the longest anchor outside the database (`anchors`, read from the file when not given).
    """
    key = audit_key()
    prev = GENESIS
    expected_seq = 1
    last_id = None
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
        if not hmac.compare_digest(_hash_of(row, key), row.hash):
            return ChainBreak(
                organisation.slug, row.seq, row.pk, "its hash does not match its content"
            )
        prev = row.hash
        last_id = row.pk
        expected_seq += 1
    problem = _checkpoint_break(organisation, expected_seq - 1, prev, last_id, key)
    if problem is not None:
        return problem
    anchor = (read_anchors() if anchors is None else anchors).get(organisation.pk)
    return anchor_break(organisation, anchor) if anchor is not None else None


def _rows(first: int, last: int) -> str:
    return f"row {first} is" if first == last else f"rows {first} to {last} are"


def _checkpoint_break(
    organisation: Organisation, length: int, head: str, last_id: int | None, key: bytes
) -> ChainBreak | None:
    checkpoint = AuditCheckpoint.objects.filter(organisation=organisation).first()
    after = length + 1
    if checkpoint is None:
        return ChainBreak(
            organisation.slug,
            after,
            None,
            "the chain has no checkpoint (it was deleted, or the chain was never anchored)",
        )
    signature = checkpoint_signature(
        organisation_id=organisation.pk, length=checkpoint.length, head=checkpoint.head, key=key
    )
    if not hmac.compare_digest(signature, checkpoint.signature):
        return ChainBreak(
            organisation.slug, after, None, "its checkpoint is not signed with the audit key"
        )
    if checkpoint.length > length:
        return ChainBreak(
            organisation.slug,
            after,
            None,
            f"{_rows(after, checkpoint.length)} missing (the signed checkpoint "
            f"holds {checkpoint.length} rows)",
        )
    if checkpoint.length < length:
        return ChainBreak(
            organisation.slug,
            checkpoint.length + 1,
            None,
            f"rows after seq {checkpoint.length} are not in the signed checkpoint "
            f"(added behind the chain's back)",
        )
    if not hmac.compare_digest(checkpoint.head, head):
        return ChainBreak(
            organisation.slug, length, last_id, "the last row is not the one the checkpoint signed"
        )
    return None


def rekey_organisation(row_model: Any, checkpoint_model: Any, organisation_id: int) -> str | None:
    """Re-key an organisation's rows written before the chain was keyed (plain SHA-256), once
    that plain chain is verified, and sign its checkpoint; a plain chain that does not hold is
    left as it is, with no checkpoint, so `audit_verify` names it. Returns that problem, if any.

    Takes the models as arguments so that a migration can pass its historical ones.
    """
    rows = list(row_model.objects.filter(organisation_id=organisation_id).order_by("seq"))
    prev = GENESIS
    for expected, row in enumerate(rows, start=1):
        plain = legacy_row_hash(**_content(row))
        if row.seq != expected or row.prev_hash != prev or plain != row.hash:
            return f"the plain chain breaks at seq {expected}: not re-keyed"
        prev = row.hash
    key = audit_key()
    prev = GENESIS
    for row in rows:
        row.prev_hash = prev
        row.hash = row_hash(key=key, **_content(row))
        # The base manager: the rows' own one refuses updates, as it should everywhere else.
        row_model._base_manager.filter(pk=row.pk).update(prev_hash=row.prev_hash, hash=row.hash)
        prev = row.hash
    _checkpoint(checkpoint_model, organisation_id, len(rows), prev)
    return None
