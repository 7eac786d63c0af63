"""The Proofs pages: the list and its form (errors inline by field path), the live polling, and
a job's page with each witness drawn over the graph as inline SVG."""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from proof import drawing, services
from proof.models import ProofJob

from .conftest import planted_graph, shop_job

pytestmark = pytest.mark.django_db

PLANTED_PATH = [
    "desk_router",
    "desk_model",
    "desk_handoff_reports",
    "reports_router",
    "reports_check_export_customers",
    "reports_tool_export_customers",
]


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    out: list[int] = []
    monkeypatch.setattr(services, "send", out.append)
    return out


def _file(name: str, content: object) -> SimpleUploadedFile:
    data = content if isinstance(content, bytes) else json.dumps(content).encode()
    return SimpleUploadedFile(name, data, content_type="application/json")


def _finished(actors, body) -> ProofJob:  # noqa: ANN001
    job = services.proof_job_submit(actor=actors["editor"], body=body)
    services.proof_job_run(job_id=job.pk)
    job.refresh_from_db()
    return job


def test_the_list_shows_jobs_and_the_form_only_to_those_who_may_run_proofs(
    actors, editor, auditor, client_for, sent
):
    job = _finished(actors, shop_job())
    page = client_for(auditor).get("/proofs/").content.decode()
    assert f'data-job="{job.public_id}"' in page and 'data-status="passed"' in page
    assert 'id="proof-form"' not in page
    assert 'href="/proofs/"' in page  # the nav link
    assert 'id="proof-form"' in client_for(editor).get("/proofs/").content.decode()


def test_a_graph_that_is_not_json_is_refused_inline(editor, client_for, sent):
    response = client_for(editor).post("/proofs/", {"graph": _file("g.json", b"{nope")})
    assert response.status_code == 400
    page = response.content.decode()
    assert 'data-field="graph"' in page
    assert "is not valid JSON: expecting property name enclosed in double quotes" in page
    assert ProofJob.objects.count() == 0 and sent == []


def test_errors_inside_the_graph_are_shown_by_field_path(editor, client_for, sent):
    job = shop_job()
    job["graph"]["edges"][3]["to"] = "nowhere"
    response = client_for(editor).post(
        "/proofs/",
        {
            "graph": _file("graph.json", job["graph"]),
            "catalogue": _file("catalogue.json", job["catalogue"]),
            "session_steps": "sixty",
        },
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert 'data-field="session_steps"' in page and "`sixty` is not a whole number" in page
    response = client_for(editor).post(
        "/proofs/", {"graph": _file("graph.json", job["graph"]), "session_steps": "60"}
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert 'data-field="graph.edges[3].to"' in page and "<code>graph.edges[3].to</code>" in page


def test_a_missing_graph_is_named(editor, client_for, sent):
    response = client_for(editor).post("/proofs/", {"session_steps": "60"})
    assert response.status_code == 400
    assert 'data-field="graph"' in response.content.decode()


def test_a_submitted_job_opens_its_page_or_joins_the_live_list(editor, client_for, sent):
    job = shop_job()
    files = {
        "graph": _file("graph.json", job["graph"]),
        "catalogue": _file("catalogue.json", job["catalogue"]),
        "rulebook": _file("record.json", job["rulebook"]),
        "session_steps": "30",
        "name": "the shop",
    }
    response = client_for(editor).post("/proofs/", files)
    created = ProofJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/proofs/{created.public_id}/"
    assert (created.name, created.session_steps, created.rulebook) == (
        "the shop",
        30,
        job["rulebook"],
    )
    files = {"graph": _file("graph.json", job["graph"]), "rulebook": _file("policy.co", b"")}
    response = client_for(editor).post("/proofs/", files, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 400 and 'data-field="rulebook"' in page  # empty: no flow
    response = client_for(editor).post(
        "/proofs/", {"graph": _file("graph.json", job["graph"])}, HTTP_HX_REQUEST="true"
    )
    page = response.content.decode()
    assert response.status_code == 200 and page.lstrip().startswith('<div id="proofs-main">')
    assert 'id="submitted"' in page
    assert re.search(r'id="proof-jobs" hx-get="/proofs/" hx-trigger="every 2s"', page)


def test_the_list_stops_polling_once_no_job_is_live(actors, auditor, client_for, sent):
    job = services.proof_job_submit(actor=actors["editor"], body=shop_job())
    client = client_for(auditor)
    poll = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "proof-jobs"}
    live = client.get("/proofs/", **poll).content.decode()
    assert live.lstrip().startswith('<div id="proof-jobs"') and 'hx-trigger="every 2s"' in live
    assert 'data-status="queued"' in live
    services.proof_job_run(job_id=job.pk)
    done = client.get("/proofs/", **poll).content.decode()
    assert 'data-status="passed"' in done and "hx-trigger" not in done
    assert 'value="100"' in done


def test_approvers_and_auditors_may_not_submit_from_the_page(approver, auditor, client_for, sent):
    for person in (approver, auditor):
        response = client_for(person).post("/proofs/", {"graph": _file("g.json", {})})
        assert response.status_code == 403
    assert ProofJob.objects.count() == 0


def test_the_job_page_draws_each_witness_over_the_graph(actors, auditor, client_for, sent):
    job = _finished(actors, {"graph": planted_graph()})
    page = client_for(auditor).get(f"/proofs/{job.public_id}/").content.decode()
    assert 'id="gate" class="error"' in page and "Gate: failed" in page
    assert 'data-rule="QG011"' in page and "Confused deputy" in page
    assert '<code class="where">agent.yaml:10</code>' in page
    assert "LLM06:2026" in page and "Have a person confirm" in page
    svg = page[page.index('<svg class="witness-graph"') : page.index("</svg>")]
    drawn = re.findall(r'<g class="node( witness)?" data-node="([^"]+)"', svg)
    assert len(drawn) == len(planted_graph()["nodes"])
    assert [node for mark, node in drawn if mark] == sorted(
        PLANTED_PATH, key=[n for _, n in drawn].index
    )
    moves = re.findall(r'<path class="edge witness"[^>]*data-from="([^"]+)" data-to="([^"]+)"', svg)
    assert sorted(moves) == sorted(zip(PLANTED_PATH, PLANTED_PATH[1:], strict=False))
    for fmt in ("txt", "json", "sarif"):
        assert f'href="/proofs/{job.public_id}/report.{fmt}"' in page
    assert "hx-trigger" not in page  # finished: nothing to follow


def test_a_live_job_page_follows_the_job_and_shows_it_once_finished(
    actors, editor, client_for, sent
):
    job = services.proof_job_submit(actor=actors["editor"], body=shop_job())
    client = client_for(editor)
    page = client.get(f"/proofs/{job.public_id}/").content.decode()
    assert 'id="job-status" data-status="queued"' in page and 'hx-trigger="every 2s"' in page
    assert "witness-graph" not in page
    services.proof_job_run(job_id=job.pk)
    fragment = client.get(
        f"/proofs/{job.public_id}/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="job-status"
    ).content.decode()
    assert fragment.lstrip().startswith('<div id="job-status" data-status="passed"')
    assert "Gate: passed" in fragment and fragment.count('class="card finding"') == 2
    assert "hx-trigger" not in fragment


def test_an_errored_job_says_why_and_offers_no_report(actors, editor, client_for, sent, settings):
    settings.STALWART_PROOF_MAX_ATTEMPTS = 1
    job = services.proof_job_submit(actor=actors["editor"], body=shop_job())
    ProofJob.objects.filter(pk=job.pk).update(status="running", attempts=1, lease_until=None)
    from django.utils import timezone

    ProofJob.objects.filter(pk=job.pk).update(lease_until=timezone.now())
    services.proof_jobs_sweep()
    client = client_for(editor)
    page = client.get(f"/proofs/{job.public_id}/").content.decode()
    assert 'id="job-error"' in page and "no result after 1 attempt(s)" in page
    assert "download-sarif" not in page
    assert client.get(f"/proofs/{job.public_id}/report.sarif").status_code == 409


def test_reports_download_from_the_page_and_stay_in_their_organisation(
    actors, auditor, outsider, client_for, sent
):
    job = _finished(actors, shop_job())
    sarif = client_for(auditor).get(f"/proofs/{job.public_id}/report.sarif")
    assert sarif.status_code == 200 and json.loads(sarif.content)["version"] == "2.1.0"
    assert "attachment" in sarif["Content-Disposition"]
    other = client_for(outsider)
    assert other.get(f"/proofs/{job.public_id}/").status_code == 404
    assert other.get(f"/proofs/{job.public_id}/report.sarif").status_code == 404
    assert f'data-job="{job.public_id}"' not in other.get("/proofs/").content.decode()


def test_the_drawing_is_deterministic_and_large_graphs_are_drawn_around_the_witness():
    doc = planted_graph()
    witness = [{"node": n, "on": None} for n in PLANTED_PATH]
    assert drawing.draw(doc, witness) == drawing.draw(doc, witness)
    big = {
        "entries": ["n0"],
        "nodes": [{"id": f"n{i}", "kind": "model"} for i in range(drawing.MAX_DRAWN + 50)],
        "edges": [{"from": f"n{i}", "to": f"n{i + 1}", "on": "call"} for i in range(299)],
    }
    drawn = drawing.draw(big, [{"node": "n5"}, {"node": "n6", "on": "call"}])
    assert drawn.partial and drawn.total_nodes == 300
    assert {n.id for n in drawn.nodes} == {"n4", "n5", "n6", "n7"}
    assert [(e.source, e.target) for e in drawn.witness_edges] == [("n5", "n6")]


def test_a_job_no_worker_takes_says_why_and_points_to_health(
    actors, editor, client_for, sent, settings
):
    import datetime as dt

    from django.core.cache import cache
    from django.utils import timezone

    from console.health import PING_CACHE_KEY

    settings.STALWART_HEALTH_WORKER_TIMEOUT = 0.3  # no worker runs here: the ping goes unanswered
    cache.delete(PING_CACHE_KEY)
    job = services.proof_job_submit(actor=actors["editor"], body=shop_job())
    client = client_for(editor)
    assert 'id="job-untaken"' not in client.get(f"/proofs/{job.public_id}/").content.decode()
    assert 'id="jobs-untaken"' not in client.get("/proofs/").content.decode()
    ProofJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - dt.timedelta(seconds=45))
    page = client.get(f"/proofs/{job.public_id}/").content.decode()
    assert 'id="job-untaken"' in page and "Queued for 4" in page
    assert "no worker answered the health ping (no worker answered within 0.3 s)" in page
    assert 'href="/health/"' in page
    listed = client.get("/proofs/").content.decode()
    assert 'id="jobs-untaken"' in listed and "no worker answered the health ping" in listed
    services.proof_job_run(job_id=job.pk)
    assert 'id="job-untaken"' not in client.get(f"/proofs/{job.public_id}/").content.decode()
    cache.delete(PING_CACHE_KEY)


@pytest.mark.parametrize(
    ("field", "content"),
    [
        ("graph", b'{"n": ' + b"1" * 5000 + b"}"),  # int() refuses past 4,300 digits: was a 500
        ("rulebook.json", b'{"x": ' + b"1" * 5000 + b"}"),
    ],
)
def test_a_malformed_json_file_is_refused_inline_by_its_field(
    field, content, editor, client_for, sent
):
    job = shop_job()
    files = {"graph": _file("graph.json", job["graph"])}
    name = field.split(".")[0]
    files[name] = _file(field if "." in field else f"{field}.json", content)
    client = client_for(editor)
    client.raise_request_exception = False
    response = client.post("/proofs/", files)
    assert response.status_code == 400
    assert f'data-field="{name}' in response.content.decode()  # the file, or a path inside it
    assert ProofJob.objects.count() == 0 and sent == []


@pytest.mark.parametrize(("field", "value"), [("name", "a\x00b")])
def test_a_malformed_form_field_is_refused_inline_by_its_name(
    field, value, editor, client_for, sent
):
    job = shop_job()
    client = client_for(editor)
    client.raise_request_exception = False
    response = client.post("/proofs/", {"graph": _file("graph.json", job["graph"]), field: value})
    assert response.status_code == 400
    assert f'data-field="{field}"' in response.content.decode()
    assert ProofJob.objects.count() == 0 and sent == []
