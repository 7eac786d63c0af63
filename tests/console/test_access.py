"""Roles are enforced on the server, other organisations' objects do not exist, keys name one tenant."""

from __future__ import annotations

import pytest

from console import services
from console.models import ApiKey, AuditRow, OrganisationSettings

pytestmark = pytest.mark.django_db

# Every page and endpoint, with the roles that may open it (GET).
PAGES = {
    "/": {"admin", "editor", "approver", "auditor"},
    "/settings/": {"admin", "editor", "approver", "auditor"},
    "/audit/": {"admin", "auditor"},
    "/events/": {"admin", "editor", "auditor"},
    "/members/": {"admin", "editor", "approver", "auditor"},
    "/api-keys/": {"admin"},
    "/health/": {"admin", "editor", "approver", "auditor"},
    "/v1/settings": {"admin", "editor", "approver", "auditor"},
    "/v1/events": {"admin", "editor", "auditor"},
    "/v1/audit": {"admin", "auditor"},
}


@pytest.mark.parametrize("path", sorted(PAGES))
@pytest.mark.parametrize("role", ["admin", "editor", "approver", "auditor"])
def test_each_page_requires_its_role(path, role, people, client_for):
    response = client_for(people[role]).get(path)
    if role in PAGES[path]:
        assert response.status_code == 200, response.content[:300]
    else:
        assert response.status_code == 403


@pytest.mark.parametrize("path", [p for p in sorted(PAGES) if not p.startswith("/v1/")])
def test_pages_send_a_stranger_to_sign_in(path, client_for, organisation):
    response = client_for().get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize(
    "path", ["/v1/settings", "/v1/events", "/v1/audit", "/v1/health", "/v1/schema"]
)
def test_the_api_refuses_a_stranger(path, client_for, organisation):
    response = client_for().get(path)
    assert response.status_code in (401, 403)


def test_an_auditor_cannot_change_settings(auditor, organisation, client_for):
    response = client_for(auditor).put_json("/v1/settings", {"language": "pt-BR"})
    assert response.status_code == 403
    assert OrganisationSettings.objects.get(organisation=organisation).language == "en"
    assert not AuditRow.objects.exists()


def test_an_approver_cannot_change_settings_on_the_page(approver, organisation, client_for):
    response = client_for(approver).post("/settings/", {"language": "pt-BR"})
    assert response.status_code == 403
    assert OrganisationSettings.objects.get(organisation=organisation).language == "en"


def test_an_editor_changes_settings_and_an_audit_row_is_written(editor, organisation, client_for):
    response = client_for(editor).put_json(
        "/v1/settings", {"language": "pt-BR", "on_unread": "ask"}
    )
    assert response.status_code == 200, response.content
    assert response.json()["language"] == "pt-BR"
    row = AuditRow.objects.get(organisation=organisation)
    assert row.action == "settings.update"
    assert row.actor == "user:eve-editor"
    assert row.changes == {
        "language": {"old": "en", "new": "pt-BR"},
        "on_unread": {"old": "refuse", "new": "ask"},
    }


def test_an_editor_cannot_change_the_licence(editor, organisation, client_for):
    response = client_for(editor).put_json(
        "/v1/settings", {"licence_on_lapse": "refuse_all", "language": "pt-BR"}
    )
    assert response.status_code == 403
    saved = OrganisationSettings.objects.get(organisation=organisation)
    assert (saved.licence_on_lapse, saved.language) == ("refuse_writes", "en")
    assert not AuditRow.objects.exists()


def test_an_admin_changes_the_licence(admin, organisation, client_for):
    response = client_for(admin).put_json(
        "/v1/settings", {"licence_valid_until": "2027-01-31", "licence_on_lapse": "refuse_all"}
    )
    assert response.status_code == 200, response.content
    saved = OrganisationSettings.objects.get(organisation=organisation)
    assert str(saved.licence_valid_until) == "2027-01-31"
    assert saved.licence_on_lapse == "refuse_all"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"on_unread": "maybe"}, "on_unread"),
        ({"language": "pt-PT"}, "language"),
        ({"taint_policy": "allow"}, "taint_policy"),
        ({"licence_valid_until": "31/01/2027"}, "licence_valid_until"),
        ({"compiled_records_only": "perhaps"}, "compiled_records_only"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_an_invalid_setting_names_its_field_and_changes_nothing(
    body, field, admin, organisation, client_for
):
    before = OrganisationSettings.objects.get(organisation=organisation)
    response = client_for(admin).put_json("/v1/settings", {"language": "pt-BR", **body})
    assert response.status_code == 400
    assert field in response.json()
    after = OrganisationSettings.objects.get(organisation=organisation)
    assert after.language == before.language == "en"
    assert not AuditRow.objects.exists()


def test_a_body_that_is_not_an_object_is_refused(admin, client_for):
    response = client_for(admin).put("/v1/settings", "[1, 2]", content_type="application/json")
    assert response.status_code == 400
    response = client_for(admin).put("/v1/settings", "{nope", content_type="application/json")
    assert response.status_code == 400


def test_a_put_without_the_csrf_token_is_refused(editor, organisation):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(editor)
    response = client.put("/v1/settings", '{"language": "pt-BR"}', content_type="application/json")
    assert response.status_code == 403
    assert OrganisationSettings.objects.get(organisation=organisation).language == "en"


def test_another_organisations_event_answers_404(
    people, organisation, other_organisation, client_for
):
    theirs = services.event_record(
        organisation=other_organisation, source="firewall", decision="refuse", tool="shell.exec"
    )
    ours = services.event_record(organisation=organisation, source="firewall", decision="allow")
    client = client_for(people["auditor"])
    assert client.get(f"/v1/events/{ours.pk}").status_code == 200
    assert client.get(f"/v1/events/{theirs.pk}").status_code == 404
    assert client.get(f"/events/{theirs.pk}/").status_code == 404
    listed = client.get("/v1/events").json()["results"]
    assert [e["id"] for e in listed] == [ours.pk]


def test_asking_for_an_organisation_one_is_not_in_answers_404(
    editor, other_organisation, client_for
):
    client = client_for(editor)
    response = client.get("/v1/settings", HTTP_X_STALWART_ORGANISATION=other_organisation.slug)
    assert response.status_code == 404


def test_a_person_in_two_organisations_picks_one(editor, other_organisation, client_for):
    from console.models import Membership

    Membership.objects.create(user=editor, organisation=other_organisation, role="auditor")
    client = client_for(editor)
    ok = client.put_json("/v1/settings", {"language": "pt-BR"}, HTTP_X_STALWART_ORGANISATION="acme")
    assert ok.status_code == 200
    refused = client.put_json(
        "/v1/settings", {"language": "pt-BR"}, HTTP_X_STALWART_ORGANISATION="globex"
    )
    assert refused.status_code == 403
    switched = client.post("/organisation/switch", {"organisation": str(other_organisation.pk)})
    assert switched.status_code == 302
    assert client.get("/v1/settings").json()["language"] == "en"


def test_switching_to_an_organisation_one_is_not_in_answers_404(
    editor, other_organisation, client_for
):
    response = client_for(editor).post(
        "/organisation/switch", {"organisation": str(other_organisation.pk)}
    )
    assert response.status_code == 404


def test_a_person_removed_from_the_organisation_their_session_chose_gets_their_own_back(
    editor, other_organisation, client_for
):
    from console.models import Membership

    theirs = Membership.objects.create(user=editor, organisation=other_organisation, role="editor")
    client = client_for(editor)
    client.post("/organisation/switch", {"organisation": str(other_organisation.pk)})
    theirs.delete()  # an admin of globex removed them while their session had globex chosen
    # this request was meant for globex: it is refused, never done in another organisation
    assert client.post("/firewall/", {"name": "p", "default_verdict": "allow"}).status_code == 404
    # and the choice is forgotten, so the next page is of an organisation they are still in
    assert client.get("/settings/").status_code == 200


def test_another_organisations_member_and_key_answer_404(
    admin, outsider, other_organisation, client_for, actor_for
):
    from console.models import Membership

    theirs = Membership.objects.get(user=outsider)
    key, _ = services.api_key_create(
        actor=actor_for(outsider, other_organisation), name="theirs", role="admin"
    )
    client = client_for(admin)
    assert client.post(f"/members/{theirs.pk}/role", {"role": "auditor"}).status_code == 404
    assert client.post(f"/members/{theirs.pk}/remove").status_code == 404
    assert client.post(f"/api-keys/{key.pk}/revoke").status_code == 404
    assert Membership.objects.get(pk=theirs.pk).role == "admin"
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None


class TestApiKeys:
    def _key(self, user, organisation, actor_for, role="editor"):
        return services.api_key_create(actor=actor_for(user, organisation), name="ci", role=role)

    def test_a_key_works_for_its_organisation_only(
        self, admin, organisation, other_organisation, client_for, actor_for
    ):
        _, plain = self._key(admin, organisation, actor_for)
        theirs = services.event_record(
            organisation=other_organisation, source="firewall", decision="refuse"
        )
        client = client_for()
        auth = {"HTTP_AUTHORIZATION": f"Bearer {plain}"}
        assert client.get("/v1/settings", **auth).status_code == 200
        assert client.get(f"/v1/events/{theirs.pk}", **auth).status_code == 404
        response = client.put(
            "/v1/settings", '{"language": "pt-BR"}', content_type="application/json", **auth
        )
        assert response.status_code == 200
        assert OrganisationSettings.objects.get(organisation=organisation).language == "pt-BR"
        assert OrganisationSettings.objects.get(organisation=other_organisation).language == "en"
        row = AuditRow.objects.get(organisation=organisation, action="settings.update")
        assert row.actor.startswith("api-key:ci")

    def test_a_key_ignores_an_organisation_header(
        self, admin, organisation, other_organisation, client_for, actor_for
    ):
        _, plain = self._key(admin, organisation, actor_for)
        response = client_for().put(
            "/v1/settings",
            '{"language": "pt-BR"}',
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {plain}",
            HTTP_X_STALWART_ORGANISATION="globex",
        )
        assert response.status_code == 200
        assert OrganisationSettings.objects.get(organisation=other_organisation).language == "en"

    def test_a_key_acts_with_its_role(self, admin, organisation, client_for, actor_for):
        _, plain = self._key(admin, organisation, actor_for, role="auditor")
        client = client_for()
        auth = {"HTTP_X_API_KEY": plain}
        assert client.get("/v1/audit", **auth).status_code == 200
        response = client.put(
            "/v1/settings", '{"language": "pt-BR"}', content_type="application/json", **auth
        )
        assert response.status_code == 403

    def test_a_revoked_or_wrong_key_is_refused(self, admin, organisation, client_for, actor_for):
        key, plain = self._key(admin, organisation, actor_for)
        client = client_for()
        wrong = plain[:-4] + ("AAAA" if not plain.endswith("AAAA") else "BBBB")
        assert client.get("/v1/settings", HTTP_AUTHORIZATION=f"Bearer {wrong}").status_code == 401
        assert client.get("/v1/settings", HTTP_AUTHORIZATION="Bearer nope").status_code == 401
        services.api_key_revoke(actor=actor_for(admin, organisation), key=key)
        assert client.get("/v1/settings", HTTP_AUTHORIZATION=f"Bearer {plain}").status_code == 401

    def test_a_key_is_stored_only_as_a_hash(self, admin, organisation, actor_for):
        import hashlib

        key, plain = self._key(admin, organisation, actor_for)
        stored = ApiKey.objects.get(pk=key.pk)
        assert plain not in str(stored.__dict__)
        assert stored.key_hash == hashlib.sha256(plain.encode()).hexdigest()
        row = AuditRow.objects.get(action="api_key.create")
        assert plain not in str(row.changes)
        assert row.changes["key"] == {"redacted": True}

    def test_a_key_is_shown_once_on_the_page(self, admin, client_for):
        client = client_for(admin)
        response = client.post("/api-keys/create", {"name": "deploy", "role": "editor"})
        assert response.status_code == 200
        plain = response.context["created"]["plain"]
        assert plain.encode() in response.content
        assert plain.encode() not in client.get("/api-keys/").content

    def test_only_an_admin_creates_keys(self, editor, client_for):
        response = client_for(editor).post("/api-keys/create", {"name": "x", "role": "admin"})
        assert response.status_code == 403
        assert not ApiKey.objects.exists()

    def test_a_key_without_a_name_is_refused_naming_the_field(self, admin, client_for):
        response = client_for(admin).post("/api-keys/create", {"name": " ", "role": "editor"})
        assert response.status_code == 400
        assert b"name:" in response.content
        assert not ApiKey.objects.exists()


def test_a_refusal_for_want_of_a_role_is_a_page_of_the_console_saying_why(auditor, client_for):
    response = client_for(auditor).post("/tools/writes", {"tool": "", "enabled": "off"})
    assert response.status_code == 403
    page = response.content.decode()
    assert '<header class="top">' in page and 'rel="stylesheet"' in page
    assert "Refused: the auditor role cannot do `controls.write`" in page
    assert page.count('id="refused"') == 1


def test_an_htmx_submit_refused_for_the_role_leaves_the_form_and_says_why_beside_it(
    auditor, organisation, client_for
):
    from console.models import OrganisationSettings

    OrganisationSettings.objects.filter(organisation=organisation).update(language="pt-BR")
    response = client_for(auditor).post(
        "/tools/writes", {"tool": "", "enabled": "off"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 403 and response["HX-Reswap"] == "none"
    body = response.content.decode()
    assert body.startswith('<div id="refused" hx-swap-oob="true">')
    assert "o papel auditor não pode fazer `controls.write`" in body and "<header" not in body


def test_the_api_refuses_in_json_where_django_refuses():
    from django.core.exceptions import PermissionDenied
    from django.test import RequestFactory

    from console.views import permission_denied

    request = RequestFactory().get("/v1/anything")
    response = permission_denied(request, PermissionDenied("the auditor role cannot do `x`"))
    assert response.status_code == 403
    assert response["Content-Type"] == "application/json"
