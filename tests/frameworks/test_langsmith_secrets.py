"""LangSmith's traces of a guarded LangGraph agent keep a catalogue's `secret` arguments out: the
LangSmith client `langsmith_client(catalogue)` makes masks them in every run it uploads (the
model's tool calls, the tool's input, the graph's state), and the tool still runs with the value.

The real packages (langchain, langgraph, langsmith), a scripted model, and a fake LangSmith
endpoint on a free local port that keeps what it is sent: nothing leaves this machine."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import langsmith
import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from stalwart_agents.langgraph import langsmith_client, secret_anonymizer
from tests.frameworks.test_secret_arguments import CARD, CATALOGUE, paying_agent


@pytest.fixture
def endpoint(monkeypatch):
    """A fake LangSmith API on a free local port: its URL, and the bodies it was sent."""
    for name in ("TRACING", "TRACING_V2", "ENDPOINT", "API_KEY", "HIDE_INPUTS", "HIDE_OUTPUTS"):
        monkeypatch.delenv(f"LANGSMITH_{name}", raising=False)
        monkeypatch.delenv(f"LANGCHAIN_{name}", raising=False)
    sent: list[bytes] = []

    class Api(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # /info: no server features
            self._answer()

        def do_POST(self) -> None:  # /runs/multipart, /runs/batch, /runs
            sent.append(self.rfile.read(int(self.headers.get("content-length") or 0)))
            self._answer()

        do_PATCH = do_POST

        def _answer(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", sent
    server.shutdown()
    server.server_close()


def traced(client: langsmith.Client, paid: list[dict]) -> None:
    """A guarded agent pays an invoice with a card (a confirm, then the person's yes), every run
    traced to LangSmith through `client`."""
    agent = paying_agent(paid)
    config = {"configurable": {"thread_id": "secret-1"}}
    with langsmith.tracing_context(enabled=True, client=client, project_name="stalwart-tests"):
        agent.invoke({"messages": [HumanMessage("pay invoice A-1")]}, config)
        agent.invoke(Command(resume=True), config)
    client.flush()


def test_a_plain_langsmith_client_uploads_the_secret_argument(endpoint):
    """Why the helper exists: LangSmith traces the model's tool call and the tool's input."""
    url, sent = endpoint
    paid: list[dict] = []
    traced(langsmith.Client(api_url=url, api_key="test"), paid)
    assert paid == [{"invoice": "A-1", "card_number": CARD}]
    assert CARD.encode() in b"".join(sent)


def test_the_stalwart_langsmith_client_masks_a_secret_argument_in_every_run(endpoint):
    url, sent = endpoint
    paid: list[dict] = []
    traced(langsmith_client(CATALOGUE, api_url=url, api_key="test"), paid)
    assert paid == [{"invoice": "A-1", "card_number": CARD}]  # the tool has the real value
    uploaded = b"".join(sent)
    assert uploaded and b'"pay"' in uploaded  # the runs were traced, the tool's among them
    assert CARD.encode() not in uploaded
    assert b"[secret]" in uploaded and b"A-1" in uploaded  # only the secret is masked


@pytest.mark.parametrize(
    ("given", "want"),
    [
        (
            {"args": {"invoice": "A-1", "card_number": CARD}},
            {"invoice": "A-1", "card_number": "[secret]"},
        ),
        (
            {"input": f"{{'invoice': 'A-1', 'card_number': '{CARD}'}}"},
            "{'invoice': 'A-1', 'card_number': \"[secret]\"}",
        ),
        (
            {"arguments": f'{{"invoice": "A-1", "card_number": "{CARD}"}}'},
            '{"invoice": "A-1", "card_number": "[secret]"}',
        ),
        (
            {"error": f"card {CARD} declined", "args": {"card_number": CARD}},
            "card [secret] declined",
        ),
    ],
    ids=["arguments", "python_text", "json_text", "the_value_elsewhere"],
)
def test_the_anonymizer_masks_a_secret_argument_however_a_run_holds_it(given, want):
    masked = secret_anonymizer(CATALOGUE)(given)
    assert next(iter(masked.values())) == want
