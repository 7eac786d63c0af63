"""`Client` and its sessions: the tool check against the console, or in this process.

With `STALWART_URL` (and `STALWART_API_KEY`) in the environment, or given, every check goes to the
console, which keeps the session's signed history and records each decision as an event. Without
a server the same engine decides in this process, with a key this process holds. The answers are
the same either way.

Where the console cannot answer (unreachable, an error), a check raises
`SelectorUnavailableError`: the call is not made, and nothing falls back to an unchecked call.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from guard import engine


class SelectorUnavailableError(Exception):
    """The runtime or the console could not answer; the call must not be made."""


class RequestRefused(Exception):
    """The console refused the request itself (bad input, no permission); carries its answer."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"the console answered {status}: {json.dumps(body)[:500]}")
        self.status = status
        self.body = body


@dataclass(frozen=True)
class Check:
    """A decision: `allow`, `confirm` or `refuse`, its reasons and detail."""

    decision: str
    reasons: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    rule: str | None = None
    approval: str | None = None  # the request people answer, for a `confirm` from the console

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Check:
        return cls(
            str(data["decision"]),
            list(data.get("reasons", [])),
            dict(data.get("detail", {})),
            data.get("rule"),
            data.get("approval"),
        )


class ApprovalDenied(Exception):
    """A person denied the call (or the request expired): nothing runs."""


class ApprovalTimeout(Exception):
    """Nobody answered in time; the call is not made."""


Context = Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None


def _facts(context: Context) -> Mapping[str, Any] | None:
    return context() if callable(context) else context


class Client:
    """`Client()` reads `STALWART_URL` and `STALWART_API_KEY`; use it as a context manager."""

    def __init__(
        self, url: str | None = None, api_key: str | None = None, *, timeout: float = 10.0
    ) -> None:
        self.url = (url if url is not None else os.environ.get("STALWART_URL", "")).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("STALWART_API_KEY", "")
        self.timeout = timeout
        self._key = secrets.token_bytes(32)  # in-process: the runtime's own signing key

    @property
    def remote(self) -> bool:
        return bool(self.url)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def session(
        self, agent: str, *, catalogue: Mapping[str, Any], rulebook: Mapping[str, Any] | None = None
    ) -> Session:
        if self.remote:
            body = self.post(
                "/v1/sessions", {"agent": agent, "catalogue": catalogue, "rulebook": rulebook}
            )
            return RemoteSession(self, body["id"], agent)
        return LocalSession(agent, engine.ToolCheck(catalogue, key=self._key, rulebook=rulebook))

    def get(self, path: str) -> Any:
        return self._send(
            urllib.request.Request(
                self.url + path,
                method="GET",
                headers={
                    "Authorization": f"Bearer {self.api_key}",
                    "User-Agent": "stalwart-agents/1",
                },
            )
        )

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        return self._send(
            urllib.request.Request(
                self.url + path,
                data=json.dumps(body).encode(),
                method="POST",
                headers={
                    "Content-Type": "application/json",
                    "Authorization": f"Bearer {self.api_key}",
                    "User-Agent": "stalwart-agents/1",
                },
            )
        )

    def _send(self, request: urllib.request.Request) -> Any:
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            try:
                answer = json.loads(exc.read())
            except ValueError:
                answer = {"detail": exc.reason}
            if exc.code >= 500:
                raise SelectorUnavailableError(f"the console failed ({exc.code})") from exc
            raise RequestRefused(exc.code, answer) from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise SelectorUnavailableError(
                f"the console at {self.url} cannot answer: {exc}"
            ) from exc


class Session:
    """One conversation of one agent: read turns, check calls, record what ran."""

    agent: str

    def read(self, turn: str) -> None:
        raise NotImplementedError

    def check_tool_call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        origins: Mapping[str, str] | None = None,
        context: Context = None,
        token: str | None = None,
        labels: list[str] | None = None,
    ) -> Check:
        raise NotImplementedError

    def record(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        result: Any,
        *,
        origins: Mapping[str, str] | None = None,
    ) -> None:
        raise NotImplementedError

    def wait_for_approval(
        self, check: Check | str, *, timeout: float = 300.0, poll: float = 1.0
    ) -> str:
        """Wait for a person's answer to a `confirm`; return the token to check the call again with.

        Raises `ApprovalDenied` when it is denied or expires, `ApprovalTimeout` when nobody answers
        within `timeout` seconds. A session checked in this process has nobody to ask: it raises
        `SelectorUnavailableError`, and the call is not made.
        """
        raise SelectorUnavailableError(
            "no console to put the call to a person: set STALWART_URL to wait for an approval"
        )

    def on_approval(
        self,
        check: Check | str,
        callback: Callable[[str | None, str], None],
        *,
        timeout: float = 300.0,
    ) -> threading.Thread:
        """Call `callback(token_or_None, status)` from a thread once the request is answered."""

        def wait() -> None:
            try:
                callback(self.wait_for_approval(check, timeout=timeout), "approved")
            except ApprovalDenied as exc:
                callback(None, str(exc))
            except (ApprovalTimeout, SelectorUnavailableError) as exc:
                callback(None, f"unanswered: {exc}")

        thread = threading.Thread(target=wait, daemon=True)
        thread.start()
        return thread


def _call_body(tool: str, arguments: Mapping[str, Any], origins, labels) -> dict[str, Any]:  # noqa: ANN001
    body: dict[str, Any] = {"tool": tool, "arguments": dict(arguments)}
    if origins:
        body["origins"] = dict(origins)
    if labels:
        body["labels"] = list(labels)
    return body


class LocalSession(Session):
    def __init__(self, agent: str, check: engine.ToolCheck) -> None:
        self.agent = agent
        self._check = check
        self.history = check.new_history(f"local-{uuid.uuid4()}")
        self.turns: list[str] = []

    def read(self, turn: str) -> None:
        self.turns.append(turn)

    def check_tool_call(
        self,
        tool,
        arguments,
        *,
        origins=None,
        context=None,
        token=None,  # noqa: ANN001
        labels=None,
    ) -> Check:
        call = {**_call_body(tool, arguments, origins, labels), "agent": self.agent}
        try:
            decision = self._check.check(
                call, session=self.history, context=_facts(context), token=token
            )
        except Exception as exc:  # noqa: BLE001 - the runtime could not answer: no call is made
            raise SelectorUnavailableError(f"the tool check could not answer: {exc}") from exc
        return Check.from_dict(decision.to_dict())

    def record(self, tool, arguments, result, *, origins=None) -> None:  # noqa: ANN001
        call = {**_call_body(tool, arguments, origins, None), "agent": self.agent}
        self._check.record(self.history, call, result)


class RemoteSession(Session):
    def __init__(self, client: Client, session_id: str, agent: str) -> None:
        self.client = client
        self.id = session_id
        self.agent = agent

    def read(self, turn: str) -> None:
        self.client.post(f"/v1/sessions/{self.id}/read", {"turn": turn})

    def check_tool_call(
        self,
        tool,
        arguments,
        *,
        origins=None,
        context=None,
        token=None,  # noqa: ANN001
        labels=None,
    ) -> Check:
        body = _call_body(tool, arguments, origins, labels)
        facts = _facts(context)
        if facts is not None:
            body["context"] = dict(facts)
        if token:
            body["token"] = token
        return Check.from_dict(self.client.post(f"/v1/sessions/{self.id}/check", body))

    def record(self, tool, arguments, result, *, origins=None) -> None:  # noqa: ANN001
        body = {**_call_body(tool, arguments, origins, None), "result": result}
        self.client.post(f"/v1/sessions/{self.id}/record", body)

    def wait_for_approval(self, check, *, timeout=300.0, poll=1.0) -> str:  # noqa: ANN001
        request_id = check.approval if isinstance(check, Check) else check
        if not request_id:
            raise ValueError("this check asked for no approval")
        deadline = time.monotonic() + timeout
        while True:
            answer = self.client.get(f"/v1/approvals/{request_id}")
            if answer["status"] == "approved" and answer.get("token"):
                return answer["token"]
            if answer["status"] in ("denied", "expired"):
                raise ApprovalDenied(f"the call was {answer['status']}")
            if time.monotonic() >= deadline:
                raise ApprovalTimeout(f"no answer to {request_id} within {timeout:g} s")
            time.sleep(poll)
