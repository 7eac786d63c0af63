"""An editor changes settings in Chromium, an auditor sees the audit row, an invalid value is refused."""

from __future__ import annotations

import pytest

from console.models import AuditRow, OrganisationSettings
from tests.browser.conftest import sign_in, sign_out
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_editor_changes_settings_and_an_auditor_sees_the_row(
    page, editor, auditor, organisation
):
    sign_in(page, "eve-editor", PASSWORD)
    page.goto("/settings/")
    page.select_option("#id_language", "pt-BR")
    page.select_option("#id_on_unread", "ask")
    page.click("#settings-save")
    page.wait_for_selector("#settings-saved")
    page.reload()
    assert page.input_value("#id_language") == "pt-BR"
    assert page.input_value("#id_on_unread") == "ask"
    saved = OrganisationSettings.objects.get(organisation=organisation)
    assert (saved.language, saved.on_unread) == ("pt-BR", "ask")

    # A value the form never offers (as a tampered page would send) is refused inline.
    page.evaluate(
        """() => { const s = document.querySelector('#id_on_unread');
                   const o = document.createElement('option'); o.value = 'always'; o.text = 'always';
                   s.appendChild(o); }"""
    )
    page.select_option("#id_on_unread", "always")
    error = page.wait_for_selector('.field-error[data-field="on_unread"]')
    # the organisation now reads pt-BR: its errors are said in Portuguese (Django's own message)
    assert "on_unread: Faça uma escolha válida" in error.inner_text()
    page.click("#settings-save")
    page.wait_for_selector('.field-error[data-field="on_unread"]')
    assert OrganisationSettings.objects.get(organisation=organisation).on_unread == "ask"
    assert AuditRow.objects.filter(organisation=organisation).count() == 1
    sign_out(page)

    sign_in(page, "aud-auditor", PASSWORD)
    page.goto("/audit/")
    row = page.wait_for_selector('tr.audit-row[data-action="settings.update"]')
    text = row.inner_text()
    assert "user:eve-editor" in text
    assert "language" in text and "pt-BR" in text
    assert "on_unread" in text and "ask" in text
    page.goto("/settings/")
    assert page.locator("#id_on_unread").count() == 0
    assert page.inner_text("#value-on_unread") == "ask"


def test_the_event_feed_pages_without_a_reload(page, auditor, organisation):
    from console import services

    for i in range(30):
        services.event_record(
            organisation=organisation, source="firewall", decision="allow", tool=f"tool{i:02d}"
        )
    sign_in(page, "aud-auditor", PASSWORD)
    page.goto("/events/")
    assert page.locator("tr.event-row").count() == 25
    page.evaluate("window.__marker = 'still here'")
    page.click("a.next")
    page.wait_for_function("document.querySelectorAll('tr.event-row').length === 5")
    assert page.evaluate("window.__marker") == "still here"
    page.select_option("select[name=decision]", "refuse")
    page.click("form.filters button")
    page.wait_for_selector("text=No events match.")


def test_the_health_page_reports_each_part(page, admin, settings):
    settings.STALWART_HEALTH_WORKER_TIMEOUT = 0.5
    sign_in(page, "ada-admin", PASSWORD)
    page.goto("/health/")
    report = page.wait_for_selector("#health-report")
    assert page.locator('tr[data-check="database"].ok').count() == 1
    assert page.locator('tr[data-check="broker"].ok').count() == 1
    assert report.get_attribute("data-ok") in ("true", "false")


def test_an_admin_rotates_the_bundle_key_only_once_the_confirm_is_accepted(
    page, admin, organisation
):
    from console import bundles

    before = bundles.key_ring(organisation.pk)
    sign_in(page, "ada-admin", PASSWORD)
    page.goto("/settings/")
    assert before.current.kid in page.inner_text("#bundle-key-current")
    assert before.next.public in page.inner_text("#bundle-key-next")
    asked: list[str] = []

    def dismiss(dialog) -> None:  # noqa: ANN001
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    page.click("#bundle-key-rotate-button")
    page.wait_for_timeout(300)
    assert asked and "fails closed" in asked[0]
    assert bundles.key_ring(organisation.pk).current.kid == before.current.kid  # not rotated

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#bundle-key-rotate-button")
    page.wait_for_selector(".messages li")
    assert "rotated to generation 1" in page.inner_text(".messages")
    assert before.next.kid in page.inner_text("#bundle-key-current")
    assert before.current.kid in page.inner_text("#bundle-key-previous")
    assert AuditRow.objects.filter(action="bundle_key.rotate").count() == 1


@pytest.mark.parametrize("make_run", [True, False], ids=["debug", "production"])
def test_a_click_on_save_at_a_persons_pace_right_after_typing_is_never_lost(
    page, admin, organisation, settings, make_run
):
    """Pressing Save blurs the field just typed in, whose change starts the live check; its error,
    shown or cleared above the button, used to move the button before the press ended, so the
    click (and the save) was lost. A press of 300 ms, as a person clicks, now always submits."""
    settings.DEBUG = make_run
    sign_in(page, "ada-admin", PASSWORD)
    page.goto("/settings/")
    page.fill("#id_notify_url", "http://hooks.example.org/alerts")
    page.click("#settings-save", delay=300)
    # Focus moves to the field only on a refused submit, never on the live check.
    page.wait_for_function(
        "document.activeElement && document.activeElement.name === 'notify_url'", timeout=5_000
    )
    assert page.get_attribute("#id_notify_url", "aria-invalid") == "true"

    page.fill("#id_notify_url", "https://hooks.example.org/alerts")
    page.click("#settings-save", delay=300)  # the error above the button goes: it moves up
    page.wait_for_selector("#settings-saved", timeout=5_000)
    assert OrganisationSettings.objects.get(organisation=organisation).notify_url == (
        "https://hooks.example.org/alerts"
    )
