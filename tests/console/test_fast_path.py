"""The decision endpoints' steady path: few statements, nothing rebuilt per request, changes seen.

Every figure here is a statement count (`CaptureQueriesContext`), so a regression that adds a
query per decision (a key lookup, a policy reload, a second INSERT) fails a test.
"""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from console import services as console_services
from console.models import Event

pytestmark = pytest.mark.django_db

MOST_STATEMENTS_PER_DECISION = 3
DENY_RM = {
    "priority": 10,
    "name": "no rm -rf",
    "tool_name_glob": "shell.*",
    "args_match": [{"path": "$.command", "op": "regex", "value": "rm\\s+-rf"}],
    "verdict": "deny",
}
CHAIN = {
    "priority": 20,
    "name": "read then send",
    "tool_name_glob": "*",
    "verdict": "audit",
    "sequence": {
        "steps": [{"tool_glob": "files.read"}, {"tool_glob": "mail.send"}],
        "window_seconds": 60,
    },
}


@pytest.fixture
def key(admin, organisation, actor_for):
    _, plain = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="runtime", role="editor"
    )
    return plain


@pytest.fixture
def api(key):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")

    def post(url: str, body: dict):
        response = client.post(url, json.dumps(body), content_type="application/json")
        assert response.status_code in (200, 201), response.content
        return response.json()

    return post


def _statements(post, url: str, body: dict) -> tuple[dict, list[str]]:
    """The answer and the SQL statements of one request.

    Each test runs inside a transaction of its own, so the decision's transaction is a savepoint
    here; served, it is the outermost one and issues none, so savepoints are not counted.
    """
    with CaptureQueriesContext(connection) as queries:
        answer = post(url, body)
    sql = [q["sql"] for q in queries.captured_queries]
    return answer, [s for s in sql if "SAVEPOINT" not in s.split(" ", 2)[:2]]


def _policy(api, rules: list[dict]) -> None:
    body = {"name": "production", "default_verdict": "allow", "rules": rules}
    created = api("/v1/firewall/policies", body)
    api(f"/v1/firewall/policies/{created['id']}/publish", {})


def test_a_denied_call_costs_at_most_three_statements_in_the_steady_state(api):
    _policy(api, [DENY_RM, CHAIN])
    call = {"tool": "shell.run", "arguments": {"command": "rm -rf /"}, "agent": "ops"}
    api("/v1/firewall/evaluate", call)
    answer, sql = _statements(api, "/v1/firewall/evaluate", call)
    assert answer["verdict"] == "deny"
    assert len(sql) <= MOST_STATEMENTS_PER_DECISION, sql
    assert sum(s.startswith("INSERT") for s in sql) == 1
    assert Event.objects.filter(source="firewall").count() == 2


def test_an_allowed_call_read_by_sequence_rules_is_one_read_and_one_insert(api):
    _policy(api, [DENY_RM, CHAIN])
    call = {"tool": "files.read", "arguments": {}, "agent": "ops", "session": "s-1"}
    api("/v1/firewall/evaluate", call)
    answer, sql = _statements(api, "/v1/firewall/evaluate", call)
    assert answer["verdict"] == "allow"
    assert len(sql) == 2, sql
    assert sql[1].startswith("INSERT") and "console_event" in sql[1]
    # still the matchers' input: written pending in its shard, in the decision's transaction
    assert Event.objects.filter(source="firewall").latest("id").match_state == "pending"


def test_a_check_costs_at_most_three_statements_in_the_steady_state(api):
    from stalwart_agents import Agent

    desk = Agent.from_file("examples/shop/agent.yaml")
    session = api(
        "/v1/sessions",
        {"agent": "billing", "catalogue": desk.catalogue(), "rulebook": desk.rules().record},
    )["id"]
    call = {
        "tool": "refund_card",
        "arguments": {"order_id": "4411", "amount": 40.0},
        "origins": {"order_id": "typed", "amount": "typed"},
        "context": {"order_paid": False},
    }
    api(f"/v1/sessions/{session}/check", call)
    answer, sql = _statements(api, f"/v1/sessions/{session}/check", call)
    assert answer["decision"] == "refuse"
    assert len(sql) <= MOST_STATEMENTS_PER_DECISION, sql
    assert sum(s.startswith("INSERT") for s in sql) == 1
    # the session named from memory, then read once, locked, with its settings and controls
    assert len(sql) == 2 and "guard_guardsession" in sql[0], sql


def test_a_key_is_read_from_the_cache_and_its_last_use_written_once_a_minute(api):
    from console.models import ApiKey

    body = {"name": "production", "default_verdict": "allow", "rules": [DENY_RM]}
    _, first = _statements(api, "/v1/firewall/policies", body)
    call = {"tool": "shell.run", "arguments": {"command": "ls"}, "agent": "ops"}
    _, later = _statements(api, "/v1/firewall/evaluate", call)
    keyed = [s for s in first if "console_apikey" in s]
    assert [s.split(" ", 1)[0] for s in keyed] == ["SELECT", "UPDATE"]
    assert not any("console_apikey" in s for s in later), later
    assert ApiKey.objects.get().last_used_at is not None


def test_a_publish_is_seen_by_the_next_request_and_an_edit_is_not(api):
    from firewall.models import Policy

    _policy(api, [{**DENY_RM, "name": "first", "tool_name_glob": "nothing.*"}])
    call = {"tool": "shell.run", "arguments": {"command": "rm -rf /"}, "agent": "ops"}
    assert api("/v1/firewall/evaluate", call)["verdict"] == "allow"
    active = Policy.objects.get(active=True)
    api(f"/v1/firewall/policies/{active.pk}/rules", DENY_RM)
    # an edit is the draft's: version 1 still decides
    answer = api("/v1/firewall/evaluate", call)
    assert (answer["verdict"], answer["policy_version"]) == ("allow", 1)
    api(f"/v1/firewall/policies/{active.pk}/publish", {})
    answer = api("/v1/firewall/evaluate", call)
    assert (answer["verdict"], answer["policy_version"]) == ("deny", 2)


def test_a_policy_is_compiled_once_per_version_not_per_request(api, monkeypatch):
    from firewall import runtime

    compiled = []
    real = runtime.engine.compile_policy
    monkeypatch.setattr(
        runtime.engine, "compile_policy", lambda data: compiled.append(1) or real(data)
    )
    _policy(api, [DENY_RM])
    call = {"tool": "shell.run", "arguments": {"command": "ls"}, "agent": "ops"}
    for _ in range(3):
        api("/v1/firewall/evaluate", call)
    assert len(compiled) == 1


def test_a_catalogue_is_loaded_once_per_content_whichever_sessions_carry_it(api, monkeypatch):
    from guard import engine
    from guard import services as guard_services
    from stalwart_agents import Agent, runtime

    # Every cache the runtime keeps, empty: the content has been seen by nobody.
    for name in ("_built", "_digests"):
        monkeypatch.setattr(guard_services, name, type(getattr(guard_services, name))())
    for name in ("_wirings", "_catalogues", "_routers"):
        monkeypatch.setattr(runtime, name, type(getattr(runtime, name))())
    loads = []
    real = engine.load_catalogue
    monkeypatch.setattr(engine, "load_catalogue", lambda *a, **k: loads.append(1) or real(*a, **k))
    desk = Agent.from_file("examples/shop/agent.yaml")
    body = {"agent": "billing", "catalogue": desk.catalogue(), "rulebook": desk.rules().record}
    sessions = [api("/v1/sessions", body)["id"] for _ in range(2)]
    loads.clear()
    for session in sessions * 2:
        api(f"/v1/sessions/{session}/check", {"tool": "get_order", "arguments": {"order_id": "1"}})
    assert len(loads) == 1


def test_whoami_answers_who_the_key_acts_as_without_a_statement(api, key):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    client.get("/v1/whoami")
    with CaptureQueriesContext(connection) as queries:
        answer = client.get("/v1/whoami")
    assert answer.status_code == 200
    assert answer.json()["organisation"] == "acme" and answer.json()["role"] == "editor"
    assert queries.captured_queries == []
