"""An editor proves a graph in Chromium: the job's progress and result appear without a reload,
its page shows the finding with the witness drawn over the graph, and the SARIF downloads."""

from __future__ import annotations

import json

import pytest

from tests.browser.conftest import sign_in
from tests.conftest import PASSWORD
from tests.proof_console.conftest import planted_graph
from tests.worker import flush_broker, running_worker

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

WITNESS = [
    "desk_router",
    "desk_model",
    "desk_handoff_reports",
    "reports_router",
    "reports_check_export_customers",
    "reports_tool_export_customers",
]


def test_an_editor_proves_a_graph_and_reads_its_finding_over_the_graph(page, editor, tmp_path):
    flush_broker()
    graph = tmp_path / "graph.json"
    graph.write_text(json.dumps(planted_graph()))
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "qls-graph/1", "nodes": []}')

    with running_worker():
        sign_in(page, "eve-editor", PASSWORD)
        page.click("nav >> text=Proofs")
        page.wait_for_url("**/proofs/")
        page.evaluate("window.__marker = 'no reload'")

        # a graph that does not load: every error inline, by field path, nothing submitted
        page.set_input_files("#pf-graph", str(broken))
        page.click("#proof-submit")
        errors = page.wait_for_selector("#form-errors")
        assert "graph.entries" in errors.inner_text()
        assert page.query_selector_all("tr.proof-row") == []

        page.set_input_files("#pf-graph", str(graph))
        page.fill("#pf-name", "deputy")
        page.click("#proof-submit")
        page.wait_for_selector("#submitted")
        row = page.wait_for_selector("tr.proof-row")
        assert row.query_selector("progress") is not None
        finished = page.wait_for_selector('tr.proof-row[data-status="failed"]', timeout=60_000)
        assert page.evaluate("window.__marker") == "no reload"
        assert "failed" in finished.inner_text() and "deputy" in finished.inner_text()
        assert finished.query_selector("progress").get_attribute("value") == "100"

        finished.query_selector("a").click()
        page.wait_for_url("**/proofs/*/")
        assert "Gate: failed" in page.inner_text("#gate")
        finding = page.wait_for_selector('article.finding[data-rule="QG011"]')
        text = finding.inner_text()
        assert "Confused deputy" in text and "agent.yaml:10" in text and "LLM06:2026" in text
        svg = finding.query_selector("svg.witness-graph")
        assert svg is not None and svg.is_visible()
        marked = [g.get_attribute("data-node") for g in svg.query_selector_all("g.node.witness")]
        assert sorted(marked) == sorted(WITNESS)
        assert len(svg.query_selector_all("path.edge.witness")) == len(WITNESS) - 1

        with page.expect_download() as download:
            page.click("#download-sarif")
        sarif = json.loads(open(download.value.path(), encoding="utf-8").read())
        assert sarif["version"] == "2.1.0"
        assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["QG011"]
    flush_broker()
