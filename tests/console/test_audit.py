"""Audit rows: written with the change, append-only, chained, and verified by a command."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

from console import audit, services
from console.models import AppendOnlyError, AuditRow

pytestmark = pytest.mark.django_db


@pytest.fixture
def three_rows(editor, organisation, actor_for):
    actor = actor_for(editor, organisation)
    for data in ({"language": "pt-BR"}, {"on_unread": "ask"}, {"taint_policy": "refuse"}):
        services.settings_update(actor=actor, data=data)
    return list(AuditRow.objects.filter(organisation=organisation).order_by("seq"))


def test_rows_are_chained_by_hash(three_rows):
    assert [r.seq for r in three_rows] == [1, 2, 3]
    assert three_rows[0].prev_hash == audit.GENESIS
    assert three_rows[1].prev_hash == three_rows[0].hash
    assert three_rows[2].prev_hash == three_rows[1].hash
    assert audit.verify_chain(three_rows[0].organisation) is None


def test_each_organisation_has_its_own_chain(three_rows, outsider, other_organisation, actor_for):
    services.settings_update(
        actor=actor_for(outsider, other_organisation), data={"language": "pt-BR"}
    )
    theirs = AuditRow.objects.get(organisation=other_organisation)
    assert (theirs.seq, theirs.prev_hash) == (1, audit.GENESIS)


def test_the_orm_refuses_to_update_or_delete_a_row(three_rows):
    row = three_rows[0]
    row.action = "nothing.happened"
    with pytest.raises(AppendOnlyError):
        row.save()
    with pytest.raises(AppendOnlyError):
        row.delete()
    with pytest.raises(AppendOnlyError):
        AuditRow.objects.filter(pk=row.pk).update(action="x")
    with pytest.raises(AppendOnlyError):
        AuditRow.objects.all().delete()
    with pytest.raises(AppendOnlyError):
        AuditRow.objects.bulk_create([AuditRow(organisation=row.organisation)])
    assert AuditRow.objects.get(pk=row.pk).action == "settings.update"


def _raw(sql: str, params: list) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def test_the_command_passes_an_intact_chain(three_rows, capsys):
    call_command("audit_verify")
    assert "acme: 3 row(s), chain intact" in capsys.readouterr().out


def test_the_command_names_a_row_edited_behind_the_orms_back(three_rows, capsys):
    edited = three_rows[1]
    _raw(
        f"UPDATE {AuditRow._meta.db_table} SET changes = %s WHERE id = %s",
        ['{"language": {"old": "en", "new": "fr"}}', edited.pk],
    )
    with pytest.raises(CommandError) as caught:
        call_command("audit_verify")
    assert caught.value.returncode == 1
    assert f"broken at seq 2 (row {edited.pk})" in str(caught.value)
    assert "does not match its content" in str(caught.value)


def test_the_command_names_a_row_whose_hash_was_recomputed(three_rows):
    """Someone who edits a row and fixes its own hash still breaks the link to the next row."""
    edited = three_rows[0]
    forged = audit.row_hash(
        organisation_id=edited.organisation_id,
        seq=1,
        at=edited.at.isoformat(),
        actor="user:mallory",
        actor_id=edited.actor_id,
        action=edited.action,
        object_type=edited.object_type,
        object_id=edited.object_id,
        changes=edited.changes,
        prev_hash=edited.prev_hash,
    )
    _raw(
        f"UPDATE {AuditRow._meta.db_table} SET actor = %s, hash = %s WHERE id = %s",
        ["user:mallory", forged, edited.pk],
    )
    problem = audit.verify_chain(edited.organisation)
    assert problem is not None
    assert problem.seq == 2
    assert "previous hash" in problem.problem


def test_the_command_names_a_deleted_row(three_rows):
    _raw(f"DELETE FROM {AuditRow._meta.db_table} WHERE id = %s", [three_rows[1].pk])
    problem = audit.verify_chain(three_rows[0].organisation)
    assert problem is not None and problem.seq == 2 and "missing" in problem.problem


def test_the_command_refuses_an_unknown_organisation(db):
    with pytest.raises(CommandError) as caught:
        call_command("audit_verify", organisation="nope")
    assert caught.value.returncode == 2


def test_a_change_that_does_not_commit_leaves_no_row(editor, organisation, actor_for):
    actor = actor_for(editor, organisation)
    with pytest.raises(RuntimeError), transaction.atomic():
        services.settings_update(actor=actor, data={"language": "pt-BR"})
        raise RuntimeError("the request failed after the change")
    assert not AuditRow.objects.exists()
    assert services.settings_get(organisation=organisation).language == "en"


@pytest.mark.django_db(transaction=True)
def test_a_row_is_never_written_outside_a_transaction(organisation):
    with pytest.raises(RuntimeError):
        audit.append(
            organisation=organisation,
            actor_label="x",
            actor_id=None,
            action="a",
            object_type="t",
            object_id="1",
            changes={},
        )


def test_an_unchanged_save_writes_no_row(editor, organisation, actor_for):
    services.settings_update(actor=actor_for(editor, organisation), data={"language": "en"})
    assert not AuditRow.objects.exists()


def test_hidden_fields_are_named_but_never_written():
    changes = audit.field_changes(
        {"token": "old-secret", "name": "a"},
        {"token": "new-secret", "name": "b"},
        hidden=frozenset({"token"}),
    )
    assert changes == {"name": {"old": "a", "new": "b"}, "token": {"redacted": True}}


def test_people_changes_are_audited(admin, organisation, actor_for):
    from console.models import Membership

    actor = actor_for(admin, organisation)
    user, password = services.person_create(username="newbie")
    invitation = services.invitation_create(actor=actor, identifier="newbie", role="auditor")
    membership = services.invitation_accept(user=user, invitation_id=invitation.pk)
    assert Membership.objects.get(user=user) == membership
    services.membership_set_role(actor=actor, membership=membership, role="approver")
    services.membership_remove(actor=actor, membership=membership)
    actions = list(AuditRow.objects.order_by("seq").values_list("action", flat=True))
    assert actions == [
        "invitation.create",
        "invitation.accept",
        "membership.create",
        "membership.update",
        "membership.delete",
    ]
    assert password not in str(list(AuditRow.objects.values_list("changes", flat=True)))


def test_the_last_admin_cannot_be_removed_or_demoted(admin, organisation, actor_for):
    from django.core.exceptions import ValidationError

    from console.models import Membership

    actor = actor_for(admin, organisation)
    membership = Membership.objects.get(user=admin)
    with pytest.raises(ValidationError):
        services.membership_remove(actor=actor, membership=membership)
    with pytest.raises(ValidationError):
        services.membership_set_role(actor=actor, membership=membership, role="auditor")
    assert Membership.objects.get(user=admin).role == "admin"


class TestAuditPage:
    def test_an_auditor_sees_the_rows_and_filters_them(self, three_rows, auditor, client_for):
        client = client_for(auditor)
        page = client.get("/audit/")
        assert page.status_code == 200
        assert page.content.count(b'class="audit-row"') == 3
        filtered = client.get("/audit/", {"action": "settings.", "actor": "nobody"})
        assert filtered.content.count(b'class="audit-row"') == 0

    def test_htmx_asks_get_only_the_rows(self, three_rows, auditor, client_for):
        response = client_for(auditor).get(
            "/audit/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="audit-rows"
        )
        assert response.content.startswith(
            b'\n<div id="audit-rows">'
        ) or response.content.lstrip().startswith(b'<div id="audit-rows">')
        assert b"<html" not in response.content

    def test_a_bad_date_filter_is_reported_not_crashed(self, three_rows, auditor, client_for):
        response = client_for(auditor).get("/audit/", {"since": "yesterday"})
        assert response.status_code == 200
        assert b"since: `yesterday` is not a date" in response.content

    @pytest.mark.parametrize(
        ("params", "field"),
        [
            ({"since": "2024-13-45T10:00"}, "since"),
            ({"until": "2024-02-30"}, "until"),
            ({"since": "0001-01-01T00:00:00+23:59"}, "since"),
            ({"actor": "a\x00"}, "actor"),
            ({"action": "x" * 10_000}, "action"),
        ],
    )
    def test_a_malformed_or_huge_filter_is_refused_by_name_not_a_500(
        self, params, field, three_rows, auditor, client_for
    ):
        client = client_for(auditor)
        client.raise_request_exception = False
        page = client.get("/audit/", params)
        assert page.status_code == 200
        assert f"{field}: ".encode() in page.content
        response = client.get("/v1/audit", params)
        assert response.status_code == 400
        assert field in response.json()

    def test_the_api_lists_rows_for_an_auditor(self, three_rows, auditor, client_for):
        body = client_for(auditor).get("/v1/audit", {"limit": 2}).json()
        assert body["count"] == 3
        assert [r["seq"] for r in body["results"]] == [3, 2]

    def test_the_api_names_a_bad_filter(self, three_rows, auditor, client_for):
        response = client_for(auditor).get("/v1/audit", {"until": "13/13/2026"})
        assert response.status_code == 400
        assert "until" in response.json()
