"""The doors a call comes in by, each driven as its user drives it, for the scenario suite.

Every door opens a session of the same catalogue and settings, gives it the person's turns and the
calls that ran, and asks for one decision; a person's yes is given the door's own way (the SDK's
`approve`, the console's approvals queue answered by an approver, the host's key for the command
line, the conversation's own yes for `Agent.chat`). What each door answers must be the same.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from stalwart_agents import Client, runtime
from stalwart_agents.cli import main as cli_main

AGENT = "assistant"


def _split(call: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the call's own fields, the check's options) of a scenario's call."""
    call = dict(call)
    options = {name: call.pop(name) for name in ("checks", "token") if name in call}
    return call, options


class LocalDoor:
    """`Client().session(...)` in this process: the SDK's `LocalSession`."""

    name = "sdk"
    can = frozenset({"token", "plan_token"})

    def open(self, catalogue: dict[str, Any], settings: dict[str, Any]) -> None:
        self.session = Client(url="").session(AGENT, catalogue=catalogue, settings=settings)

    def read(self, turn: str) -> None:
        self.session.read(turn)

    def ran(self, call: dict[str, Any], result: Any) -> None:
        self.session.record(call["tool"], call["arguments"], result, origins=call.get("origins"))

    def check(self, call: dict[str, Any]) -> dict[str, Any]:
        call, options = _split(call)
        answer = self.session.check_tool_call(
            call["tool"],
            call.get("arguments", {}),
            origins=call.get("origins"),
            labels=call.get("labels"),
            compensation_of=call.get("compensation_of"),
            plan=call.get("plan"),
            plan_token=call.get("plan_token"),
            plan_step=call.get("plan_step"),
            token=options.get("token"),
            checks=options.get("checks"),
        )
        return {"decision": answer.decision, "reasons": answer.reasons, "detail": answer.detail}

    def yes(self, call: dict[str, Any]) -> str:
        """A person's yes to exactly this call: asked first, then approved the SDK's way."""
        asked = self.session.check_tool_call(
            call["tool"], call["arguments"], origins=call.get("origins")
        )
        assert asked.decision == "confirm", asked
        return self.session.approve(asked)

    def plan_token(self, plan: dict[str, Any]) -> str:
        return self.session.approve_plan(plan)


class ConsoleDoor:
    """The console's sessions API, with an API-less signed-in editor and an approver."""

    name = "console"
    can = frozenset({"token"})

    def __init__(self, asker: Any, approver: Any) -> None:
        self.client = asker
        self.approver = approver

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        answer = self.client.post(path, json.dumps(body), content_type="application/json")
        assert answer.status_code in (200, 201), (path, answer.status_code, answer.content)
        return answer.json()

    def open(self, catalogue: dict[str, Any], settings: dict[str, Any]) -> None:
        body: dict[str, Any] = {"agent": AGENT, "catalogue": catalogue}
        if settings:
            body["settings"] = settings
        self.id = self._post("/v1/sessions", body)["id"]

    def read(self, turn: str) -> None:
        self._post(f"/v1/sessions/{self.id}/read", {"turn": turn})

    def ran(self, call: dict[str, Any], result: Any) -> None:
        self._post(f"/v1/sessions/{self.id}/record", {**call, "result": result})

    def check(self, call: dict[str, Any]) -> dict[str, Any]:
        call, options = _split(call)
        return self._post(f"/v1/sessions/{self.id}/check", {**call, **options})

    def yes(self, call: dict[str, Any]) -> str:
        asked = self.check(call)
        assert asked["decision"] == "confirm", asked
        answered = self.approver.post(f"/v1/approvals/{asked['approval']}/approve")
        assert answered.status_code == 200, answered.content
        return self.client.get(f"/v1/approvals/{asked['approval']}").json()["token"]


class CliDoor:
    """`stalwart check --agent agent.yaml`: the calls that ran as `--history`, turns as `--turn`."""

    name = "cli"
    can = frozenset({"token", "plan_token", "tamper"})

    def __init__(self, folder: Path, capsys: Any) -> None:
        self.folder = folder
        self.capsys = capsys
        self.key = "scenario-suite-key-" + "k" * 24

    def open(self, catalogue: dict[str, Any], settings: dict[str, Any]) -> None:
        data = dict(catalogue)
        if settings:
            data["settings"] = settings
        self.settings = settings
        self.catalogue = catalogue
        self.agent = self.folder / "agent.yaml"
        self.agent.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        self.turns: list[str] = []
        self.history: list[dict[str, Any]] = []
        self.signed: tuple[Any, Any] | None = None

    def read(self, turn: str) -> None:
        self.turns.append(turn)

    def ran(self, call: dict[str, Any], result: Any) -> None:
        self.history.append({**call, "result": result})

    def _wired(self) -> runtime.Wiring:
        from stalwart_agents.agent import Agent

        agent = Agent.from_file(self.agent, verify=False)
        return runtime.wiring(
            agent.session_catalogue(), key=self.key.encode(), settings=dict(self.settings)
        )

    def _signed(self) -> Any:
        wired = self._wired()
        history = wired.check.new_history("cli")
        for entry in self.history:
            done = {"agent": AGENT, **{k: v for k, v in entry.items() if k != "result"}}
            wired.check.record(history, done, entry.get("result"))
        return wired, history

    def tamper(self, change: Any) -> None:
        """Sign the history as its keeper would, then edit it behind the keeper's back."""
        _, history = self._signed()
        data = history.to_json()
        change(data)
        self.signed = (data, history.head)

    def check(self, call: dict[str, Any]) -> dict[str, Any]:
        call, options = _split(call)
        body = {**call, **options}
        (self.folder / "call.json").write_text(json.dumps(body), encoding="utf-8")
        args = ["check", "--agent", str(self.agent), "--agent-name", AGENT]
        args += ["--call", str(self.folder / "call.json")]
        if self.signed is not None:
            (self.folder / "history.json").write_text(json.dumps(self.signed[0]))
            (self.folder / "head.json").write_text(json.dumps(self.signed[1]))
            args += ["--history", str(self.folder / "history.json")]
            args += ["--history-head", str(self.folder / "head.json")]
        elif self.history:
            (self.folder / "history.json").write_text(json.dumps(self.history))
            args += ["--history", str(self.folder / "history.json")]
        for turn in self.turns:
            args += ["--turn", turn]
        self.capsys.readouterr()
        before = os.environ.get("STALWART_HISTORY_KEY")
        os.environ["STALWART_HISTORY_KEY"] = self.key
        try:
            code = cli_main(args)
        finally:
            if before is None:
                os.environ.pop("STALWART_HISTORY_KEY", None)
            else:
                os.environ["STALWART_HISTORY_KEY"] = before
        out = json.loads(self.capsys.readouterr().out)
        assert code == (1 if out["decision"] == "refuse" else 0), (code, out)
        return out

    def yes(self, call: dict[str, Any]) -> str:
        """The host that keeps the key signs the person's yes (the command line asks nobody)."""
        wired, history = self._signed()
        return wired.check.issue_token({"agent": AGENT, **call}, session=history)

    def plan_token(self, plan: dict[str, Any]) -> str:
        wired, history = self._signed()
        return wired.check.issue_plan_token(plan, session=history)


class ChatDoor:
    """`Agent.chat`'s conversation, built by the agent from the file as for a person's first turn.

    The call is decided as a call a turn plans is decided (`Conversation.decide`: the runtime
    session the conversation holds, with the file's settings, then the gate); the turns are read
    into that session and the calls that ran recorded in it, as the conversation does. A scenario's
    `checks` go in the file's `settings:`, the one place a chat's host can say them."""

    name = "chat"
    can = frozenset({"token"})

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def open(self, catalogue: dict[str, Any], settings: dict[str, Any]) -> None:
        self.catalogue, self.settings = catalogue, dict(settings)
        self.steps: list[tuple[str, Any]] = []

    def read(self, turn: str) -> None:
        self.steps.append(("read", turn))

    def ran(self, call: dict[str, Any], result: Any) -> None:
        self.steps.append(("ran", (call, result)))

    def yes(self, call: dict[str, Any]) -> str:
        self.steps.append(("yes", call))
        return "chat-door-yes"

    def _conversation(self, checks: list[str] | None) -> Any:
        from stalwart_agents.agent import Agent

        data = dict(self.catalogue)
        settings = dict(self.settings)
        if checks is not None:
            settings["checks"] = list(checks)
        if settings:
            data["settings"] = settings
        path = self.folder / "chat-agent.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return Agent.from_file(path, verify=False).conversation(user="door", agent=AGENT)

    def check(self, call: dict[str, Any]) -> dict[str, Any]:
        call, options = _split(call)
        conversation = self._conversation(options.get("checks"))
        session, token = conversation.session, None
        for step, value in self.steps:
            if step == "read":
                session.read(value)
            elif step == "ran":
                session.record_call({"agent": AGENT, **value[0]}, value[1])
            else:  # the person's yes to a call the conversation put to them
                asked = conversation.decide({"agent": AGENT, **value})
                assert asked.decision == "confirm", asked
                token = session.token_for({"agent": AGENT, **value})
        answer = conversation.decide({"agent": AGENT, **call}, token=token)
        return {"decision": answer.decision, "reasons": answer.reasons, "detail": answer.detail}
