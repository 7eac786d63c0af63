"""`Agent.chat` connected to a live console: each conversation takes the console's Settings.

The language, `on_unread` (where the agent says nothing) and the modes of the checks of what was
said are read from `GET /v1/settings` at a conversation's first turn and kept for it; where the
console cannot answer, the turn raises `SelectorUnavailableError` and nothing runs.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from console.models import OrganisationSettings
from stalwart_agents import Agent, SelectorUnavailableError

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = '''
"""A desk that shows orders and sends receipts (the console's Settings tests)."""

ORDER_ID = {"type": "string", "minLength": 1}
TOOLS = [
    {
        "name": "get_order",
        "description": "Shows an order: its status and the amount.",
        "kind": "read",
        "parameters": {
            "type": "object",
            "properties": {"order_id": ORDER_ID},
            "required": ["order_id"],
        },
        "idempotent": True,
    },
    {
        "name": "send_receipt",
        "description": "Sends the receipt of an order to the customer's e-mail address.",
        "kind": "sends_out",
        "parameters": {
            "type": "object",
            "properties": {"order_id": ORDER_ID, "email": {"type": "string", "format": "email"}},
            "required": ["order_id", "email"],
        },
        "after": [{"tool": "get_order", "bind": {"order_id": "order_id"}}],
        "idempotent": True,
        "irreversible": True,
    },
]
RAN = []


def get_order(order_id):
    RAN.append(("get_order", order_id))
    return {"order_id": order_id, "status": "paid", "amount": 40.0}


def send_receipt(order_id, email):
    RAN.append(("send_receipt", order_id))
    return {"order_id": order_id, "sent_to": email}
'''

AGENT = """
agents:
  desk:
    model: "anthropic:claude-sonnet-5-5"
    tools: [get_order, send_receipt]
tools:
  - python: consolestate_desk_tools
"""


@pytest.fixture
def desk(tmp_path):  # noqa: ANN001, ANN201
    folder = tmp_path / "desk"
    folder.mkdir()
    (folder / "consolestate_desk_tools.py").write_text(TOOLS)
    (folder / "agent.yaml").write_text(textwrap.dedent(AGENT))
    return folder / "agent.yaml"


@pytest.fixture
def console(live_server, monkeypatch, admin, organisation, actor_for):  # noqa: ANN001, ANN201
    """A live console, and the environment a connected agent reads (a key of the auditor role:
    reading the settings is all `Agent.chat` asks of it)."""
    from console import services

    _, key = services.api_key_create(
        actor=actor_for(admin, organisation), name="desk", role="auditor"
    )
    monkeypatch.setenv("STALWART_URL", live_server.url)
    monkeypatch.setenv("STALWART_API_KEY", key)
    return organisation


def _settings(organisation, **values):  # noqa: ANN001, ANN003
    OrganisationSettings.objects.filter(organisation=organisation).update(**values)


def test_a_conversation_reads_its_turns_in_the_consoles_language(desk, console):
    _settings(console, language="pt-BR")
    agent = Agent.from_file(desk, verify=False)
    reply = agent.chat("mostre o pedido 4411", user="bia")
    assert [r["tool"] for r in reply.ran] == ["get_order"]
    assert reply.plan.language == "pt-BR"


def test_the_setting_is_taken_at_the_first_turn_and_kept_for_the_conversation(desk, console):
    _settings(console, language="pt-BR")
    agent = Agent.from_file(desk, verify=False)
    agent.chat("mostre o pedido 4411", user="bia")
    _settings(console, language="en")
    kept = agent.chat("mostre o pedido 4412", user="bia")
    assert [r["tool"] for r in kept.ran] == ["get_order"]
    fresh = agent.chat("mostre o pedido 4412", user="caio")
    assert fresh.ran == [] and fresh.plan.kind == "unread"


def test_an_agent_that_says_nothing_takes_the_consoles_on_unread(desk, console):
    agent = Agent.from_file(desk, verify=False)
    agent.chat("tell me a joke", user="dan")
    refused = agent.chat("tell me a joke", user="dan")
    assert (refused.plan.action, refused.waiting) == ("refuse", None)

    _settings(console, on_unread="ask")
    agent.chat("tell me a joke", user="eva")
    asked = agent.chat("tell me a joke", user="eva")
    assert (asked.plan.action, asked.waiting) == ("ask", "ask_model")
    assert not asked.model_called


def test_a_conversation_runs_the_said_checks_in_the_consoles_modes(desk, console):
    turn = "send the receipt for order 4411 to ana@x.com"
    # The read the router chains first does not send: S1 (the turn says "send") holds it.
    held = Agent.from_file(desk, verify=False).chat(turn, user="fab")
    assert held.ran == []
    assert [(c["call"]["tool"], c["decision"]["reasons"]) for c in held.checks] == [
        ("get_order", ["s1_veto"])
    ]
    assert held.checks[0]["decision"]["decision"] == "confirm"

    _settings(console, s1_veto="refuse")
    strict = Agent.from_file(desk, verify=False).chat(turn, user="fab")
    assert strict.checks[0]["decision"]["decision"] == "refuse"

    _settings(console, s1_veto="off")
    run = Agent.from_file(desk, verify=False).chat(turn, user="fab")
    assert [r["tool"] for r in run.ran] == ["get_order"]
    assert run.waiting == "confirm" and run.plan.call["tool"] == "send_receipt"


def test_a_console_that_cannot_answer_stops_the_turn(desk, monkeypatch):
    monkeypatch.setenv("STALWART_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("STALWART_API_KEY", "stw_x")
    agent = Agent.from_file(desk, verify=False)
    ran = sys.modules["consolestate_desk_tools"].RAN
    before = len(ran)
    with pytest.raises(SelectorUnavailableError):
        agent.chat("show order 4411", user="gil")
    with pytest.raises(SelectorUnavailableError):  # nothing was kept: the next turn asks again
        agent.chat("show order 4411", user="gil")
    assert len(ran) == before


def test_a_key_the_console_refuses_stops_the_turn(desk, console, monkeypatch):
    monkeypatch.setenv("STALWART_API_KEY", "stw_not_a_key")
    agent = Agent.from_file(desk, verify=False)
    with pytest.raises(SelectorUnavailableError, match="refused"):
        agent.chat("show order 4411", user="hal")


def test_a_setting_this_sdk_does_not_know_stops_the_turn(desk, console):
    # A console newer than this SDK (or a row written around the console's validation).
    _settings(console, s2_veto="twice")
    agent = Agent.from_file(desk, verify=False)
    with pytest.raises(SelectorUnavailableError, match="s2_veto"):
        agent.chat("show order 4411", user="ivo")
