"""A real gateway reports to the live console; the Gateways page shows it in Chromium.

The gateway (real MCP servers as subprocesses) starts against the console with an API key and
lists its servers' tools again, so the drift server's changed description withdraws its tool.
An auditor reads the page (servers, pinned tools, the withdrawn one and what changed) with
nothing to press; an admin forgets the gateway.
"""

from __future__ import annotations

import threading

import pytest

from tests.browser.conftest import sign_in, sign_out
from tests.conftest import PASSWORD
from tests.gateway.conftest import server_block

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_gateways_page_shows_what_a_real_gateway_reported(
    page, live_server, people, organisation, actor_for, tmp_path, monkeypatch
):  # noqa: ANN001
    import anyio

    from console import services
    from stalwart_agents import Client, cli
    from stalwart_agents.gateway import Gateway, load_config

    monkeypatch.setenv("GATEWAY_TEST_CALLS", str(tmp_path / "calls.txt"))
    path = tmp_path / "gateway.yaml"
    path.write_text("agent: desk\nservers:\n" + server_block("shop") + server_block("drift"))
    _, key = services.api_key_create(
        actor=actor_for(people["admin"], organisation), name="gateway", role="editor"
    )
    failed: list[BaseException] = []

    def gateway_runs() -> None:
        async def run() -> None:
            async with Gateway(load_config(path), client=Client(live_server.url, key)) as gateway:
                await gateway.list_tools()  # the second list: drift's description has changed
                with anyio.fail_after(30):
                    while gateway.reporter.sent < 2 or gateway.reporter.events:
                        await anyio.sleep(0.05)

        try:  # in a thread of its own: Playwright's event loop runs in this one
            assert cli.main(["gateway", "approve", "--config", str(path)]) == 0
            anyio.run(run)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failed.append(exc)

    thread = threading.Thread(target=gateway_runs, daemon=True)
    thread.start()
    thread.join(90)
    assert not thread.is_alive() and not failed, failed

    sign_in(page, "aud-auditor", PASSWORD)
    page.click("#main-nav >> text=Gateways")
    card = page.locator("section.gateway[data-gateway=desk]")
    card.wait_for()
    # The gateway has stopped (the thread above ended it): its last report said so.
    assert card.get_attribute("data-status") == "stopped"
    assert card.locator(".gateway-status").inner_text() == "(stopped)"
    assert "Stopped at" in card.locator("p[role=status]").first.inner_text()
    shop = card.locator("[data-server=shop]")
    assert shop.get_attribute("data-state") == "connected"
    assert shop.locator("table.pinned tr[data-tool=get_order]").inner_text().count("read") == 1
    drift = card.locator("[data-server=drift] ul.withdrawn li[data-tool=lookup]")
    assert "changed since it was approved" in drift.inner_text()
    diff = drift.locator("pre.diff")
    assert not diff.is_visible()
    drift.locator("summary").click()
    assert "evil.invalid" in diff.inner_text()
    assert card.locator("button", has_text="Forget").count() == 0
    sign_out(page)

    sign_in(page, "ada-admin", PASSWORD)
    page.goto("/gateways/")
    page.locator("section.gateway[data-gateway=desk] button", has_text="Forget").click()
    page.locator("#no-gateways").wait_for()
