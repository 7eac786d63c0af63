"""An approver answers a refund the model priced, in Chromium; the asker cannot; one answer only."""

from __future__ import annotations

import pytest

from guard.models import ApprovalRequest
from tests.browser.conftest import sign_in, sign_out
from tests.conftest import PASSWORD
from tests.guard_console.test_approvals import REFUND
from tests.guard_console.test_sessions_api import _open, _post

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def shop():
    from stalwart_agents import Agent
    from tests.guard_console.test_sessions_api import SHOP

    desk = Agent.from_file(SHOP)
    return desk.catalogue(), desk.rules().record


def test_an_approver_approves_once_and_the_asker_cannot(
    page, browser, live_server, shop, editor, approver, admin, client_for
):
    from console.models import Membership

    client = client_for(editor)
    session = _open(client, shop)
    body = _post(client, f"/v1/sessions/{session}/check", REFUND).json()
    assert body["decision"] == "confirm"

    # The asker, made an approver, still cannot answer their own call.
    Membership.objects.filter(user=editor).update(role="approver")
    sign_in(page, "eve-editor", PASSWORD)
    page.goto("/approvals/")
    page.on("dialog", lambda dialog: dialog.accept())
    page.click("button.approve")
    page.wait_for_selector("text=nobody approves or denies a call they asked for")
    assert ApprovalRequest.objects.get().status == "pending"
    sign_out(page)

    sign_in(page, "abe-approver", PASSWORD)
    page.goto("/approvals/")
    card = page.wait_for_selector('section.approval[data-tool="refund_card"]')
    amount = card.query_selector('tr[data-argument="amount"]')
    assert "written by the model" in amount.inner_text()
    assert "typed by the person" in card.query_selector('tr[data-argument="order_id"]').inner_text()
    assert "argument_origin: amount" in card.inner_text()

    # A second approver has the same page open and clicks after the first.
    other = browser.new_context(base_url=live_server.url).new_page()
    sign_in(other, "ada-admin", PASSWORD)
    other.goto("/approvals/")
    other.wait_for_selector("button.approve")
    # Freeze that page as it was (no live refresh), as a slow reader's would be.
    other.evaluate("document.getElementById('queue-poller').remove()")

    page.click("button.approve")
    page.wait_for_selector("#queue-empty")
    assert ApprovalRequest.objects.get().status == "approved"
    token = client.get(f"/v1/approvals/{body['approval']}").json()["token"]
    again = _post(client, f"/v1/sessions/{session}/check", {**REFUND, "token": token}).json()
    assert again["decision"] == "allow"

    other.on("dialog", lambda dialog: dialog.accept())
    other.click("button.deny")
    other.wait_for_selector("text=this request was already approved")
    assert ApprovalRequest.objects.get().status == "approved"
    assert again["reasons"] == ["confirmed"]
