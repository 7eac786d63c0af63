"""An admin sets the modes of the checks of what was said in Chromium, under DEBUG on (`make run`).

The change is saved, shown after a reload, audited and read by the selector the tool check asks;
a mode the page does not offer is refused inline; an editor sees the modes and cannot change them.
"""

from __future__ import annotations

import pytest

from console import selectors
from console.models import AuditRow
from tests.browser.conftest import sign_in, sign_out
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def debug(settings):  # noqa: ANN001, ANN201
    # The live server runs in this process, so the setting reaches the pages it serves.
    settings.DEBUG = True
    return True


def test_an_admin_sets_the_said_modes_and_an_editor_only_sees_them(
    page, debug, admin, editor, organisation
):
    sign_in(page, "ada-admin", PASSWORD)
    page.goto("/settings/")
    for name in ("grounded", "s1_veto", "s2_veto", "confirm_read"):
        assert page.input_value(f"#id_{name}") == "confirm"
    page.select_option("#id_s1_veto", "refuse")
    page.select_option("#id_confirm_read", "off")
    page.click("#settings-save")
    page.wait_for_selector("#settings-saved")
    page.reload()
    assert page.input_value("#id_s1_veto") == "refuse"
    assert page.input_value("#id_confirm_read") == "off"
    assert selectors.said_modes(organisation.pk) == {
        "grounded": "confirm",
        "s1_veto": "refuse",
        "s2_veto": "confirm",
        "confirm_read": "off",
    }
    row = AuditRow.objects.get(organisation=organisation, action="settings.update")
    assert row.actor == "user:ada-admin"
    assert row.changes == {
        "s1_veto": {"old": "confirm", "new": "refuse"},
        "confirm_read": {"old": "confirm", "new": "off"},
    }

    # `grounded` never refuses: a page that offers it anyway is answered with an inline error.
    page.evaluate(
        """() => { const s = document.querySelector('#id_grounded');
                   const o = document.createElement('option'); o.value = 'refuse';
                   o.text = 'refuse'; s.appendChild(o); }"""
    )
    page.select_option("#id_grounded", "refuse")
    error = page.wait_for_selector('.field-error[data-field="grounded"]')
    assert "grounded: Select a valid choice" in error.inner_text()
    page.click("#settings-save")
    page.wait_for_selector('.field-error[data-field="grounded"]')
    assert selectors.said_modes(organisation.pk)["grounded"] == "confirm"
    assert AuditRow.objects.filter(action="settings.update").count() == 1
    sign_out(page)

    sign_in(page, "eve-editor", PASSWORD)
    page.goto("/settings/")
    assert page.locator("#id_s1_veto").count() == 0
    assert page.inner_text("#value-s1_veto") == "refuse"
    assert page.inner_text("#value-confirm_read") == "off"
