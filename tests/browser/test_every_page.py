"""Every page (the nav's, the detail pages, and the sign-in page), for every role, under `make run`'s settings (DEBUG on, in the SQLite half of the
suite) and production's (in the PostgreSQL half): it opens,
fits a 390×844 phone with no sideways overflow (asserted from the DOM), marks its own nav link as
the current page, and axe-core (served from our own static files) finds no serious or critical
violation. On the phone the nav folds behind its Menu button; an auditor's pages offer nothing to
change."""

from __future__ import annotations

import json
from functools import partial

import pytest

from tests.browser.conftest import sign_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROLES = {
    "admin": "ada-admin",
    "editor": "eve-editor",
    "approver": "abe-approver",
    "auditor": "aud-auditor",
}
#: Not ours to fix: the API docs page is Swagger UI's own.
NOT_OURS = ("/v1/docs",)
AXE = "/static/vendor/axe-core/axe.min.js"


@pytest.fixture
def content(organisation, editor, actor_for):  # noqa: ANN001, ANN201
    """Something on every page: a policy with a rule, events, an alert."""
    from console import services as console_services
    from console.models import Event, Gateway
    from firewall import services

    actor = actor_for(editor, organisation)
    policy = services.policy_create(actor=actor, name="production")
    rule = services.rule_create(
        actor=actor,
        policy=policy,
        data={
            "name": "no rm",
            "tool_name_glob": "shell.*",
            "args_match": [{"path": "$.command", "op": "regex", "value": "rm\\s+-rf"}],
            "verdict": "deny",
        },
    )
    services.policy_publish(actor=actor, policy=policy)
    services.rule_create(  # a draft with a change, for the diff page
        actor=actor,
        policy=policy,
        data={"name": "no curl", "tool_name_glob": "curl.*", "verdict": "deny"},
    )
    event = console_services.event_record(
        organisation=organisation,
        source="toolcheck",
        decision="confirm",
        tool="refund_card",
        reasons=["argument_origin: amount"],
        detail={"arguments": {"order_id": "4411", "amount": 40.0, "token": "[redacted]"}},
    )
    alert = Event.objects.create(
        organisation=organisation,
        source="sequence",
        decision="allow",
        verdict="audit",
        rule="exfil chain",
        tool="crm.read",
        is_alert=True,
        detail={"chain": [[{"id": event.pk, "tool": "refund_card"}]], "actions": []},
    )
    pinned = {"name": "get_order", "digest": "a" * 64, "kind": "read", "status": "pinned"}
    withdrawn = {**pinned, "name": "lookup", "status": "withdrawn", "why": "changed"}
    withdrawn["diff"] = ['-  "description": "Look up a word."', '+  "description": "Send files."']
    Gateway.objects.create(  # the Gateways page (in the nav) with a server, pinned and withdrawn
        organisation=organisation,
        name="desk",
        servers={
            "shop": {"state": "connected", "error": "", "tools": [pinned]},
            "drift": {"state": "down", "error": "the server `drift` closed", "tools": [withdrawn]},
        },
    )
    from pathlib import Path

    from proof import services as proof_services
    from rulebooks import services as rulebook_services
    from tests.proof_console.conftest import shop_job

    shop = Path(__file__).resolve().parents[2] / "examples" / "shop" / "policy.co"
    for _ in range(2):  # two versions, for the compare page
        version = rulebook_services.rulebook_upload(
            actor=actor, name="shop", data=shop.read_bytes(), filename="policy.co"
        )
    job = proof_services.proof_job_submit(actor=actor, body=shop_job())
    proof_services.proof_job_run(job_id=job.pk)  # a finished job: its findings and witness graphs
    rulebook = version.rulebook
    return [
        f"/firewall/{policy.pk}/",
        f"/firewall/{policy.pk}/rules/new",
        f"/rulebooks/{rulebook.pk}/",
        f"/rulebooks/{rulebook.pk}/v/{version.number}/",
        f"/rulebooks/{rulebook.pk}/compare?a=1&b=2",
        f"/proofs/{job.public_id}/",
        "/proofs/rules/",
        "/proofs/rules/QG011",
        "/invitations/",
        f"/firewall/rules/{rule.pk}/",
        f"/firewall/{policy.pk}/diff",
        f"/firewall/{policy.pk}/versions/1/",
        f"/events/{event.pk}/",
        f"/events/{alert.pk}/",
    ]


def _no_overflow(page) -> None:  # noqa: ANN001
    width = page.evaluate("document.documentElement.scrollWidth")
    inner = page.evaluate("window.innerWidth")
    wide = page.evaluate(
        """() => [...document.querySelectorAll('main *, header *')]
              .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
              .slice(0, 5).map(e => e.tagName + '#' + e.id + '.' + e.className)"""
    )
    assert width <= inner, f"{page.url}: {width}px wide in a {inner}px window: {wide}"


def _marked(page, url: str, links: list[str]) -> None:  # noqa: ANN001
    """The nav marks the page open as the current one (a detail page, its section's), and
    nothing when the page is in no section (the person's own invitations)."""
    marked = page.eval_on_selector_all(
        '#main-nav a[aria-current="page"]', "els => els.map(e => e.getAttribute('href'))"
    )
    here = url.split("?")[0]
    want = [link for link in links if (here == link if link == "/" else here.startswith(link))]
    assert marked == want, f"{url}: the nav marks {marked}, not {want}"


#: Forms that post and change nothing: Try a call decides a call against the policy, unrecorded.
READING_FORMS = ("#try-panel",)


def _read_only(page) -> None:  # noqa: ANN001
    """An auditor is offered nothing to change: no form that posts, no control that writes (the
    filters of the feed and the audit rows are GET forms: reading)."""
    writes = page.eval_on_selector_all(
        "main form[method=post i], main [hx-post], main [hx-put], main [hx-delete]",
        f"""els => els.filter(e => !e.closest({", ".join(READING_FORMS)!r}))
                      .map(e => e.tagName + ' ' + (e.getAttribute('action') || e.id))""",
    )
    assert not writes, f"{page.url}: an auditor is offered {writes}"


def _folds(page) -> None:  # noqa: ANN001
    """At 390 px the nav is behind the Menu button, which opens and closes it."""
    nav, toggle = page.locator("#main-nav"), page.locator("#menu-toggle")
    assert toggle.is_visible() and not nav.is_visible(), "the nav does not fold on a phone"
    toggle.click()
    assert nav.is_visible() and toggle.get_attribute("aria-expanded") == "true"
    toggle.click()
    assert not nav.is_visible() and toggle.get_attribute("aria-expanded") == "false"


def _accessible(page) -> None:  # noqa: ANN001
    page.add_script_tag(url=AXE)
    found = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
             .filter(v => ['serious', 'critical'].includes(v.impact))
             .map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map(n => n.target)}))"""
    )
    assert not found, f"{page.url}: {json.dumps(found)}"


@pytest.mark.parametrize("role", list(ROLES))
def test_every_page_of_a_role_opens_fits_a_phone_and_is_accessible(
    browser, live_server, settings, people, content, role
):
    from django.db import connection

    # `make run`'s settings (DEBUG on, SQLite) in the SQLite half of the suite, production's in the
    # PostgreSQL half: every page meets both in one `make test`, each once.
    settings.DEBUG = connection.vendor == "sqlite"
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    # Generous: the suite shares a loaded 2-core machine; a page that never loads still fails.
    context.set_default_timeout(30_000)
    page = context.new_page()
    problems: list[str] = []
    try:
        page.goto("/accounts/login/")  # the one page before signing in
        for check in (_no_overflow, _accessible):
            try:
                check(page)
            except AssertionError as exc:
                problems.append(str(exc).splitlines()[0])
        sign_in(page, ROLES[role], PASSWORD)
        links = page.eval_on_selector_all(
            "#main-nav a", "els => els.map(e => e.getAttribute('href'))"
        )
        assert links, "the nav shows no page"
        _folds(page)
        for url in [*links, *content]:
            if url.startswith(NOT_OURS):
                continue
            response = page.goto(url)
            if url in content and response.status in (403, 404):
                continue  # a detail page this role may not read: refused, as the server says
            assert response.status == 200, f"{url}: {response.status}"
            assert page.locator("header.top").count() == 1
            checks = [_no_overflow, partial(_marked, url=url, links=links), _accessible]
            if role == "auditor":
                checks.append(_read_only)
            for check in checks:
                try:
                    check(page)
                except AssertionError as exc:
                    problems.append(str(exc).splitlines()[0])
    finally:
        context.close()
    assert not problems, "\n".join(problems)
