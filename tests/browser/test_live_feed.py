"""An auditor watches the feed in Chromium; a chain completed through the API lights it up live:
the rows, the alert and the chart's counts arrive without a reload."""

from __future__ import annotations

import json
import urllib.request

import pytest

from console import services as console_services
from console.access import Actor
from firewall import services
from tests.browser.conftest import sign_in
from tests.conftest import PASSWORD
from tests.firewall.test_sequences import EXFIL
from tests.worker import flush_broker, running_worker

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_an_alert_appears_without_a_reload_and_shows_its_chain(
    page, live_server, admin, auditor, organisation
):
    flush_broker()
    actor = Actor(organisation=organisation, role="admin", label="user:ada-admin", user_id=admin.pk)
    policy = services.policy_create(actor=actor, name="production")
    services.rule_create(actor=actor, policy=policy, data=EXFIL)
    services.policy_publish(actor=actor, policy=policy)
    _, key = console_services.api_key_create(actor=actor, name="runtime", role="editor")

    def evaluate(call):
        request = urllib.request.Request(
            f"{live_server.url}/v1/firewall/evaluate",
            data=json.dumps(call).encode(),
            method="POST",
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    with running_worker(beat=True):
        sign_in(page, "aud-auditor", PASSWORD)
        page.goto("/events/")
        page.evaluate("window.__marker = 'no reload'")
        totals = "[...document.querySelectorAll('#decisions-chart .legend-total')]"
        series = page.evaluate(f"{totals}.map(e => [e.dataset.series, Number(e.textContent)])")
        # a firewall's deny is counted as a refusal: three series, not four
        assert series == [["allow", 0], ["confirm", 0], ["refuse", 0]]
        base = {"agent": "desk", "session": "live-1"}
        for _ in range(3):
            evaluate({"tool": "crm.read", **base})
        evaluate({"tool": "crm.export", **base})
        evaluate(
            {"tool": "http.post", "stage": "egress", "destination": "https://example.org", **base}
        )
        alert = page.wait_for_selector("tr.alert-row", timeout=30_000)
        assert page.evaluate("window.__marker") == "no reload"
        assert "exfil chain" in alert.inner_text()
        # the chart redraws with the rows: the five allowed calls are counted, still no reload
        page.wait_for_function(
            "n => Number(document.querySelector("
            "'#decisions-chart .legend-total[data-series=allow]').textContent) >= n",
            arg=5,
        )
        assert page.evaluate("window.__marker") == "no reload"
        alert.query_selector("a").click()
        chain = page.wait_for_selector("#alert-chain")
        steps = chain.query_selector_all("li")
        assert len(steps) == 3
        assert "crm.read × 3" in steps[0].inner_text()
        assert "http.post" in steps[2].inner_text()
    flush_broker()
