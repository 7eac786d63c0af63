"""A local fake of the providers' HTTP APIs, for the real SDKs to talk to (no network).

`FakeProvider()` binds a free port the OS gives on 127.0.0.1 and serves, in a thread:

- `POST /v1/chat/completions` -- OpenAI's chat completions (what vLLM, Ollama and LM Studio speak);
- `POST /v1/messages` -- Anthropic's messages.

Each request takes the next answer of `answers` (a list the test fills): a mapping is sent as JSON
with status 200; `(status, mapping)` with that status; `Raw(bytes)` as it is (garbage);
`Hang(seconds)` sleeps before answering (a timeout). Every request is kept in `requests` (path,
headers, body) so a test can read what the SDK sent.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Raw:
    body: bytes
    status: int = 200
    content_type: str = "application/json"


@dataclass(frozen=True)
class Hang:
    seconds: float


class FakeProvider:
    def __init__(self) -> None:
        self.answers: list[Any] = []
        self.requests: list[dict[str, Any]] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                provider.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                answer = provider.answers.pop(0) if provider.answers else (404, {"error": "none"})
                if isinstance(answer, Hang):
                    time.sleep(answer.seconds)
                    answer = (500, {"error": "too late"})
                if isinstance(answer, Raw):
                    status, data, kind = answer.status, answer.body, answer.content_type
                else:
                    status, payload = answer if isinstance(answer, tuple) else (200, answer)
                    data, kind = json.dumps(payload).encode(), "application/json"
                try:
                    self.send_response(status)
                    self.send_header("content-type", kind)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeProvider:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def openai_completion(text: str | None = None, calls: list[tuple[str, Any]] = ()) -> dict:
    """An OpenAI chat completion: a text and/or tool calls (arguments as JSON text)."""
    tool_calls = [
        {
            "id": f"call_{index}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            },
        }
        for index, (name, arguments) in enumerate(calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1,
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def anthropic_message(text: str | None = None, calls: list[tuple[str, Any]] = ()) -> dict:
    """An Anthropic message: text blocks and/or tool_use blocks."""
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    for index, (name, arguments) in enumerate(calls):
        content.append(
            {"type": "tool_use", "id": f"toolu_{index}", "name": name, "input": arguments}
        )
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "fake",
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
