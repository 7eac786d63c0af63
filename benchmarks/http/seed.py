"""The benchmark's fixtures, written into its own database: `python -m benchmarks.http.seed N`.

One organisation, an editor key, the active policy (20 tool rules and a sequence rule, so that
every evaluated call is recorded for the matchers) and N tool-check sessions whose catalogue has
30 tools. Prints them as one JSON line for the harness.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import django


def catalogue() -> tuple[dict[str, Any], dict[str, Any]]:
    """The shop example's catalogue with 25 more read tools for billing (30 tools), and its rules."""
    from stalwart_agents import Agent

    desk = Agent.from_file("examples/shop/agent.yaml")
    data = desk.catalogue()
    extra = [
        {
            "name": f"lookup_{i}",
            "description": f"Looks up record {i} of the ledger.",
            "kind": "read",
            "parameters": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1, "maxLength": 64},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                    "fields": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
                },
                "required": ["id"],
            },
        }
        for i in range(25)
    ]
    data["tools"] = [*data["tools"], *extra]
    data["agents"]["billing"]["tools"] = [
        *data["agents"]["billing"]["tools"],
        *(tool["name"] for tool in extra),
    ]
    return data, desk.rules().record


def policy() -> dict[str, Any]:
    rules = [
        {
            "priority": 10 * (i + 1),
            "name": f"no {i}",
            "tool_name_glob": f"svc{i}.*",
            "args_match": [{"path": "$.command", "op": "regex", "value": f"drop\\s+{i}"}],
            "verdict": "deny",
        }
        for i in range(20)
    ]
    rules.append(
        {
            "priority": 1000,
            "name": "read then send",
            "tool_name_glob": "*",
            "verdict": "audit",
            "sequence": {
                "steps": [{"tool_glob": "files.read"}, {"tool_glob": "mail.send"}],
                "window_seconds": 60,
            },
        }
    )
    return {"name": "production", "default_verdict": "allow", "rules": rules}


def main(sessions: int) -> dict[str, Any]:
    django.setup()
    from django.contrib.auth import get_user_model

    from console import services
    from console.access import Actor
    from console.models import Membership
    from firewall.services import policy_import, policy_publish
    from guard.services import session_create

    organisation = services.organisation_create(name="Bench", slug="bench")
    user = get_user_model().objects.create_user(username="bench-admin")
    Membership.objects.create(user=user, organisation=organisation, role="admin")
    actor = Actor(organisation=organisation, role="admin", label="user:bench", user_id=user.pk)
    _, key = services.api_key_create(actor=actor, name="bench", role="editor")
    policy_publish(actor=actor, policy=policy_import(actor=actor, data=policy()))
    data, record = catalogue()
    ids = [
        str(session_create(actor=actor, agent="billing", catalogue=data, rulebook=record).public_id)
        for _ in range(sessions)
    ]
    return {"key": key, "sessions": ids}


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]))))
