"""The proofs' API: validation by field path, the audit row and the task sent on commit, roles,
API keys, tenancy, and the reports of a finished job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console import services as console_services
from console.models import AuditRow
from proof import services
from proof.models import ProofJob

from .conftest import planted_graph, shop_job

pytestmark = pytest.mark.django_db
ROOT_SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop"


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """The jobs whose task was sent (to a broker no test worker reads)."""
    out: list[int] = []
    monkeypatch.setattr(services, "send", out.append)
    return out


def _post(client, body, **extra):  # noqa: ANN001, ANN003, ANN202
    return client.post("/v1/proofs", json.dumps(body), content_type="application/json", **extra)


def test_a_job_is_queued_with_an_audit_row_and_its_task_sent_once_committed(
    editor, client_for, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = _post(client_for(editor), {**shop_job(), "session_steps": 40, "name": "shop"})
    assert response.status_code == 201, response.content
    body = response.json()
    job = ProofJob.objects.get(public_id=body["id"])
    assert (body["status"], body["progress"], body["attempts"]) == ("queued", 0, 0)
    assert (job.session_steps, job.turns, job.name, job.nodes) == (40, 3, "shop", 19)
    assert job.digest.startswith("sha256:") and body["graph_digest"] == job.digest
    assert len(callbacks) == 1 and sent == [job.pk]
    row = AuditRow.objects.get(action="proof.submit")
    assert row.object_id == str(job.public_id) and row.actor == "user:eve-editor"
    assert row.changes["graph"] == {"redacted": True}
    assert body["links"]["report.sarif"] == f"/v1/proofs/{job.public_id}/report.sarif"


def test_nothing_is_kept_or_sent_when_the_job_is_invalid(editor, client_for, sent):
    response = _post(client_for(editor), {"graph": {"format": "qls-graph/1"}, "turns": 99})
    assert response.status_code == 400
    assert (
        ProofJob.objects.count() == 0
        and not AuditRow.objects.filter(action="proof.submit").exists()
    )
    assert sent == []


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        ({}, "graph", "this field is required"),
        ({"graph": []}, "graph", "must be a `qls-graph/1` document"),
        ({"graph": {"format": "qls-graph/1"}, "colour": 1}, "colour", "not a field here"),
        ({"graph": {"format": "qls-graph/2"}}, "graph.format", "must be `qls-graph/1`"),
        ({"graph": {"format": "qls-graph/1", "nodes": []}}, "graph.entries", "must list"),
        ({"graph": {"format": "qls-graph/1"}, "session_steps": 0}, "session_steps", "from 1"),
        ({"graph": {"format": "qls-graph/1"}, "session_steps": "60"}, "session_steps", "whole"),
        ({"graph": {"format": "qls-graph/1"}, "turns": True}, "turns", "whole number"),
        ({"graph": {"format": "qls-graph/1"}, "catalogue": []}, "catalogue", "a catalogue"),
        ({"graph": {"format": "qls-graph/1"}, "rulebook": 3}, "rulebook", "compiled record"),
        ({"graph": {"format": "qls-graph/1"}, "rulebook": {"format": "x"}}, "rulebook", "version"),
    ],
)
def test_each_error_is_named_by_its_field_path(editor, client_for, sent, body, path, message):
    response = _post(client_for(editor), body)
    assert response.status_code == 400, response.content
    errors = response.json()
    assert path in errors, errors
    assert any(message in m for m in errors[path]), errors[path]


def test_errors_inside_the_graph_and_the_catalogue_name_their_paths(editor, client_for, sent):
    job = shop_job()
    job["graph"]["edges"][3]["to"] = "nowhere"
    job["catalogue"]["tools"][1]["kind"] = "bogus"
    errors = _post(client_for(editor), job).json()
    assert "graph.edges[3].to" in errors
    assert errors["catalogue.tools[1].kind"] == [
        "must be one of read, write, sends_out, not `bogus`"
    ]


def test_a_rulebook_given_as_text_is_compiled_and_its_errors_located(editor, client_for, sent):
    job = shop_job()
    job["rulebook"] = "define flow refunds\n  goto elsewhere\n"
    errors = _post(client_for(editor), job).json()
    assert errors["rulebook"] == ["policy.co:2:3: `goto` is not supported in a rulebook"]
    job["rulebook"] = (ROOT_SHOP / "policy.co").read_text()
    assert _post(client_for(editor), job).status_code == 201


@pytest.mark.parametrize("role", ["admin", "editor"])
def test_admins_and_editors_submit(role, people, client_for, sent):
    assert _post(client_for(people[role]), shop_job()).status_code == 201


@pytest.mark.parametrize("role", ["approver", "auditor"])
def test_approvers_and_auditors_may_not_submit_but_may_read(role, people, client_for, sent):
    client = client_for(people[role])
    assert _post(client, shop_job()).status_code == 403
    assert ProofJob.objects.count() == 0
    assert client.get("/v1/proofs").status_code == 200


def test_nobody_signed_out_reads_or_submits(client_for, sent):
    client = client_for()
    assert client.get("/v1/proofs").status_code in (401, 403)
    assert _post(client, shop_job()).status_code in (401, 403)


def test_api_keys_act_with_their_role(admin, organisation, actor_for, client_for, sent):
    actor = actor_for(admin, organisation)
    _, editor_key = console_services.api_key_create(actor=actor, name="ci", role="editor")
    _, auditor_key = console_services.api_key_create(actor=actor, name="read", role="auditor")
    anonymous = client_for()
    created = _post(anonymous, shop_job(), HTTP_AUTHORIZATION=f"Bearer {editor_key}")
    assert created.status_code == 201
    assert ProofJob.objects.get().submitted_by.startswith("api-key:ci")
    refused = _post(anonymous, shop_job(), HTTP_AUTHORIZATION=f"Bearer {auditor_key}")
    assert refused.status_code == 403
    listed = anonymous.get("/v1/proofs", HTTP_AUTHORIZATION=f"Bearer {auditor_key}")
    assert [j["id"] for j in listed.json()["results"]] == [created.json()["id"]]


def test_another_organisations_job_does_not_exist(actors, outsider, client_for, sent):
    job = services.proof_job_submit(actor=actors["editor"], body=shop_job())
    services.proof_job_run(job_id=job.pk)
    client = client_for(outsider)
    assert client.get("/v1/proofs").json()["results"] == []
    assert client.get(f"/v1/proofs/{job.public_id}").status_code == 404
    for fmt in ("txt", "json", "sarif"):
        assert client.get(f"/v1/proofs/{job.public_id}/report.{fmt}").status_code == 404
    assert client.get("/v1/proofs/not-a-uuid").status_code == 404


def test_a_finished_job_shows_its_gate_and_serves_its_report_three_ways(
    actors, auditor, client_for, sent
):
    job = services.proof_job_submit(actor=actors["editor"], body=shop_job())
    assert services.proof_job_run(job_id=job.pk) == "passed"
    client = client_for(auditor)
    body = client.get(f"/v1/proofs/{job.public_id}").json()
    assert (body["status"], body["progress"], body["attempts"]) == ("passed", 100, 1)
    assert body["gate"] == {"passed": True, "stops_agent": False, "findings": 2, "failing": 0}
    assert sorted(f["rule"] for f in body["report"]["findings"]) == ["QG023", "QG105"]
    text = client.get(f"/v1/proofs/{job.public_id}/report.txt", HTTP_ACCEPT="text/plain")
    assert text.status_code == 200 and text["Content-Type"].startswith("text/plain")
    assert "Gate: passed" in text.content.decode()
    as_json = json.loads(client.get(f"/v1/proofs/{job.public_id}/report.json").content)
    assert as_json["format"] == "stalwart-verify/1" and as_json == body["report"]
    sarif = client.get(f"/v1/proofs/{job.public_id}/report.sarif")
    assert sarif["Content-Type"] == "application/sarif+json"
    assert json.loads(sarif.content)["version"] == "2.1.0"
    assert client.get(f"/v1/proofs/{job.public_id}/report.pdf").status_code == 404


def test_a_job_with_a_planted_flaw_fails_its_gate(actors, client_for, editor, sent):
    job = services.proof_job_submit(actor=actors["editor"], body={"graph": planted_graph()})
    assert services.proof_job_run(job_id=job.pk) == "failed"
    body = client_for(editor).get(f"/v1/proofs/{job.public_id}").json()
    assert body["gate"]["passed"] is False and body["gate"]["stops_agent"] is True
    assert [f["rule"] for f in body["report"]["findings"]] == ["QG011"]


def test_an_unfinished_job_has_no_report_yet(actors, auditor, client_for, sent):
    job = services.proof_job_submit(actor=actors["editor"], body=shop_job())
    client = client_for(auditor)
    body = client.get(f"/v1/proofs/{job.public_id}").json()
    assert body["gate"] is None and "report" not in body
    answer = client.get(f"/v1/proofs/{job.public_id}/report.json")
    assert answer.status_code == 409 and answer.json()["status"] == "queued"


def test_the_list_filters_by_status_and_refuses_an_unknown_one(actors, auditor, client_for, sent):
    done = services.proof_job_submit(actor=actors["editor"], body=shop_job())
    services.proof_job_run(job_id=done.pk)
    services.proof_job_submit(actor=actors["editor"], body=shop_job())
    client = client_for(auditor)
    assert [j["id"] for j in client.get("/v1/proofs?status=passed").json()["results"]] == [
        str(done.public_id)
    ]
    assert client.get("/v1/proofs").json()["count"] == 2
    refused = client.get("/v1/proofs?status=finished")
    assert refused.status_code == 400 and "status" in refused.json()
