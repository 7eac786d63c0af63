"""The migration to versions: every policy that existed is its version 1, published, and decides
exactly as it did (its compiled copy keeps its key)."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("firewall", "0001_initial"), ("console", "0004_holds_and_switches_in_normal_form")]
AFTER = [("firewall", "0004_policy_draft_key")]


def _migrate(targets):  # noqa: ANN001, ANN202
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_every_existing_policy_becomes_its_published_version_1():
    from firewall.runtime import content_digest

    old = _migrate(BEFORE)
    Organisation = old.get_model("console", "Organisation")
    Policy = old.get_model("firewall", "Policy")
    Rule = old.get_model("firewall", "Rule")
    org = Organisation.objects.create(name="Old", slug="old")
    key = uuid.uuid4()
    policy = Policy.objects.create(
        organisation=org, name="prod", default_verdict="audit", active=True, version=key
    )
    spec = {"priority": 10, "name": "no rm", "tool_name_glob": "shell.*", "verdict": "deny"}
    rule = Rule.objects.create(
        organisation=org, policy=policy, priority=10, name="no rm", spec=spec
    )
    Policy.objects.create(organisation=org, name="empty", default_verdict="allow")
    try:
        new = _migrate(AFTER)
        Policy = new.get_model("firewall", "Policy")
        migrated = Policy.objects.select_related("published").get(pk=policy.pk)
        version = migrated.published
        assert (version.number, version.key, version.default_verdict) == (1, key, "audit")
        assert version.rules == [{"id": rule.pk, **spec}]
        assert version.digest == content_digest("audit", version.rules)
        empty = Policy.objects.select_related("published").get(name="empty")
        assert (empty.published.number, empty.published.rules) == (1, [])
        assert migrated.draft_key is None  # the draft is version 1: nothing runs in shadow
    finally:
        # Every app back at its latest migration, not only the firewall: BEFORE took the console
        # back too, and the tests after this one run on the whole schema.
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
