"""The project around the app: demo data, the OpenAPI schema, the people page and sign-in."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from console.models import Membership, Organisation

pytestmark = pytest.mark.django_db


def test_seed_demo_creates_one_person_per_role_and_can_run_twice(capsys):
    call_command("seed_demo")
    call_command("seed_demo")
    organisation = Organisation.objects.get(slug="demo")
    roles = sorted(
        Membership.objects.filter(organisation=organisation).values_list("role", flat=True)
    )
    assert roles == ["admin", "approver", "auditor", "editor"]
    out = capsys.readouterr().out
    assert "demo-editor" in out and "password:" in out


def test_a_demo_person_can_sign_in(client_for, capsys):
    call_command("seed_demo")
    client = client_for()
    client.get("/accounts/login/")
    response = client.post(
        "/accounts/login/", {"username": "demo-auditor", "password": "stalwart-demo"}
    )
    assert response.status_code == 302
    assert client.get("/events/").status_code == 200


def test_a_wrong_password_is_refused(client_for, editor):
    client = client_for()
    response = client.post("/accounts/login/", {"username": "eve-editor", "password": "nope"})
    assert response.status_code == 200
    assert b'role="alert"' in response.content


def test_the_openapi_schema_lists_the_api(editor, client_for):
    response = client_for(editor).get("/v1/schema", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    for path in ("/v1/settings", "/v1/events", "/v1/events/{event_id}", "/v1/audit", "/v1/health"):
        assert path in schema["paths"], path
    assert "apiKey" in schema["components"]["securitySchemes"]


def test_the_api_docs_page_is_served_without_a_cdn(editor, client_for):
    page = client_for(editor).get("/v1/docs")
    assert page.status_code == 200
    assert b"cdn" not in page.content.lower()


def test_the_operator_creates_a_person_who_gets_a_one_time_password(client_for, capsys):
    call_command("person_create", "newbie", "--email", "n@example.org")
    password = capsys.readouterr().out.split("first password: ")[1].split()[0]
    other = client_for()
    other.get("/accounts/login/")
    assert (
        other.post("/accounts/login/", {"username": "newbie", "password": password}).status_code
        == 302
    )
    assert other.get("/")["Location"] == "/invitations/"


def test_inviting_a_member_names_the_field(admin, editor, client_for):
    response = client_for(admin).post(
        "/members/invite", {"identifier": "eve-editor", "role": "auditor"}
    )
    assert response.status_code == 400
    assert b"identifier: `eve-editor` is already a member" in response.content


def test_only_an_admin_manages_people(editor, approver, client_for):
    membership = Membership.objects.get(user=approver)
    client = client_for(editor)
    assert client.post("/members/invite", {"identifier": "x", "role": "admin"}).status_code == 403
    assert client.post(f"/members/{membership.pk}/role", {"role": "admin"}).status_code == 403
    assert Membership.objects.get(pk=membership.pk).role == "approver"


def test_the_openapi_schema_generates_without_a_warning(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s.yaml"))
    assert (tmp_path / "s.yaml").read_text().startswith("openapi:")


def test_seed_demo_leaves_a_refund_in_the_queue_and_counters_on_the_tools_page(client_for, capsys):
    from guard.models import ApprovalRequest

    call_command("seed_demo")
    call_command("seed_demo")
    organisation = Organisation.objects.get(slug="demo")
    waiting = ApprovalRequest.objects.get(organisation=organisation)
    assert (waiting.tool, waiting.status, waiting.origins["amount"]) == (
        "refund_card",
        "pending",
        "model",
    )
    client = client_for()
    client.post("/accounts/login/", {"username": "demo-auditor", "password": "stalwart-demo"})
    page = client.get("/tools/").content.decode()
    row = page.split('data-tool="refund_card"')[1].split("</tr>")[0]
    assert [cell.split("</td>")[0] for cell in row.split("<td>")[2:4]] == ["1", "1"]


def test_seed_demo_proves_the_shop_once_with_the_proof_engine(client_for, capsys):
    from proof import jobspec
    from proof.engine import report_dict, verify_graph
    from proof.models import ProofJob
    from proof.services import spec_of_job
    from rulebooks.budget import compile_within_budget

    call_command("seed_demo")
    call_command("seed_demo")
    organisation = Organisation.objects.get(slug="demo")
    job = ProofJob.objects.get(organisation=organisation)
    assert (job.name, job.status, job.progress, job.attempts) == ("shop", "passed", 100, 1)
    assert job.submitted_by == "user:demo-editor" and job.finished_at is not None
    # the row holds what the engine answers for the job it keeps, not a made-up report
    doc = jobspec.job_document(spec_of_job(job), compile_rulebook=compile_within_budget)
    report = verify_graph(doc, depth=job.session_steps, turns=job.turns, file=job.name)
    assert job.report == report_dict(report)
    assert [f["rule"] for f in job.report["findings"]] == ["QG023", "QG105"]
    assert job.findings_count == 2 and job.gate_passed is True
    client = client_for()
    client.post("/accounts/login/", {"username": "demo-auditor", "password": "stalwart-demo"})
    page = client.get(f"/proofs/{job.public_id}/").content.decode()
    assert "Gate: passed" in page and 'data-rule="QG105"' in page


def test_seed_demo_keeps_two_compiled_versions_of_the_shops_rulebook(client_for, capsys):
    from rulebooks.models import Rulebook

    call_command("seed_demo")
    call_command("seed_demo")
    rulebook = Rulebook.objects.get(organisation__slug="demo")
    v1, v2 = rulebook.versions.order_by("number")
    assert (v1.number, v2.number, rulebook.versions.count()) == (1, 2, 2)
    assert v1.sha256 != v2.sha256
    assert sorted(v1.record["tools"]) == ["refund_card"]
    assert sorted(v2.record["tools"]) == ["charge_card", "refund_card"]
    client = client_for()
    client.post("/accounts/login/", {"username": "demo-auditor", "password": "stalwart-demo"})
    page = client.get(f"/rulebooks/{rulebook.pk}/compare?a=1&b=2").content.decode()
    assert "+tool charge_card: flows charges; facts card_on_file" in page


def test_seed_demo_raises_the_exfil_chains_alert_once_through_the_matcher(client_for, capsys):
    from console.models import Event, SessionHold

    call_command("seed_demo")
    call_command("seed_demo")
    organisation = Organisation.objects.get(slug="demo")
    alert = Event.objects.get(organisation=organisation, is_alert=True)
    assert (alert.rule, alert.source, alert.session) == ("exfil chain", "sequence", "demo-exfil-1")
    # the chain's calls are the firewall's recorded decisions, each taken by the matcher
    chain = Event.objects.filter(organisation=organisation, session="demo-exfil-1", is_alert=False)
    assert chain.count() == 52 and not chain.exclude(match_state="matched").exists()
    hold = SessionHold.objects.get(organisation=organisation, session="demo-exfil-1")
    assert hold.alert_id == alert.pk and hold.released_at is None
    client = client_for()
    client.post("/accounts/login/", {"username": "demo-auditor", "password": "stalwart-demo"})
    page = client.get(f"/events/{alert.pk}/").content.decode()
    assert "Alert" in page and "exfil chain" in page
