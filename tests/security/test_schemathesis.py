"""The attack kept in the suite: schemathesis over every `/v1/` operation, with a key per role.

The console runs on a free port (pytest-django's live server, on the test database) with a
policy, a rulebook and a session in it; schemathesis reads the schema the console serves and
sends a bounded number of generated requests per operation (fixed seed), failing on any 5xx and on
any answer the schema does not describe (status code, content type, body).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer

from console import services as console_services
from stalwart_agents import Agent

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop"
ROLES = ("admin", "editor", "approver", "auditor")
# Per operation and role; STALWART_SCHEMATHESIS_EXAMPLES raises it for a longer hunt, and
# STALWART_SCHEMATHESIS_PHASES=examples,coverage,fuzzing,stateful adds the coverage phase (every
# boundary and negative case of every parameter: about three minutes more on this machine).
MAX_EXAMPLES = int(os.environ.get("STALWART_SCHEMATHESIS_EXAMPLES", "6"))
ADMIN_PHASES = os.environ.get("STALWART_SCHEMATHESIS_PHASES", "examples,fuzzing,stateful")
SEED = 20261201
CHECKS = ",".join(
    (
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
    )
)


def _seed(client, headers: dict[str, str]) -> None:
    """Objects for the generated ids to meet: a policy with a rule, a rulebook, a session."""
    desk = Agent.from_file(SHOP / "agent.yaml")
    policy = {
        "name": "seeded",
        "default_verdict": "allow",
        "rules": [
            {"priority": 10, "name": "no rm", "tool_name_glob": "shell.*", "verdict": "deny"}
        ],
    }
    bodies = [
        ("/v1/firewall/policies", policy),
        ("/v1/rulebooks", {"name": "shop", "source": (SHOP / "policy.co").read_text()}),
        ("/v1/sessions", {"agent": "billing", "catalogue": desk.catalogue()}),
    ]
    for url, body in bodies:
        response = client.post(url, json.dumps(body), content_type="application/json", **headers)
        assert response.status_code == 201, (url, response.content)


@pytest.mark.django_db(transaction=True)
def test_schemathesis_finds_no_server_error_and_no_answer_the_schema_does_not_describe(
    live_server, organisation, admin, actor_for, tmp_path
):
    from django.db import connection
    from django.test import Client

    if connection.vendor != "postgresql":
        # One pass per `make test`, to stay within its time: on PostgreSQL, where the attack
        # found what SQLite lets through (NUL in text, the types JSONB keeps).
        pytest.skip("the schemathesis pass runs in the PostgreSQL half of the suite")

    actor = actor_for(admin, organisation)
    keys = {
        role: console_services.api_key_create(actor=actor, name=f"{role}-fuzz", role=role)[1]
        for role in ROLES
    }
    _seed(Client(), {"HTTP_AUTHORIZATION": f"Bearer {keys['admin']}"})
    schema = tmp_path / "openapi.json"
    schema.write_bytes(
        OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True))
    )
    failures = []
    started = time.monotonic()
    for role, key in keys.items():
        # Every phase for the role that may do most; the others fuzz (what a role may not do
        # answers 403 before it reads the body).
        phases = ADMIN_PHASES if role == "admin" else "fuzzing"
        run = subprocess.run(
            [
                str(Path(sys.executable).with_name("st")),
                "run",
                str(schema),
                "--url",
                live_server.url,
                "--header",
                f"Authorization: Bearer {key}",
                "--checks",
                CHECKS,
                "--max-examples",
                str(MAX_EXAMPLES),
                "--seed",
                str(SEED),
                "--workers",
                "1",
                "--no-shrink",
                "--phases",
                phases,
                # With no worker in the test, health answers its documented 503 by design.
                "--exclude-path",
                "/v1/health",
                "--suppress-health-check",
                "all",
                "--request-timeout",
                "30",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
        )
        phase_lines = [line.strip() for line in run.stdout.splitlines() if " (in " in line]
        print(f"schemathesis as {role}: {'; '.join(phase_lines)}")
        if run.returncode != 0:
            failures.append(f"--- as {role} ---\n{run.stdout[-20000:]}\n{run.stderr[-2000:]}")
    print(f"schemathesis: {time.monotonic() - started:.0f} s for {len(keys)} roles")
    assert not failures, "\n".join(failures)
