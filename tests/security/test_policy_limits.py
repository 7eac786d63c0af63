"""Oversized firewall policies: documented limits checked by the validator, and a fast bulk save.

The attacker saved 2,000 rules (18.8 s) and 20,000 (past the worker's timeout). Every limit is a
constant of `firewall.engine.validator`; a policy over one is refused with the path at fault, and
a policy within them is stored in one bulk write.
"""

from __future__ import annotations

import json
import time

import pytest

from firewall import engine
from firewall.engine import validator
from firewall.models import Policy, Rule

pytestmark = pytest.mark.django_db


def rule(index: int, **fields) -> dict:
    return {"priority": index + 1, "name": f"rule {index}", "verdict": "deny", **fields}


def policy(rules: list) -> dict:
    return {"name": "big", "default_verdict": "allow", "rules": rules}


def paths(data: dict) -> list[str]:
    return [issue.path for issue in engine.validate_policy(data)]


def post(client, url: str, body: dict):
    return client.post(url, json.dumps(body), content_type="application/json")


def test_a_policy_of_more_rules_than_the_limit_is_refused_before_any_rule_is_read():
    # Rules that are not even objects: the count alone refuses the policy, quickly.
    data = policy([None] * (validator.MAX_RULES_PER_POLICY + 1))
    started = time.perf_counter()
    issues = engine.validate_policy(data)
    assert time.perf_counter() - started < 0.1
    assert [issue.to_dict() for issue in issues] == [
        {
            "path": "rules",
            "message": f"a policy holds at most {validator.MAX_RULES_PER_POLICY} rules, "
            f"not {validator.MAX_RULES_PER_POLICY + 1}",
        }
    ]


def test_an_oversized_policy_posted_to_the_api_is_refused_and_nothing_is_stored(editor, client_for):
    rules = [rule(i) for i in range(validator.MAX_RULES_PER_POLICY + 1)]
    response = post(client_for(editor), "/v1/firewall/policies", policy(rules))
    assert response.status_code == 400
    assert "rules" in response.json()
    assert not Policy.objects.exists() and not Rule.objects.exists()


def test_saving_a_policy_of_two_thousand_rules_is_one_bulk_write(editor, actor_for, organisation):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from firewall import services

    actor = actor_for(editor, organisation)

    def queries(n: int, name: str) -> int:
        rules = [rule(i, tool_name_glob=f"tool{i}.*") for i in range(n)]
        with CaptureQueriesContext(connection) as captured:
            services.policy_import(actor=actor, data={**policy(rules), "name": name})
        # The rules' bulk INSERT is split in batches the database's own limits set (SQLite's
        # bound variables); every other query is counted.
        return sum(1 for q in captured if not q["sql"].startswith('INSERT INTO "firewall_rule"'))

    small, large = queries(10, "small"), queries(2_000, "large")
    # The same queries for the policy and its audit rows (and the chain's checkpoint) whatever
    # its size: nothing is written one rule at a time.
    assert large == small, (small, large)
    assert Rule.objects.count() == 2_010


def test_adding_a_rule_to_a_full_policy_is_refused(editor, actor_for, organisation, client_for):
    from firewall import services

    actor = actor_for(editor, organisation)
    full = [rule(i) for i in range(validator.MAX_RULES_PER_POLICY)]
    stored = services.policy_import(actor=actor, data=policy(full))
    response = post(client_for(editor), f"/v1/firewall/policies/{stored.pk}/rules", rule(-5))
    assert response.status_code == 400
    assert "rules" in response.json()
    assert stored.rules.count() == validator.MAX_RULES_PER_POLICY


def test_a_rule_with_more_clauses_than_the_limit_is_refused_at_its_clauses():
    clause = {"path": "$.command", "op": "eq", "value": "x"}
    many = rule(0, args_match=[clause] * (validator.MAX_CLAUSES_PER_RULE + 1))
    assert paths(policy([many])) == ["rules[0].args_match"]


def test_a_membership_clause_with_more_values_than_the_limit_is_refused_at_its_value():
    values = [str(i) for i in range(validator.MAX_CLAUSE_VALUES + 1)]
    many = rule(0, args_match=[{"path": "$.command", "op": "in", "value": values}])
    assert paths(policy([many])) == ["rules[0].args_match[0].value"]


def test_a_regex_longer_than_the_limit_is_refused_at_its_value():
    long = "a" * (validator.MAX_PATTERN_LENGTH + 1)
    data = policy([rule(0, args_match=[{"path": "$.command", "op": "regex", "value": long}])])
    assert paths(data) == ["rules[0].args_match[0].value"]


def test_a_sanitize_pattern_longer_than_the_limit_is_refused_at_its_index():
    long = "a" * (validator.MAX_PATTERN_LENGTH + 1)
    data = policy([rule(0, verdict="sanitize", sanitize={"patterns": ["ok", long]})])
    assert paths(data) == ["rules[0].sanitize.patterns[1]"]


def test_a_sanitizer_with_more_patterns_than_the_limit_is_refused_at_its_patterns():
    patterns = [f"secret{i}" for i in range(validator.MAX_SANITIZE_PATTERNS + 1)]
    data = policy([rule(0, verdict="sanitize", sanitize={"patterns": patterns})])
    assert paths(data) == ["rules[0].sanitize.patterns"]


def test_an_egress_list_with_more_entries_than_the_limit_is_refused_at_the_list():
    hosts = [f"h{i}.example.org" for i in range(validator.MAX_EGRESS_ENTRIES + 1)]
    data = policy([rule(0, stage="egress", egress={"deny": hosts})])
    assert paths(data) == ["rules[0].egress.deny"]


def test_a_sequence_with_more_steps_than_the_limit_is_refused_at_its_steps():
    steps = [{"tool_glob": f"t{i}.*"} for i in range(validator.MAX_SEQUENCE_STEPS + 1)]
    data = policy([rule(0, verdict="audit", sequence={"steps": steps, "window_seconds": 60})])
    assert paths(data) == ["rules[0].sequence.steps"]
