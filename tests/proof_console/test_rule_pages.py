"""Each rule has its page, from the registry: `stalwart verify --explain`, the console's
`/proofs/rules/<id>` (every role that reads proofs; linked from every finding) and SARIF's
`helpUri` all say the same thing the registry holds, for all 29 rules."""

from __future__ import annotations

import html
import json

import pytest

from proof import services
from proof.engine import REGISTRY, render_sarif, rule_page_fields
from stalwart_agents import cli_verify
from tests.proof.conftest import verify_shop

from .conftest import planted_graph

pytestmark = pytest.mark.django_db

IDS = [info.id for info in REGISTRY]


def test_the_registry_holds_the_29_rules_of_the_chapter() -> None:
    assert len(IDS) == 29


@pytest.mark.parametrize("info", REGISTRY, ids=IDS)
def test_explain_prints_the_registry_s_page_of_the_rule(capsys, info) -> None:
    code = cli_verify.main(["--explain", info.id])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith(f"{info.id} {info.title}\n")
    for heading, text in rule_page_fields(info):
        assert f"{heading}: {text}\n" in out
    for sentence in (info.proves, info.does_not_prove, info.reads, *info.owasp):
        assert sentence in out
    assert f"Console: /proofs/rules/{info.id}\n" in out


def test_explain_of_an_unknown_rule_is_a_usage_error(capsys) -> None:
    assert cli_verify.main(["--explain", "QG999"]) == 2
    assert "no rule `QG999`" in capsys.readouterr().err


@pytest.mark.parametrize("info", REGISTRY, ids=IDS)
def test_the_console_page_of_each_rule_shows_the_registry(info, auditor, client_for) -> None:
    response = client_for(auditor).get(f"/proofs/rules/{info.id}")
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert f'data-rule="{info.id}"' in page and info.title in page
    for heading, text in rule_page_fields(info):
        assert f"<dt>{heading}</dt><dd>{text}</dd>" in page
    assert info.proves in page and info.does_not_prove in page and info.reads in page


@pytest.mark.parametrize("role", ["admin", "editor", "approver", "auditor"])
def test_every_role_that_reads_proofs_reads_the_rules(people, client_for, role) -> None:
    listing = client_for(people[role]).get("/proofs/rules/")
    assert listing.status_code == 200
    page = listing.content.decode()
    for rule_id in IDS:
        assert f'href="/proofs/rules/{rule_id}"' in page
    assert client_for(people[role]).get("/proofs/rules/QG011").status_code == 200


def test_a_person_not_signed_in_is_not_shown_a_rule(client_for) -> None:
    assert client_for().get("/proofs/rules/QG011").status_code in (302, 403)


def test_a_rule_the_registry_does_not_hold_has_no_page(auditor, client_for) -> None:
    assert client_for(auditor).get("/proofs/rules/QG999").status_code == 404


def test_every_finding_on_the_job_page_links_its_rule(actors, auditor, client_for, monkeypatch):
    monkeypatch.setattr(services, "send", lambda _pk: None)
    job = services.proof_job_submit(actor=actors["editor"], body={"graph": planted_graph()})
    services.proof_job_run(job_id=job.pk)
    job.refresh_from_db()
    page = client_for(auditor).get(f"/proofs/{job.public_id}/").content.decode()
    rules = [f["rule"] for f in job.report["findings"]]
    assert rules
    for rule_id in rules:
        assert f'href="/proofs/rules/{rule_id}"' in page


def test_sarif_help_uri_is_each_rule_s_console_page(monkeypatch) -> None:
    report = verify_shop()
    rules = json.loads(render_sarif(report))["runs"][0]["tool"]["driver"]["rules"]
    by_id = {r["id"]: r for r in rules}
    for rule_id in IDS:
        assert by_id[rule_id]["helpUri"] == f"/proofs/rules/{rule_id}"
    on_console = json.loads(render_sarif(report, console="https://stalwart.example/"))
    first = on_console["runs"][0]["tool"]["driver"]["rules"][0]
    assert first["helpUri"] == "https://stalwart.example/proofs/rules/QG001"
