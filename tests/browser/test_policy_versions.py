"""A policy's versions under a person's hands, with DEBUG on (as `make run` serves it) and off:
an edit makes a draft, the diff shows it and what it would change, a publish makes version 2
decide, and a rollback publishes a copy of version 1 as version 3. An auditor reads it all and
is offered nothing to change."""

from __future__ import annotations

import re

import pytest

from firewall.models import Policy, PolicyVersion
from tests.browser.conftest import sign_in, sign_out
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CURL_CALL = {"tool": "curl.get", "arguments": {}, "agent": "ops"}


@pytest.fixture(params=[True, False], ids=["debug", "production"])
def debug(request, settings):  # noqa: ANN001, ANN201
    # The live server runs in this process, so the setting reaches the pages it serves.
    settings.DEBUG = request.param
    return request.param


@pytest.fixture
def policy(editor, organisation, actor_for):  # noqa: ANN001, ANN201
    from firewall import services

    actor = actor_for(editor, organisation)
    policy = services.policy_create(actor=actor, name="production")
    services.rule_create(
        actor=actor,
        policy=policy,
        data={"name": "no rm", "tool_name_glob": "shell.*", "verdict": "deny"},
    )
    services.policy_publish(actor=actor, policy=policy, note="first")
    services.firewall_evaluate(actor=actor, call=CURL_CALL)  # a plain allow, unrecorded
    services.firewall_evaluate(actor=actor, call={"tool": "shell.exec", "agent": "ops"})
    return policy


def _decide(actor):  # noqa: ANN001, ANN202
    from firewall import services

    answer = services.firewall_evaluate(actor=actor, call=CURL_CALL, record=False)
    return answer["verdict"], answer["policy_version"]


def test_a_draft_is_published_diffed_and_rolled_back(
    page, debug, policy, editor, auditor, organisation, actor_for
):
    actor = actor_for(editor, organisation)
    sign_in(page, "eve-editor", PASSWORD)
    page.goto(f"/firewall/{policy.pk}/")
    assert "version 1" in page.inner_text("#published-version")
    assert page.locator("#publish").count() == 0  # nothing to publish yet

    # an edit makes a draft; version 1 still decides
    page.click("#add-rule")
    page.fill("#r-name", "no curl")
    page.fill("#r-tool", "curl.*")
    page.select_option("#r-verdict", "deny")
    page.wait_for_load_state("networkidle")
    page.click("#rule-save")
    page.wait_for_url(f"**/firewall/{policy.pk}/")
    assert "draft" in page.inner_text("#draft-state")
    assert _decide(actor) == ("allow", 1)
    from firewall import services

    services.firewall_evaluate(actor=actor, call=CURL_CALL)  # live; the draft runs in shadow

    # the diff says what the draft adds, in one line, and what it would change
    page.click("#draft-diff")
    page.wait_for_selector("#diff-added")
    assert "+ no curl: curl.* → deny" in page.inner_text("#diff-added")
    assert page.locator("#replay-summary").count() == 1
    assert "otherwise" in page.inner_text("#in-shadow-summary")
    assert "curl.get" in page.inner_text("#in-shadow-events")
    assert page.locator("header.top nav").count() == 1

    # publish from the diff: version 2 decides
    page.fill("#diff-publish input[name=note]", "block curl")
    page.click("#publish-from-diff")
    page.wait_for_url(f"**/firewall/{policy.pk}/")
    assert "version 2" in page.inner_text("#published-version")
    assert _decide(actor) == ("deny", 2)

    # a refused publish (nothing changed) keeps the whole page, DEBUG or not
    assert page.locator("#publish").count() == 0

    # any two versions diff: from the versions table
    page.click("tr.version-row[data-version='2'] >> text=with 1")
    page.wait_for_selector("#diff-added")
    assert "no curl" in page.inner_text("#diff-added")
    page.select_option("#diff-old", "2")
    page.select_option("#diff-new", "1")
    page.wait_for_selector("#diff-removed")
    assert "− no curl" in page.inner_text("#diff-removed")
    assert re.search(r"old=2", page.url)

    # roll back to version 1: a copy, published as version 3
    page.goto(f"/firewall/{policy.pk}/")
    page.click("button[aria-label='Roll back to version 1']")
    page.wait_for_url(f"**/firewall/{policy.pk}/")
    assert "version 3" in page.inner_text("#published-version")
    assert "a copy of version 1" in page.inner_text("#published-version")
    assert _decide(actor) == ("allow", 3)
    assert list(PolicyVersion.objects.order_by("number").values_list("number", "copied_from")) == [
        (1, None),
        (2, None),
        (3, 1),
    ]
    assert Policy.objects.get(pk=policy.pk).rules.count() == 1

    # an auditor reads the versions and is offered nothing to change
    sign_out(page)
    sign_in(page, "aud-auditor", PASSWORD)
    page.goto(f"/firewall/{policy.pk}/")
    assert page.locator("#publish, .rollback-form").count() == 0
    page.click("tr.version-row[data-version='2'] >> a >> nth=0")
    page.wait_for_selector("#version-rules")
    assert page.locator("main form, main input, main button, main select").count() == 0
    assert "curl.* → deny" in page.inner_text("#version-rules")
