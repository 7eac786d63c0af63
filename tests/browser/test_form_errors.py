"""Every kind of form, refused in Chromium in a pt-BR organisation: its inline error is in
Portuguese, the field it names is marked aria-invalid="true", and focus is on it. Under `make run`'s
settings (DEBUG on) in the SQLite half of the suite, production's in the PostgreSQL half."""

from __future__ import annotations

import json

import pytest

from tests.browser.conftest import sign_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _rule(page, policy):  # noqa: ANN001, ANN202
    page.goto(f"/firewall/{policy.pk}/rules/new")
    page.fill("#r-name", "x")
    page.fill("#r-priority", "muito")
    page.click("#rule-save")
    page.wait_for_selector("#rule-errors")
    return "priority", "priority: precisa ser um número inteiro"


def _settings(page, policy):  # noqa: ANN001, ANN202
    page.goto("/settings/")
    page.fill("#id_notify_url", "http://example.org/hook")
    page.click("#settings-save")
    page.wait_for_selector('.field-error[data-field="notify_url"]')
    return "notify_url", "o webhook precisa usar https://"


def _tools(page, policy):  # noqa: ANN001, ANN202
    page.goto("/tools/")
    page.fill("#switch-form input[name=tool]", "refund card")
    page.click("#switch-form button")
    page.wait_for_selector('#switch-form .error[data-field="tool"]')
    return "tool", "`refund card` não é o nome de uma ferramenta"


def _rulebooks(page, policy):  # noqa: ANN001, ANN202
    page.goto("/rulebooks/")
    page.click("#upload-submit")
    page.wait_for_selector('#upload-form .error[data-field="file"]')
    return "file", "escolha um arquivo .co"


def _proofs(page, policy):  # noqa: ANN001, ANN202
    page.goto("/proofs/")
    page.fill("#pf-steps", "muitos")
    page.click("#proof-submit")
    page.wait_for_selector("#form-errors")
    return "graph", "escolha o grafo dos agentes"


def _invitations(page, policy):  # noqa: ANN001, ANN202
    page.goto("/members/")
    page.fill("#id_identifier", "eve-editor")
    page.click("form[action='/members/invite'] button[type=submit]")
    page.wait_for_selector("form[action='/members/invite'] .error")
    return "identifier", "`eve-editor` já é membro"


def _api_keys(page, policy):  # noqa: ANN001, ANN202
    page.goto("/api-keys/")
    page.fill("#id_name", "x" * 5)
    page.evaluate("document.querySelector('#id_name').value = ' '")
    page.click("form[action='/api-keys/create'] button[type=submit]")
    page.wait_for_selector("form[action='/api-keys/create'] .error")
    return "name", "Este campo é obrigatório."


def _try_a_turn(page, policy):  # noqa: ANN001, ANN202
    page.goto("/try/")
    page.fill("#turn", "mostre o pedido 4411")
    page.click("#try-turn-form summary")
    page.fill("textarea[name=catalogue]", json.dumps({"agents": {}, "tools": [{"name": 1}]}))
    page.click("#try-turn-submit")
    page.wait_for_selector("#try-turn-form .error")
    return "catalogue", "precisa ser um nome de ferramenta, não `1`"


def _import(page, policy):  # noqa: ANN001, ANN202
    page.goto("/firewall/")
    page.fill("#import-json", json.dumps({"name": "p", "rules": [{"name": "r"}]}))
    page.click("#import-form button[type=submit]")
    page.wait_for_selector("#import-errors")
    return "json", "é obrigatório"


FORMS = {
    "rule editor": _rule,
    "settings": _settings,
    "tools": _tools,
    "rulebooks": _rulebooks,
    "proofs": _proofs,
    "invitations": _invitations,
    "api keys": _api_keys,
    "try a turn": _try_a_turn,
    "policy import": _import,
}


@pytest.fixture
def policy(admin, organisation, actor_for):  # noqa: ANN001, ANN201
    from console.models import OrganisationSettings
    from firewall import services

    OrganisationSettings.objects.filter(organisation=organisation).update(language="pt-BR")
    return services.policy_create(actor=actor_for(admin, organisation), name="production")


def test_every_kind_of_form_says_its_error_in_portuguese_marks_the_field_and_focuses_it(
    page, settings, policy, editor
):
    from django.db import connection

    settings.DEBUG = connection.vendor == "sqlite"
    sign_in(page, "ada-admin", PASSWORD)
    problems = []
    for kind, submit in FORMS.items():
        name, said = submit(page, policy)
        try:
            page.wait_for_function(
                "n => document.activeElement && document.activeElement.name === n",
                arg=name,
                timeout=5_000,
            )
        except Exception:  # noqa: BLE001 - said below, with the other forms' problems
            focused = page.evaluate("document.activeElement && document.activeElement.name")
            problems.append(f"{kind}: focus is on {focused!r}, not {name}")
        marked = page.locator(f'main form [name="{name}"][aria-invalid="true"]').count()
        errors = " ".join(page.locator("main .error").all_inner_texts())
        if said not in errors:
            problems.append(f"{kind}: `{said}` not in {errors!r}")
        if not marked:
            problems.append(f"{kind}: {name} is not aria-invalid")
    assert not problems, "\n".join(problems)
