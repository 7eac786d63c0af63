"""In Chromium: an admin invites a person of another organisation, who accepts once signed in; an
admin makes an approving key for a named approver on the API keys page."""

from __future__ import annotations

import pytest

from console.models import ApiKey, Membership
from tests.browser.conftest import sign_in, sign_out
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_invited_person_joins_by_accepting_in_the_pages(
    page, editor, outsider, other_organisation
):
    sign_in(page, "otto-outsider", PASSWORD)
    page.goto("/members/")
    page.fill("#id_identifier", "eve-editor")
    page.select_option("#id_role", "approver")
    page.click("form[action='/members/invite'] button[type=submit]")
    status = page.wait_for_selector("#person-invited").inner_text()
    assert "If it names a person" in status
    assert editor.email not in page.content()
    assert not Membership.objects.filter(user=editor, organisation=other_organisation).exists()
    sign_out(page)

    sign_in(page, "eve-editor", PASSWORD)
    page.click("text=Invitations (1)")
    row = page.wait_for_selector('tr[data-organisation="globex"]')
    assert "approver" in row.inner_text()
    row.query_selector("text=Accept").click()
    page.wait_for_selector("text=you joined Globex")
    membership = Membership.objects.get(user=editor, organisation=other_organisation)
    assert membership.role == "approver"
    assert "Globex" in page.inner_text("select[name=organisation]")


def test_an_admin_makes_an_approving_key_for_a_named_approver(page, admin, approver):
    sign_in(page, "ada-admin", PASSWORD)
    page.goto("/api-keys/")
    page.fill("#id_name", "pager")
    page.select_option("#id_role", "approver")
    page.select_option("#id_owner", str(approver.pk))
    page.check("#id_may_approve")
    page.click("button:has-text('Create')")
    page.wait_for_selector("#key-created")
    row = page.locator("tr", has_text="pager").inner_text()
    assert "abe-approver" in row and "yes" in row
    key = ApiKey.objects.get(name="pager")
    assert (key.owner_id, key.may_approve, key.role) == (approver.pk, True, "approver")
