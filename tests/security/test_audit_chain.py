"""The audit chain against someone with write access to the database and without the audit key:
every way of cutting, rewriting or extending the rows behind the ORM's back is named by
`audit_verify`."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from console import audit, services
from console.models import AuditCheckpoint, AuditRow

pytestmark = pytest.mark.django_db

ROWS = AuditRow._meta.db_table
CHECKPOINTS = AuditCheckpoint._meta.db_table


def _sql(sql: str, params: list | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])


@pytest.fixture
def chain(editor, organisation, actor_for):
    actor = actor_for(editor, organisation)
    for data in ({"language": "pt-BR"}, {"on_unread": "ask"}, {"taint_policy": "refuse"}):
        services.settings_update(actor=actor, data=data)
    return list(AuditRow.objects.filter(organisation=organisation).order_by("seq"))


def _broken(slug: str = "acme") -> str:
    with pytest.raises(CommandError) as caught:
        call_command("audit_verify", organisation=slug)
    assert caught.value.returncode == 1
    return str(caught.value)


def _plain_hash(row: AuditRow, **changed) -> str:
    """What someone without the key computes: the chain's content hashed with plain SHA-256."""
    content = {**audit._content(row), **changed}
    return audit.legacy_row_hash(**content)


def test_an_untouched_chain_holds(chain, capsys):
    call_command("audit_verify", organisation="acme")
    assert "acme: 3 row(s), chain intact, checkpoint signed" in capsys.readouterr().out


def test_deleting_the_last_rows_is_caught(chain):
    _sql(f"DELETE FROM {ROWS} WHERE id IN (%s, %s)", [chain[1].pk, chain[2].pk])
    assert "rows 2 to 3 are missing" in _broken()


def test_deleting_every_row_of_an_organisation_is_caught(chain):
    _sql(f"DELETE FROM {ROWS} WHERE organisation_id = %s", [chain[0].organisation_id])
    assert "rows 1 to 3 are missing" in _broken()


def test_deleting_the_rows_and_the_checkpoint_is_caught(chain):
    _sql(f"DELETE FROM {ROWS} WHERE organisation_id = %s", [chain[0].organisation_id])
    _sql(f"DELETE FROM {CHECKPOINTS} WHERE organisation_id = %s", [chain[0].organisation_id])
    assert "no checkpoint" in _broken()


def test_editing_a_row_and_recomputing_every_hash_after_it_is_caught(chain):
    prev = chain[0].prev_hash
    for row in chain:
        actor = "user:mallory" if row.seq == 2 else row.actor
        forged = _plain_hash(row, actor=actor, prev_hash=prev)
        _sql(
            f"UPDATE {ROWS} SET actor = %s, prev_hash = %s, hash = %s WHERE id = %s",
            [actor, prev, forged, row.pk],
        )
        prev = forged
    assert "broken at seq 1" in _broken() and "does not match its content" in _broken()


def test_rewriting_the_checkpoint_after_cutting_the_tail_is_caught(chain):
    _sql(f"DELETE FROM {ROWS} WHERE id = %s", [chain[2].pk])
    _sql(
        f"UPDATE {CHECKPOINTS} SET length = 2, head = %s, signature = %s WHERE organisation_id = %s",
        [chain[1].hash, "0" * 64, chain[0].organisation_id],
    )
    assert "not signed with the audit key" in _broken()


def test_appending_a_forged_row_with_a_correct_hash_is_caught(chain):
    head = chain[2]
    forged = AuditRow(
        organisation_id=head.organisation_id,
        seq=4,
        at=timezone.now(),
        actor="user:mallory",
        actor_id=None,
        action="settings.update",
        object_type="settings",
        object_id=head.object_id,
        changes={"language": {"old": "pt-BR", "new": "en"}},
        prev_hash=head.hash,
    )
    _sql(
        f"INSERT INTO {ROWS} (organisation_id, seq, at, actor, actor_id, action, object_type,"
        " object_id, changes, prev_hash, hash) VALUES (%s, 4, %s, %s, NULL, %s, %s, %s, %s, %s, %s)",
        [
            head.organisation_id,
            forged.at,
            forged.actor,
            forged.action,
            forged.object_type,
            forged.object_id,
            '{"language": {"old": "pt-BR", "new": "en"}}',
            head.hash,
            _plain_hash(forged),
        ],
    )
    assert "broken at seq 4" in _broken() and "does not match its content" in _broken()


def test_moving_the_last_row_to_another_organisation_is_caught(
    chain, outsider, other_organisation, actor_for
):
    services.settings_update(
        actor=actor_for(outsider, other_organisation), data={"language": "pt-BR"}
    )
    _sql(
        f"UPDATE {ROWS} SET organisation_id = %s, seq = 2 WHERE id = %s",
        [other_organisation.pk, chain[2].pk],
    )
    assert "row 3 is missing" in _broken("acme")
    assert "broken at seq 2" in _broken("globex")


def test_a_checkpoint_copied_from_another_organisation_is_caught(
    chain, outsider, other_organisation, actor_for
):
    theirs = AuditCheckpoint.objects.get(organisation=other_organisation)
    _sql(f"DELETE FROM {ROWS} WHERE id = %s", [chain[2].pk])
    _sql(
        f"UPDATE {CHECKPOINTS} SET length = %s, head = %s, signature = %s WHERE organisation_id = %s",
        [theirs.length, theirs.head, theirs.signature, chain[0].organisation_id],
    )
    assert "not signed with the audit key" in _broken()


def test_a_chain_verified_under_another_key_is_not_intact(chain, settings):
    settings.STALWART_AUDIT_KEY = "a key the rows were not written with"
    assert "broken at seq 1" in _broken()


def _written_before_the_key(chain: list[AuditRow]) -> int:
    """Turn the chain back into what rows were before it was keyed: plain SHA-256, no checkpoint."""
    prev = audit.GENESIS
    for row in chain:
        plain = _plain_hash(row, prev_hash=prev)
        _sql(f"UPDATE {ROWS} SET prev_hash = %s, hash = %s WHERE id = %s", [prev, plain, row.pk])
        prev = plain
    organisation_id = chain[0].organisation_id
    _sql(f"DELETE FROM {CHECKPOINTS} WHERE organisation_id = %s", [organisation_id])
    return organisation_id


def test_rows_written_before_the_chain_was_keyed_are_rekeyed_once_they_verify(chain):
    organisation_id = _written_before_the_key(chain)
    assert "does not match its content" in _broken()
    assert audit.rekey_organisation(AuditRow, AuditCheckpoint, organisation_id) is None
    call_command("audit_verify", organisation="acme")


def test_a_plain_chain_edited_before_the_migration_is_not_blessed_by_it(chain):
    organisation_id = _written_before_the_key(chain)
    _sql(f"UPDATE {ROWS} SET actor = 'user:mallory' WHERE id = %s", [chain[1].pk])
    problem = audit.rekey_organisation(AuditRow, AuditCheckpoint, organisation_id)
    assert problem == "the plain chain breaks at seq 2: not re-keyed"
    assert not AuditCheckpoint.objects.filter(organisation_id=organisation_id).exists()
    assert "broken at seq 1" in _broken()


# -- the anchors outside the database ----------------------------------------------------------


@pytest.fixture
def anchored(
    settings, tmp_path, editor, organisation, actor_for, django_capture_on_commit_callbacks
):
    """A chain of three rows whose anchors were written to a file as each row committed, and the
    checkpoint as it stood after the second row (what someone with database access kept)."""
    settings.STALWART_AUDIT_ANCHOR_FILE = str(tmp_path / "audit-anchors.jsonl")
    actor = actor_for(editor, organisation)
    kept = None
    for data in ({"language": "pt-BR"}, {"on_unread": "ask"}, {"taint_policy": "refuse"}):
        with django_capture_on_commit_callbacks(execute=True):
            services.settings_update(actor=actor, data=data)
        if data.get("on_unread"):
            kept = AuditCheckpoint.objects.values("length", "head", "signature", "at").get(
                organisation=organisation
            )
    rows = list(AuditRow.objects.filter(organisation=organisation).order_by("seq"))
    return rows, kept


def test_the_anchor_file_holds_every_committed_head(anchored, capsys):
    call_command("audit_verify")
    assert "acme: 3 row(s), chain intact, checkpoint signed, anchored outside at seq 3" in (
        capsys.readouterr().out
    )


def test_cutting_the_tail_and_restoring_an_old_checkpoint_is_caught_by_the_anchor(anchored):
    rows, kept = anchored
    _sql(f"DELETE FROM {ROWS} WHERE id = %s", [rows[2].pk])
    _sql(
        f"UPDATE {CHECKPOINTS} SET length = %s, head = %s, signature = %s WHERE organisation_id = %s",
        [kept["length"], kept["head"], kept["signature"], rows[0].organisation_id],
    )
    assert "the anchor outside the database holds 3 rows" in _broken()


def test_deleting_an_organisation_with_its_whole_chain_is_caught_by_the_anchor(anchored):
    rows, _ = anchored
    organisation_id = rows[0].organisation_id
    for table in (
        ROWS,
        CHECKPOINTS,
        "console_membership",
        "console_organisationsettings",
    ):
        _sql(f"DELETE FROM {table} WHERE organisation_id = %s", [organisation_id])
    _sql("DELETE FROM console_organisation WHERE id = %s", [organisation_id])
    with pytest.raises(CommandError) as caught:
        call_command("audit_verify")
    assert "audit chain of `acme`" in str(caught.value)
    assert "the organisation is gone" in str(caught.value)


def test_an_anchor_written_without_the_key_is_ignored(anchored, settings):
    rows, _ = anchored
    forged = {
        "database": audit._database(),
        "organisation": rows[0].organisation_id,
        "length": 9,
        "head": "0" * 64,
        "signature": "0" * 64,
    }
    with open(settings.STALWART_AUDIT_ANCHOR_FILE, "a") as out:
        out.write(json.dumps(forged) + "\n")
    assert audit.verify_chain(rows[0].organisation) is None
