"""The shop agent proposes a refund the model priced; an approver approves it in Chromium; the
refund runs once; a second approver's click and the asker's own click change nothing."""

from __future__ import annotations

import threading

import pytest

from guard.models import ApprovalRequest, Effect
from tests.browser.conftest import sign_in, sign_out
from tests.conftest import PASSWORD
from tests.guard_console.test_approvals import REFUND

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def shop():
    from stalwart_agents import Agent
    from tests.guard_console.test_sessions_api import SHOP

    desk = Agent.from_file(SHOP)
    return desk.catalogue(), desk.rules().record


def test_an_approved_refund_runs_once_and_the_asker_cannot_approve_it(
    page, browser, live_server, shop, editor, approver, admin, organisation, actor_for
):
    from console import services
    from console.models import Membership
    from stalwart_agents import Client, Replayed

    # The agent's key is the editor's, for whom it acts: the admin who made it may still answer.
    _, key = services.api_key_create(
        actor=actor_for(admin, organisation), name="shop agent", role="editor", owner_id=editor.pk
    )
    session = Client(url=live_server.url, api_key=key).session(
        "billing", catalogue=shop[0], rulebook=shop[1]
    )
    refunds: dict[str, dict] = {}

    def refund_card(arguments, context):  # noqa: ANN001, ANN202 - the shop's tool, keyed
        if context.key in refunds:
            return Replayed(refunds[context.key])
        refunds[context.key] = {"order_id": arguments["order_id"], "refunded": arguments["amount"]}
        return refunds[context.key]

    call = {"origins": REFUND["origins"], "context": REFUND["context"], "user": "eve-editor"}
    asked = session.execute("refund_card", REFUND["arguments"], refund_card, **call)
    assert asked["outcome"] == "CONFIRM"
    outcomes: list[dict] = []

    def agent_waits_then_runs() -> None:
        token = session.wait_for_approval(asked, timeout=40, poll=0.2)
        outcomes.append(
            session.execute("refund_card", REFUND["arguments"], refund_card, token=token, **call)
        )

    waiting = threading.Thread(target=agent_waits_then_runs, daemon=True)
    waiting.start()

    # The asker, made an approver, still cannot answer their own call.
    Membership.objects.filter(user=editor).update(role="approver")
    sign_in(page, "eve-editor", PASSWORD)
    page.goto("/approvals/")
    page.on("dialog", lambda dialog: dialog.accept())
    # The page offers the asker no button, and the server refuses a forged answer all the same.
    page.wait_for_selector("text=You asked for this call: another person answers it.")
    assert page.locator("button.approve").count() == 0
    public_id = ApprovalRequest.objects.get().public_id
    forged = page.request.post(
        f"/approvals/{public_id}/approve",
        headers={
            "X-CSRFToken": page.evaluate("document.cookie.match(/csrftoken=([^;]+)/)[1]"),
            "Referer": page.url,
        },
    )
    assert forged.status == 403
    assert ApprovalRequest.objects.get().status == "pending"
    sign_out(page)

    sign_in(page, "abe-approver", PASSWORD)
    page.goto("/approvals/")
    card = page.wait_for_selector('section.approval[data-tool="refund_card"]')
    amount = card.query_selector('tr[data-argument="amount"]')
    assert "written by the model" in amount.inner_text()
    assert "typed by the person" in card.query_selector('tr[data-argument="order_id"]').inner_text()
    assert "argument_origin: amount" in card.inner_text()
    # the question from the catalogue's words, never `refund_card` with `order_id`
    question = (
        "Refunds an amount of an order to the card it was paid with (order id 4411 and amount "
        "40.00). Shall I go ahead?"
    )
    assert card.query_selector("p.question").inner_text() == question

    # A second approver has the same page open and clicks after the first.
    other = browser.new_context(base_url=live_server.url).new_page()
    sign_in(other, "ada-admin", PASSWORD)
    other.goto("/approvals/")
    other.wait_for_selector("button.approve")
    # Freeze that page as it was (no live refresh), as a slow reader's would be.
    other.evaluate("document.getElementById('queue-poller').remove()")

    asked: list[str] = []
    page.on("dialog", lambda dialog: asked.append(dialog.message))
    page.click("button.approve")
    page.wait_for_selector("#queue-empty")
    assert asked == [question]  # the Approve dialog asks the same question
    waiting.join(timeout=40)
    assert outcomes and outcomes[0]["outcome"] == "SUCCEEDED", outcomes
    assert list(refunds.values()) == [{"order_id": "4411", "refunded": 40.0}]

    other.on("dialog", lambda dialog: dialog.accept())
    other.click("button.deny")
    other.wait_for_selector("text=this request was already approved")
    assert ApprovalRequest.objects.get().status == "approved"

    # The agent retries (its answer was lost, say): the ledger answers, the refund does not rerun.
    token = ApprovalRequest.objects.get().token
    again = session.execute("refund_card", REFUND["arguments"], refund_card, token=token, **call)
    assert again["outcome"] == "SUCCEEDED" and again["duplicate"] is True
    assert len(refunds) == 1 and Effect.objects.get().status == "done"

    # The tools page counts one effect and one suppressed duplicate.
    page.goto("/tools/")
    row = page.wait_for_selector('tr[data-tool="refund_card"]').inner_text().split("\t")
    assert row[1:8] == ["1", "0", "0", "1", "0", "0", "1"]
