"""Upgrades: the schema and rows of the previous release migrate forward to this one.

The previous release is the last landing before this one's migrations (console 0001, guard 0002,
firewall, proof and rulebooks 0001). Its rows are written with the historical models of that state,
then every migration since runs, on SQLite and on PostgreSQL (the suite runs on both).
"""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

PREVIOUS_RELEASE = [
    ("console", "0001_initial"),
    ("guard", "0002_executor_ledger_outbox_counters"),
    ("firewall", "0001_initial"),
    ("proof", "0001_proof_jobs"),
    ("rulebooks", "0001_initial"),
]


def _migrate(targets):  # noqa: ANN001, ANN202
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


def test_the_previous_releases_rows_migrate_forward(capsys):
    old = _migrate(PREVIOUS_RELEASE)
    user = old.get_model("auth", "User").objects.create(username="ada", email="ada@example.org")
    org = old.get_model("console", "Organisation").objects.create(name="Acme", slug="acme")
    old.get_model("console", "Membership").objects.create(user=user, organisation=org, role="admin")
    old.get_model("console", "ApiKey").objects.create(
        organisation=org,
        name="agent",
        role="editor",
        prefix="stw_prev",
        key_hash="0" * 64,
        created_by_id=user.pk,
    )
    hold = old.get_model("console", "SessionHold").objects.create(
        organisation=org, agent="Desk", session="s1", reason="an alert"
    )
    policy = old.get_model("firewall", "Policy").objects.create(
        organisation=org, name="production", active=True
    )
    spec = {"priority": 10, "name": "no rm", "tool_name_glob": "shell.*", "verdict": "deny"}
    old.get_model("firewall", "Rule").objects.create(
        organisation=org, policy=policy, priority=10, name="no rm", spec=spec
    )

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    from console.models import ApiKey, SessionHold

    assert ApiKey.objects.get(prefix="stw_prev").owner_id == user.pk
    assert SessionHold.objects.get(pk=hold.pk).agent == "desk"
    from firewall.models import Policy

    published = Policy.objects.get(pk=policy.pk).published
    assert (published.number, [r["name"] for r in published.rules]) == (1, ["no rm"])
    call_command("audit_verify", "--organisation", "acme")
    assert "acme" in capsys.readouterr().out
