"""`Agent.chat` is a door onto the same runtime: the call a turn plans is decided as the SDK's
session and the console's sessions API decide that call after the same turn.

The router never plans a call that only S1, S2 or the confirmation reading would hold (it plans
from the turn itself), so this door is compared on the turns it does plan.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stalwart_agents import Agent

SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop" / "agent.yaml"
TURNS = [
    ("desk", "en", "show me order 4411"),
    ("desk", "pt-BR", "mostre o pedido 4412"),
    ("desk", "en", "show me the inbox"),
    # A chain: get_order runs, then the charge is put to the person.
    ("desk", "en", "charge 40 on order 4411"),
]


def _post(client, path, body):
    answer = client.post(path, json.dumps(body), content_type="application/json")
    assert answer.status_code in (200, 201), answer.content
    return answer.json()


@pytest.mark.django_db
@pytest.mark.parametrize(("agent", "language", "turn"), TURNS)
def test_agent_chat_decides_as_the_sdk_and_the_console_do(
    agent, language, turn, editor, client_for
):
    shop = Agent.from_file(SHOP, verify=False)
    reply = shop.chat(turn, user="u-1", agent=agent, language=language)
    assert reply.checks, reply.text
    planned, chat = reply.checks[-1]["call"], reply.checks[-1]["decision"]
    before = [
        done for done in reply.ran if done is not reply.ran[-1] or chat["decision"] != "allow"
    ]

    sdk = shop.session(agent, settings={"language": language})
    sdk.read(turn)
    for done in before:
        sdk.record(done["tool"], done["arguments"], done["result"])
    local = sdk.check_tool_call(
        planned["tool"], planned["arguments"], origins=planned.get("origins")
    )

    client = client_for(editor)
    settings = {"language": language}
    opened = _post(
        client,
        "/v1/sessions",
        {
            "agent": agent,
            "catalogue": shop.session_catalogue(),
            "rulebook": shop.rules().record,
            "settings": settings,
        },
    )["id"]
    _post(client, f"/v1/sessions/{opened}/read", {"turn": turn})
    for done in before:
        _post(client, f"/v1/sessions/{opened}/record", {**done, "tool": done["tool"]})
    body = {"tool": planned["tool"], "arguments": planned["arguments"]}
    if planned.get("origins"):
        body["origins"] = planned["origins"]
    console = _post(client, f"/v1/sessions/{opened}/check", body)

    answers = {
        "chat": (chat["decision"], chat["reasons"]),
        "sdk": (local.decision, local.reasons),
        "console": (console["decision"], console["reasons"]),
    }
    assert len(set(map(lambda a: (a[0], tuple(a[1])), answers.values()))) == 1, answers
    origins = [chat["detail"].get("origins"), local.detail.get("origins")]
    assert origins[0] == origins[1] == console["detail"].get("origins")
