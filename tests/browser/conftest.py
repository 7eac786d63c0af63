"""Chromium through Playwright, against the live console; Debian's Chromium, never a downloaded one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("STALWART_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# Playwright's sync API runs an event loop in this thread; the tests still call the ORM from it.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


# Package-wide, not session-wide: Playwright's sync API keeps its event loop marked running in this
# thread while it is open, and the suites after the browser tests (the gateway, the frameworks) run
# event loops of their own.
@pytest.fixture(scope="package")
def browser():  # noqa: ANN201
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is not installed at {CHROMIUM}: run `apt-get install chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):  # noqa: ANN001, ANN201
    context = browser.new_context(base_url=live_server.url)
    # A wait fails only when what it waits for never comes: `make test` runs the two halves side
    # by side on two cores, and a page's answer can take longer than on a quiet machine.
    context.set_default_timeout(30_000)
    page = context.new_page()
    yield page
    context.close()


def sign_in(page, username: str, password: str) -> None:  # noqa: ANN001
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url("**/")


def sign_out(page) -> None:  # noqa: ANN001
    page.click("text=Sign out")
    page.wait_for_url("**/accounts/login/")


@pytest.fixture(params=[True, False], ids=["debug", "production"])
def debug(request, settings):  # noqa: ANN001, ANN201
    """`make run`'s settings (DEBUG on) and production's, one run each. The live server runs in
    this process, so the setting reaches the pages it serves."""
    settings.DEBUG = request.param
    return request.param
