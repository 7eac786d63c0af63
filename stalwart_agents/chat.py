"""`Agent.chat`'s guarded path in this process: the firewall after the tool check, then the executor.

A turn goes router -> plan -> tool check -> firewall -> executor -> reply. The router and the tool
check are `router.engine.Conversation`'s; this module gives it the two steps the host supplies:

- **The firewall** (`LocalFirewall`, plugged in as the conversation's gate by `firewall_gate`): the
  policy file agent.yaml names (`firewall: ./firewall.json`), validated by the firewall's own
  validator and compiled once, then compiled again whenever the file changes. Every call the tool
  check did not refuse is evaluated at the `tool_call` stage: `deny` refuses (the reply names the
  rule), `require_approval` becomes a confirm (once the person said yes to exactly that call, it
  goes on), `allow`, `audit` and `cap_cost` go on, and `sanitize` runs the call with the cleaned
  arguments (which the tool check decides again). A firewall that cannot answer -- its file gone,
  unreadable or no longer a valid policy, an evaluation that fails -- raises
  `SelectorUnavailableError`, and no call is made.
- **The executor** (`ChatExecutor`): the rules `LocalSession.execute` runs by (`execute_here`): a
  write's idempotency key derived from the intent, an in-memory ledger (a turn that plans the
  same write again with nothing in between answers `Replayed` and nothing runs twice), tenancy, a
  timeout retried with the same key. A tool function written `(arguments, context)` gets the
  `ExecutionContext` (`context.key`, `context.tenant`); any other function is called with the
  arguments as keywords, as the shop's `tools.py` is.
"""

from __future__ import annotations

import inspect
import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from guard.engine.decision import ALLOW, CONFIRM, REFUSE, Decision
from guard.engine.execution import ExecutionContext, Replayed
from router.engine.conversation import GateAnswer
from stalwart_agents.client import SelectorUnavailableError, Tool, execute_here
from stalwart_agents.door_firewall import cleaned_arguments, firewall_rule

#: The tenant of a conversation run in this process (an argument naming another is blocked).
LOCAL_TENANT = "local"


class FirewallFileError(Exception):
    """The firewall file an agent names is missing or not a valid policy (the message says why)."""


def key_line(text: str, key: str) -> int | None:
    """The line (1-based) of a top-level `key:` in agent.yaml's text, or None."""
    pattern = re.compile(rf"^{re.escape(key)}\s*:")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None


def _compile(path: Path) -> Any:
    """Read and compile a policy file; raise `FirewallFileError` with every problem."""
    from firewall.engine import PolicyInvalid, compile_policy

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FirewallFileError(f"`{path.name}` cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise FirewallFileError(f"`{path.name}` is not UTF-8 text") from None
    except ValueError as exc:
        raise FirewallFileError(f"`{path.name}` is not valid JSON: {exc}") from None
    try:
        return compile_policy(data)
    except PolicyInvalid as exc:
        problems = "; ".join(str(issue) for issue in exc.issues)
        raise FirewallFileError(f"`{path.name}` is not a valid policy: {problems}") from None


def _stamp(path: Path) -> tuple[int, int, int]:
    info = os.stat(path)
    return (info.st_mtime_ns, info.st_size, info.st_ino)


class LocalFirewall:
    """An agent's firewall policy file, compiled; compiled again when the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp = _stamp(path)
        self._policy = _compile(path)

    def _current(self) -> Any:
        try:
            stamp = _stamp(self.path)
            if stamp != self._stamp:
                self._policy = _compile(self.path)
                self._stamp = stamp
        except (OSError, FirewallFileError) as exc:
            self._stamp = (-1, -1, -1)  # read it again next time; never answer from a stale file
            raise SelectorUnavailableError(f"the firewall cannot answer: {exc}") from exc
        return self._policy

    def evaluate(self, call: Mapping[str, Any], *, destination: str | None = None) -> Any:
        """The firewall's `Decision` for a call at the `tool_call` stage (or at `egress`, for a
        `destination` it fetches), or `SelectorUnavailableError` when the firewall cannot answer."""
        from firewall.engine import VERDICTS
        from firewall.engine import Decision as FirewallDecision

        policy = self._current()
        body = {
            "tool": call.get("tool"),
            "arguments": dict(call.get("arguments") or {}),
            "stage": "tool_call" if destination is None else "egress",
        }
        if destination is not None:
            body["destination"] = destination
        if call.get("skill") is not None:
            body["skill"] = call["skill"]
        try:
            decision = policy.evaluate(body)
        except Exception as exc:  # noqa: BLE001 - a firewall that cannot answer: no call is made
            why = str(exc) or "its evaluation failed"
            raise SelectorUnavailableError(f"the firewall cannot answer: {why}") from exc
        if not isinstance(decision, FirewallDecision) or decision.verdict not in VERDICTS:
            raise SelectorUnavailableError("the firewall cannot answer: it gave no verdict")
        return decision


def firewall_gate(
    firewall: Any, session: Any = None
) -> Callable[[Mapping[str, Any], bool], GateAnswer | None]:
    """The conversation's gate: the firewall's verdict as the tool check's three answers.

    `firewall` is a `LocalFirewall` or what `door_firewall.door_firewall` gives (the file and the
    organisation's published policy, the stricter answer winning); where it answers None (no
    policy decides), the gate says nothing. With the runtime `session`, a `cap_cost` verdict is
    held with the tool check's own figures (the run's cost so far and this call's: past the cap
    it is refused, `cost_exceeded`), and every address a read fetches (`fetches:`) is put to the
    firewall at the `egress` stage.
    """

    def answer_of(answer: Any) -> tuple[Any, tuple[str, ...], dict[str, Any], str]:
        named = firewall_rule(answer)
        detail = {"verdict": answer.verdict, "reasons": list(answer.reasons)}
        return answer, (f"firewall: {named}",), detail, answer.rule or "firewall"

    def gate(call: Mapping[str, Any], confirmed: bool) -> GateAnswer | None:
        given = firewall.evaluate(call)
        if given is None:
            return None
        answer, reasons, detail, rule = answer_of(given)
        record = answer.to_dict()
        if answer.decision == "refuse":
            return GateAnswer(Decision(REFUSE, reasons, detail, rule), record=record)
        if answer.verdict == "cap_cost" and session is not None:
            over = session.wired.check.over_cost_cap(
                call, session=session.history, head=session.head, cap=answer.cap_cost_cents
            )
            if over is not None:
                return GateAnswer(over, record=record)
        if session is not None:
            for fetched in session.wired.check.fetched(call):
                at = firewall.evaluate(call, destination=fetched["destination"])
                if at is None:
                    continue
                egress, why, more, named = answer_of(at)
                more = {**more, "stage": "egress", "destination": fetched["destination"]}
                if egress.decision == "refuse":
                    return GateAnswer(Decision(REFUSE, why, more, named), record=egress.to_dict())
                if egress.decision == "confirm" and not confirmed:
                    return GateAnswer(Decision(CONFIRM, why, more, named), record=egress.to_dict())
        if answer.decision == "confirm" and not confirmed:
            return GateAnswer(Decision(CONFIRM, reasons, detail, rule), record=record)
        cleaned = cleaned_arguments(answer, call.get("arguments") or {})
        return GateAnswer(Decision(ALLOW, reasons, detail, rule), arguments=cleaned, record=record)

    return gate


def console_asker(session: Any) -> Callable[[Any], tuple[str, str]]:
    """A conversation's `ask_console` over a `ConnectedSession`: the confirm's call filed in the
    console's queue once (`wait_for_approval`, which asks the same call at the same point only
    once), and its approvers' answer as it stands, without waiting: `("approved", token)` once
    their grant verified, `("waiting", request id)`, or `("refused", reason)`."""
    from stalwart_agents.client import (
        ApprovalDenied,
        ApprovalTimeout,
        SelectorUnavailableError,
    )

    def ask(asked: Any) -> tuple[str, str]:
        approval = str(asked.detail.get("approval") or "")  # the runtime's pending call
        if not approval:
            return "refused", "session_held"
        try:
            request = session.file_request(approval)
            return "approved", session.wait_for_approval(approval, timeout=0, poll=0)
        except ApprovalTimeout:
            return "waiting", request
        except ApprovalDenied:
            return "refused", "approval_denied"
        except SelectorUnavailableError:
            return "refused", "selector_unavailable"

    return ask


def takes_context(function: Callable[..., Any]) -> bool:
    """Whether a tool function is written `(arguments, context)` (the executor's own form)."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in parameters] == ["arguments", "context"] and all(
        p.kind in positional for p in parameters
    )


def as_tool(function: Callable[..., Any]) -> Tool:
    """A tool function in the executor's `(arguments, context)` form."""
    if takes_context(function):
        return function

    def keywords(arguments: dict[str, Any], context: ExecutionContext) -> Any:
        return function(**arguments)

    return keywords


class ExecutionFailed(Exception):
    """The executor did not run a call to its end (`outcome` says how); the reply says so."""

    def __init__(self, outcome: Mapping[str, Any]) -> None:
        self.outcome = dict(outcome)
        kind = str(outcome["outcome"])
        why = str(outcome.get("detail", {}).get("error") or ", ".join(outcome.get("reasons", ())))
        why = re.sub(r"^[A-Z]\w*: ", "", why)  # the person reads the reason, not a class name
        if kind == "FAILED":
            super().__init__(why or "the tool failed")
        else:
            super().__init__(f"{kind.lower()}: {why}" if why else kind.lower())


class ChatExecutor:
    """The executor of one conversation (`executor(tool, arguments) -> result`).

    `functions(tool)` gives the tool's function; `bind(conversation)` hands it the conversation
    whose signed history the intent keys are derived from. A call the ledger already holds
    answers `Replayed(result)`; one that is blocked, fails or stays uncertain raises
    `ExecutionFailed`, so nothing is recorded.
    """

    def __init__(
        self,
        functions: Callable[[str], Callable[..., Any]],
        *,
        user: str,
        tenant: str = LOCAL_TENANT,
    ) -> None:
        self._functions = functions
        self.user = user
        self.tenant = tenant
        self.ledger: dict[str, Any] = {}
        self._conversation: Any = None

    def bind(self, conversation: Any) -> None:
        self._conversation = conversation

    def __call__(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        conversation = self._conversation
        if conversation is None:
            raise RuntimeError("the executor is bound to no conversation")
        function = as_tool(self._functions(tool))
        known = conversation.check.catalogue.tools.get(tool)
        history = conversation.history
        outcome = execute_here(
            ledger=self.ledger,
            entries=[entry.content for entry in history],
            tool=tool,
            arguments=arguments,
            function=function,
            write=known is None or known.kind != "read",
            tenant=self.tenant,
            session=history.session,
            agent=conversation.router.owner_of(tool) or "",
            user=self.user,
            idempotent=bool(known is not None and known.idempotent),
        )
        if outcome["outcome"] != "SUCCEEDED":
            raise ExecutionFailed(outcome)
        if outcome.get("suppressed"):
            return Replayed(outcome["result"])
        return outcome["result"]
