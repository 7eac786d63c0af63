"""An editor uploads a broken rulebook in Chromium, sees the line, fixes it; an auditor sees the row."""

from __future__ import annotations

import pytest

from tests.browser.conftest import sign_in, sign_out
from tests.conftest import PASSWORD
from tests.rulebooks_console.test_rulebooks_app import BROKEN, SHOP

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_editor_fixes_a_rulebook_and_an_auditor_sees_the_upload(page, editor, auditor, tmp_path):
    broken, fixed = tmp_path / "policy.co", tmp_path / "fixed" / "policy.co"
    fixed.parent.mkdir()
    broken.write_text(BROKEN)
    fixed.write_text(SHOP)

    sign_in(page, "eve-editor", PASSWORD)
    page.goto("/rulebooks/")
    page.fill("#rb-name", "shop")
    page.set_input_files("#rb-file", str(broken))
    page.click("#upload-submit")
    highlighted = page.wait_for_selector(".src-error")
    assert highlighted.get_attribute("id") == "L7"
    assert "goto somewhere" in highlighted.inner_text()
    assert "rulebook_unsupported" in page.inner_text("#compile-errors")

    page.fill("#rb-name", "shop")
    page.set_input_files("#rb-file", str(fixed))
    page.click("#upload-submit")
    tool = page.wait_for_selector('tr.governed-tool[data-tool="refund_card"]')
    assert "refunds" in tool.inner_text() and "$order_paid" in tool.inner_text()
    sign_out(page)

    sign_in(page, "aud-auditor", PASSWORD)
    page.goto("/audit/?action=rulebook.")
    row = page.wait_for_selector('tr.audit-row[data-action="rulebook.upload"]')
    assert "changed (not recorded)" in row.inner_text()
    assert "estorne" not in page.inner_text("#audit-rows")
