"""`Guard`: one object over a runtime session, for the framework doors (LangGraph, Agents SDK).

A door translates its framework's shapes into three calls and adds nothing else:

- `guard.read(turn)`: the person's turn, read by the session (S1, S2, confirmation reading and the
  origin of values live in the runtime behind it);
- `guard.call_with(tool, arguments, function=..., context=..., origins=...)`: the call is checked
  and, on `allow`, run through the session's executor (a key per intent, the ledger, the result
  recorded in the signed history with the labels of a `reads_outside` tool; a refusal undoes the
  run's earlier writes, last first). It answers an `Outcome`: `ran` with the result; `confirm`
  with the `prompt` a person must see (the call, each argument with its origin, the reasons);
  `refused` naming the reasons (nothing ran); `failed` (the tool itself failed);
- `guard.resume(outcome, answer)`: the person's answer to a `confirm`. A yes is turned into the
  signed token for exactly the call shown -- in this process `session.approve(check)` (the host's
  yes), against the console the approvals queue's answer (`wait_for_approval`) -- and the call is
  checked again with it, so it runs only if it is exactly the call approved: a call whose
  arguments were changed after the prompt is refused (`token_mismatch`).

Every decision carries the framework's run and thread ids (`run_id=`, `thread_id=`, over the
guard's `run`): in the decision's `detail.run` here, on the console's event there.
`guard.handoff(name)` is another agent's guard over the same session (one signed history for the
conversation).

**The organisation's firewall.** Deciding from the console's bundle (a `ConnectedSession`), every
call is put first to the organisation's published firewall policy (`door_firewall(None,
session)`; nothing published, no gate), as `Agent.chat` and the gateway put theirs: `deny`
refuses it (reason `firewall: <rule>`; nothing runs, no tool check); `sanitize` goes on with the
cleaned arguments, which the tool check judges; `allow` and `audit` go on; `cap_cost` is held with
the tool check's own figures (past the cap, `cost_exceeded`); `require_approval` is a `confirm`:
the tool check's own question where it asks (the firewall's reason added; one yes covers both),
else a question of the firewall's alone (no approval request; a yes is signed here for exactly
that call). The answer given at a call's check stands for its run (the Agents SDK's hooks and a
graph's check and tool nodes put a call to the firewall once); after a person's yes it is asked
again, as the gateway does: a `deny` then refuses. A bundle that cannot answer raises
`SelectorUnavailableError`. Other sessions are not gated here (one `isinstance` per call).

Facts: `context=` is a mapping, a function, or a `stalwart_agents.facts.Context` (the file's
`facts:` read from the results this guard saw, plus code's); where both say a fact, the file's
wins. Anything that cannot answer raises `SelectorUnavailableError` and nothing runs.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stalwart_agents.client import (
    ApprovalDenied,
    Check,
    Client,
    ConnectedSession,
    RemoteSession,
    SelectorUnavailableError,
    Session,
    _check_of,
)
from stalwart_agents.door_firewall import cleaned_arguments, door_firewall, firewall_rule
from stalwart_agents.facts import Context, facts_of

RAN, CONFIRM, REFUSED, FAILED = "ran", "confirm", "refused", "failed"
_REFUSED = ("REFUSED", "REJECTED")
_FAILED = ("BLOCKED", "FAILED", "UNCERTAIN")
SECRET = "[secret]"  # a `secret` argument's value wherever a person or a framework sees it
YES = frozenset({"yes", "y", "sim", "s", "approve", "approved", "ok", "true"})
NO = frozenset({"no", "n", "não", "nao", "deny", "denied", "reject", "rejected", "false"})

Function = Callable[[dict[str, Any]], Any]

#: Seconds the organisation's firewall answer for a call, given at its check, stands for the same
#: call's run (a door checks, then runs: the call is put to the firewall once).
FIREWALL_KEPT = 60.0
#: The most such answers a guard keeps for calls checked and not yet run (the oldest go first).
MAX_FIREWALLED = 256


@dataclass(frozen=True)
class Walled:
    """The organisation's firewall answer for one call: its `Decision` (None: nothing
    published), the arguments as it cleaned them, and when it answered."""

    answer: Any
    arguments: dict[str, Any]
    at: float


class CallRefused(Exception):
    """A call the check refused (`Guard(..., on_refuse="raise")`): nothing ran."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.message)
        self.outcome = outcome
        self.reasons = list(outcome.reasons)


@dataclass(frozen=True)
class Outcome:
    """What became of one call: `ran`, `confirm` (a person must answer), `refused` or `failed`."""

    status: str
    tool: str
    arguments: dict[str, Any]
    result: Any = None
    reasons: tuple[str, ...] = ()
    detail: dict[str, Any] = field(default_factory=dict)
    prompt: dict[str, Any] | None = None
    origins: dict[str, str] | None = None
    approval: str | None = None
    undone: tuple[Any, ...] = ()

    @property
    def message(self) -> str:
        """One sentence for the model: why nothing ran, or what a person is asked."""
        reasons = ", ".join(self.reasons) or "no reason given"
        if self.status == REFUSED:
            return f"Stalwart refused `{self.tool}`: {reasons}. Nothing ran."
        if self.status == CONFIRM:
            return f"`{self.tool}` waits for a person's yes: {reasons}. Nothing ran yet."
        if self.status == FAILED:
            return f"`{self.tool}` failed: {reasons}."
        return f"`{self.tool}` ran."


def plain_function(function: Callable[..., Any]) -> Function:
    """A Python tool `f(**arguments)` as the guard calls it: `function(arguments)`."""
    return lambda arguments: function(**arguments)


def _yes(answer: Any) -> tuple[bool, dict[str, Any] | None]:
    """(approved, arguments the person changed or None) of a person's answer."""
    if isinstance(answer, Mapping):
        edited = answer.get("arguments")
        approved = answer.get("approved", answer.get("type") in ("approve", "edit", "accept"))
        return approved is True, dict(edited) if isinstance(edited, Mapping) else None
    if isinstance(answer, bool):
        return answer, None
    if isinstance(answer, str):
        return answer.strip().lower() in YES, None
    return False, None


def _said_no(answer: Any) -> bool:
    """Whether a person's answer is an explicit no (`False`, `"no"`, `{"approved": false}`,
    `{"type": "reject"}`), not merely no yes (`None`: nothing said yet)."""
    if isinstance(answer, Mapping):
        return answer.get("approved") is False or answer.get("type") in ("reject", "deny")
    if isinstance(answer, bool):
        return answer is False
    if isinstance(answer, str):
        return answer.strip().lower() in NO
    return False


def outside_tools(catalogue: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The tools of a catalogue's data that read outside content, with their labels."""
    return {
        str(t.get("name")): tuple(t.get("reads_outside") or ())
        for t in catalogue.get("tools", []) or []
        if isinstance(t, Mapping) and t.get("reads_outside")
    }


def open_session(
    client: Client,
    agent: str,
    *,
    catalogue: Mapping[str, Any],
    rulebook: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> Session:
    """`client.session(...)`: in this process, or the console's with `STALWART_URL` (where the
    settings can only make the organisation's stricter)."""
    return client.session(agent, catalogue=catalogue, rulebook=rulebook, settings=settings)


class Guard:
    """The check in front of a framework's tool calls, over one session (one conversation).

    `tools` maps tool names to functions called with the arguments (`function(arguments)`; wrap a
    `f(**kwargs)` with `plain_function`); a door may pass its own `function=` per call instead.
    `approver(prompt) -> bool` answers a `confirm` in this process (a host callback); without one,
    `call_with` hands the `confirm` back and `resume` carries the person's answer.
    `on_refuse="raise"` raises `CallRefused` instead of returning the refusal. `run` names the
    framework's run and thread (`{"run_id", "thread_id"}`; `call_with` and `check` take them as
    keywords too): sent with every decision, they are in its `detail.run` in this process and on
    the console's event (the feed shows and filters them).

    One conversation across agents: `guard.handoff(name)` is the guard of agent `name` over the
    same session -- one signed history, so every check sees what each agent read and did (a write
    by the agent handed to after outside content another agent read is `tainted_call`) -- and the
    same turns read, results seen and facts.
    """

    def __init__(
        self,
        session: Session,
        *,
        tools: Mapping[str, Function] | None = None,
        context: Any = None,
        approver: Callable[[dict[str, Any]], bool] | None = None,
        on_refuse: str = "return",
        run: Mapping[str, str] | None = None,
        wait_timeout: float = 300.0,
        labels: set[str] | None = None,
        outside: Mapping[str, Any] | None = None,
        agent: str | None = None,
        share: Guard | None = None,
    ) -> None:
        if on_refuse not in ("return", "raise"):
            raise ValueError("on_refuse is `return` or `raise`")
        self.session = session
        # The agent making this guard's calls: the session's, or another agent of its catalogue
        # where one session holds the conversation across agents (`handoff`).
        self.agent = agent or session.agent
        self.tools = dict(tools or {})
        self.context = context
        self.approver = approver
        self.on_refuse = on_refuse
        self.run = dict(run or {})
        self.wait_timeout = wait_timeout
        # Outside-content labels the conversation met in other sessions (another agent's
        # `reads_outside` tool), carried on every call of this one: shared by a graph's guards.
        self.labels = labels if labels is not None else set()
        self.ran: list[dict[str, Any]] = []
        self._read: set[str] = set()
        self._asked: dict[str, str] = {}
        # Calls a person is being asked about, by the door's key for the step (a framework that
        # re-runs its step on resume finds the question asked, and files no second request).
        self.waiting: dict[str, Outcome] = {}
        self._outside = {k: tuple(v) for k, v in (outside or {}).items()}
        # The organisation's firewall answers for calls checked and not yet run (deciding from
        # the console's bundle), by the call as the door gave it.
        self._walled: dict[str, Walled] = {}
        if share is not None:  # the same conversation: what was read, ran and asked is shared
            # (Not the labels: one session's signed history holds the outside content itself.)
            self.ran, self._read, self._asked = share.ran, share._read, share._asked
            self.waiting = share.waiting
            self._outside = {**share._outside, **self._outside}

    def handoff(self, agent: str, **options: Any) -> Guard:
        """The guard of another agent of this conversation: the same session and signed history,
        turns, results seen and facts (see the class docstring); `options` as the constructor's."""
        options.setdefault("tools", self.tools)
        options.setdefault("context", self.context)
        options.setdefault("approver", self.approver)
        options.setdefault("on_refuse", self.on_refuse)
        options.setdefault("run", self.run)
        options.setdefault("wait_timeout", self.wait_timeout)
        return Guard(self.session, agent=agent, share=self, **options)

    def ids(self, run_id: str | None = None, thread_id: str | None = None) -> dict[str, str]:
        """The framework's run and thread ids of a call: the given ones over the guard's `run`."""
        ids = {k: str(v) for k, v in self.run.items() if k in ("run_id", "thread_id") and v}
        if run_id:
            ids["run_id"] = run_id
        if thread_id:
            ids["thread_id"] = thread_id
        return ids

    def _named(self, run_id: str | None, thread_id: str | None) -> dict[str, Any]:
        """What a session is told beside the call: the agent making it and the framework ids."""
        named: dict[str, Any] = {}
        if self.agent != self.session.agent:
            named["agent"] = self.agent
        ids = self.ids(run_id, thread_id)
        if ids:
            named["run"] = ids
        return named

    @classmethod
    def for_agent(
        cls,
        agent: Any,
        name: str,
        *,
        client: Client | None = None,
        settings: Mapping[str, Any] | None = None,
        context: Any = None,
        **options: Any,
    ) -> Guard:
        """A guard for agent `name` of an `Agent` (agent.yaml): its catalogue, rulebook, facts
        (`Context(facts=agent.facts)` over code's `context`, else the agent's own) and tools."""
        catalogue = agent.catalogue()
        session = open_session(
            client or Client(),
            name,
            catalogue=catalogue,
            rulebook=agent.rules().record,
            settings=settings,
        )
        code = context if context is not None else getattr(agent, "context", None)
        outside = outside_tools(catalogue)
        if "facts" in options:
            facts = options.pop("facts")  # a graph's guards share one conversation's facts
        elif isinstance(context, Context):
            facts = context
        else:
            facts = Context(facts_of(agent), context=code, reads_outside=list(outside))
        tools = {**agent_functions(agent), **dict(options.pop("tools", None) or {})}
        return cls(session, tools=tools, context=facts, outside=outside, **options)

    # -- turns and checks -------------------------------------------------------------------

    def read(self, turn: str, *, key: str | None = None) -> bool:
        """Read the person's turn once (`key` names it, e.g. a message id); True if read now."""
        if key is not None:
            if key in self._read:
                return False
            self._read.add(key)
        self.session.read(turn)
        return True

    def facts(self, arguments: Mapping[str, Any], context: Any = None) -> Any:
        """The facts of a call: a `Context`'s for these arguments (file over code), else as given."""
        given = context if context is not None else self.context
        if isinstance(given, Context):
            return lambda: given.for_call(arguments)
        return given

    def check(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        origins: Mapping[str, str] | None = None,
        context: Any = None,
        token: str | None = None,
        run_id: str | None = None,
        thread_id: str | None = None,
    ) -> Check:
        """The check alone (nothing runs). Deciding from the console's bundle, the
        organisation's published firewall first (see `firewalled`)."""
        options = {
            "origins": origins,
            "context": context,
            "token": token,
            "run_id": run_id,
            "thread_id": thread_id,
        }
        if isinstance(self.session, ConnectedSession):
            return self._walled_check(tool, arguments, **options)
        return self._tool_check(tool, arguments, **options)

    def _walled_check(self, tool: str, arguments: Mapping[str, Any], **options: Any) -> Check:
        """`check` deciding from the console's bundle: the organisation's published firewall
        first (a `deny` refuses, the tool check judges the arguments as it cleaned them), then
        the tool check, the firewall's hold or cap over its answer (`_gate`)."""
        walled = self._wall(tool, arguments)
        answer = walled.answer
        if answer is not None and answer.decision == "refuse":
            self._walled.pop(_call_key(tool, arguments), None)
            return Check(
                "refuse",
                [f"firewall: {firewall_rule(answer)}"],
                {"firewall": answer.to_dict()},
                firewall_rule(answer),
            )
        check = self._tool_check(tool, walled.arguments, **options)
        gated = self._gate(tool, walled, check, options["token"])
        if gated.decision == "refuse":
            self._walled.pop(_call_key(tool, arguments), None)
        return gated

    def _tool_check(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        origins: Mapping[str, str] | None = None,
        context: Any = None,
        token: str | None = None,
        run_id: str | None = None,
        thread_id: str | None = None,
    ) -> Check:
        """The session's tool check of the call, as it is."""
        return self.session.check_tool_call(
            tool,
            dict(arguments),
            origins=dict(origins) if origins else None,
            context=self.facts(arguments, context),
            token=token,
            labels=sorted(self.labels) or None,
            **self._named(run_id, thread_id),
        )

    # -- the organisation's firewall ---------------------------------------------------------

    def _wall(self, tool: str, arguments: Mapping[str, Any], *, again: bool = False) -> Walled:
        """The organisation's published firewall's answer for a call: the one given at its
        check (for `FIREWALL_KEPT` s), else asked now (`again`: asked now whatever was given).
        `SelectorUnavailableError` where the bundle cannot answer: nothing runs."""
        key = _call_key(tool, arguments)
        kept = self._walled.get(key)
        if kept is not None and not again and time.monotonic() - kept.at < FIREWALL_KEPT:
            return kept
        firewall = door_firewall(None, self.session)
        call = {"tool": tool, "arguments": dict(arguments), "agent": self.agent}
        answer = firewall.evaluate(call) if firewall is not None else None
        cleaned = cleaned_arguments(answer, arguments) if answer is not None else None
        walled = Walled(
            answer, cleaned if cleaned is not None else dict(arguments), time.monotonic()
        )
        self._walled.pop(key, None)
        while len(self._walled) >= MAX_FIREWALLED:
            self._walled.pop(next(iter(self._walled)), None)
        self._walled[key] = walled
        return walled

    def _cleaned(self, tool: str, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
        """The arguments as the firewall cleaned them at the call's check, else as given."""
        kept = self._walled.get(_call_key(tool, arguments))
        return kept.arguments if kept is not None else arguments

    def _gate(self, tool: str, walled: Walled, check: Check, token: str | None) -> Check:
        """The tool check's answer (of the cleaned arguments) with the firewall's over it: a
        `require_approval` asked with the check's own question where the check asks (a person's
        yes covers both), else asked for the firewall alone (its reason, no approval request);
        a `cap_cost` held with the check's own figures."""
        answer = walled.answer
        if answer is None or check.decision == "refuse":
            return check
        rule = firewall_rule(answer)
        if answer.decision == "confirm" and token is None:
            if check.decision == "confirm":
                reasons = [*check.reasons, f"firewall: {rule}"]
                return Check("confirm", reasons, check.detail, check.rule, check.approval)
            # Only the firewall holds it: the person is asked all the same (the framework's own
            # question), and a yes is signed for exactly this call (`approve`).
            return Check("confirm", [f"firewall: {rule}"], {"firewall": answer.to_dict()}, rule)
        if answer.cap_cost_cents is not None:
            runtime = self.session.runtime
            over = runtime.wired.check.over_cost_cap(
                {"tool": tool, "arguments": walled.arguments},
                session=runtime.history,
                head=runtime.head,
                cap=answer.cap_cost_cents,
            )
            if over is not None:
                return _check_of(over)
        return check

    def firewalled(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        token: str | None,
        origins: Mapping[str, str] | None,
        context: Any,
        run_id: str | None,
        thread_id: str | None,
    ) -> Outcome | dict[str, Any]:
        """Deciding from the console's bundle, the organisation's published firewall in front of
        a call: the `Outcome` of a call it refuses or holds (nothing ran), else the arguments to
        run it with (cleaned by a `sanitize`).

        The answer given at the call's check stands (the call is put to the firewall once);
        after a person's yes (`token`), the firewall is asked again, as the gateway asks before
        it forwards an approved call: a `deny` now refuses it, and it runs with the arguments as
        cleaned now (the token is for exactly the call approved, else `token_mismatch`)."""
        walled = self._wall(tool, arguments, again=token is not None)
        self._walled.pop(_call_key(tool, arguments), None)
        answer = walled.answer
        if answer is None:
            return arguments
        cleaned = walled.arguments
        if answer.decision == "refuse":
            rule = firewall_rule(answer)
            detail: dict[str, Any] = {"firewall": answer.to_dict()}
            if token is not None:
                detail["problem"] = "the firewall denies it now, after the person's yes"
            return Outcome(REFUSED, tool, arguments, None, (f"firewall: {rule}",), detail)
        if answer.decision == "confirm" and token is None:
            check = self._tool_check(
                tool, cleaned, origins=origins, context=context, run_id=run_id, thread_id=thread_id
            )
        elif answer.cap_cost_cents is not None:  # held with the check's figures, after a yes too
            check = Check("allow")
        else:
            return cleaned
        gated = self._gate(tool, walled, check, token)
        if gated.decision == "allow":
            return cleaned
        kind = "CONFIRM" if gated.decision == "confirm" else "REFUSED"
        said = {
            "outcome": kind,
            "reasons": gated.reasons,
            "detail": gated.detail,
            "approval": gated.approval,
        }
        return self._outcome(tool, cleaned, said, origins)

    def question(self, tool: str, arguments: Mapping[str, Any]) -> str:
        """The confirm question in words, as every door asks it (`runtime.asked_in_words`)."""
        from stalwart_agents.runtime import asked_in_words

        wired = getattr(getattr(self.session, "runtime", None), "wired", None)
        return asked_in_words(wired, tool, arguments)

    def prompt(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        reasons: Any,
        detail: Mapping[str, Any],
        origins: Mapping[str, str] | None = None,
        approval: str | None = None,
    ) -> dict[str, Any]:
        """What a person must see on a `confirm`: the call, each argument with its origin, why
        (a `secret` argument's value masked: the prompt is kept and shown by the framework)."""
        if isinstance(self.session, ConnectedSession):  # the call as the firewall cleaned it
            arguments = self._cleaned(tool, arguments)
        shown = detail.get("arguments") if isinstance(detail.get("arguments"), Mapping) else {}
        where = detail.get("origins") if isinstance(detail.get("origins"), Mapping) else {}
        hidden = self._secret(tool, shown)
        masked = {k: (SECRET if k in hidden else v) for k, v in arguments.items()}
        each: dict[str, dict[str, Any]] = {}
        for name, value in masked.items():
            entry = dict(shown.get(name) or {"value": value})
            said = where.get(name)
            if isinstance(said, Mapping):
                entry.update({k: v for k, v in said.items() if k in ("origin", "from")})
            entry.setdefault("origin", (origins or {}).get(name, "model"))
            each[name] = entry
        prompt: dict[str, Any] = {
            "question": self.question(tool, arguments),
            "call": {"tool": tool, "agent": self.agent, "arguments": masked},
            "arguments": each,
            "reasons": list(reasons),
        }
        if detail.get("labels"):
            prompt["labels"] = list(detail["labels"])
        if approval:
            prompt["approval"] = approval
        ids = {**self.ids(), **dict(detail.get("run") or {})}
        if ids:
            prompt["run"] = ids
        return prompt

    def _secret(self, tool: str, shown: Mapping[str, Any]) -> set[str]:
        """The tool's `secret` arguments: the catalogue's (in this process), and those the
        decision's detail shows masked (the console's)."""
        wired = getattr(getattr(self.session, "runtime", None), "wired", None)
        entry = wired.catalogue.tools.get(tool) if wired is not None else None
        hidden = set(getattr(entry, "secret", ()) or ())
        for name, said in shown.items():
            if isinstance(said, Mapping) and said.get("value") == SECRET:
                hidden.add(str(name))
        return hidden

    # -- calls ------------------------------------------------------------------------------

    def call_with(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        function: Function | None = None,
        context: Any = None,
        origins: Mapping[str, str] | None = None,
        token: str | None = None,
        run_id: str | None = None,
        thread_id: str | None = None,
    ) -> Outcome:
        """Check the call; run it on `allow` (see the module docstring); answer an `Outcome`.
        `run_id` and `thread_id` are the framework's (over the guard's `run`): shown with the
        decision, in this process and on the console's feed."""
        arguments = dict(arguments)
        run = function or self.tools.get(tool) or _missing(tool)
        facts = context if context is not None else self.context
        outcome: Outcome | None = None
        if isinstance(self.session, ConnectedSession):
            gated = self.firewalled(
                tool,
                arguments,
                token=token,
                origins=origins,
                context=facts,
                run_id=run_id,
                thread_id=thread_id,
            )
            if isinstance(gated, Outcome):
                outcome = gated
            else:
                arguments = gated
        if outcome is None:

            def executed(arguments: dict[str, Any], context: Any) -> Any:  # the executor's form
                return run(arguments)

            answer = self.session.execute(
                tool,
                arguments,
                executed,
                origins=dict(origins) if origins else None,
                context=self.facts(arguments, facts),
                token=token,
                labels=sorted(self.labels) or None,
                **self._named(run_id, thread_id),
            )
            outcome = self._outcome(tool, arguments, answer, origins)
        if outcome.status == RAN:
            self.ran.append({"tool": tool, "arguments": arguments, "result": outcome.result})
            self.labels.update(self._outside.get(tool, ()))
            if isinstance(facts, Context):
                facts.observe(tool, arguments, outcome.result)
        if outcome.status == CONFIRM and self.approver is not None and token is None:
            return self.resume(
                outcome,
                bool(self.approver(outcome.prompt or {})),
                function=function,
                context=context,
                run_id=run_id,
                thread_id=thread_id,
            )
        if outcome.status == REFUSED and self.on_refuse == "raise":
            raise CallRefused(outcome)
        return outcome

    def approve(self, outcome: Outcome, *, context: Any = None) -> str:
        """The signed token for exactly the call `outcome` showed a person (see `resume`)."""
        session = self.session
        asked = self._asked.pop(_call_key(outcome.tool, outcome.arguments), None)
        if isinstance(session, RemoteSession):
            approval = asked or outcome.approval
            if not approval:
                raise SelectorUnavailableError("the console asked for no approval of this call")
            return session.wait_for_approval(approval, timeout=self.wait_timeout)
        ids = dict((outcome.prompt or {}).get("run") or {})
        # The call the person was shown: as the firewall cleaned it at its check.
        arguments = outcome.arguments
        if isinstance(session, ConnectedSession):
            arguments = self._cleaned(outcome.tool, arguments)
        check = self._tool_check(
            outcome.tool, arguments, origins=outcome.origins, context=context, **ids
        )
        if check.decision == "allow" and isinstance(session, ConnectedSession) and _walled(outcome):
            # Only the organisation's firewall held it (`require_approval`): the person's yes to
            # exactly this call at this point, signed here, as the gateway signs its client's.
            runtime = session.runtime
            return runtime.token_for(runtime.call_of(outcome.tool, arguments, agent=self.agent))
        if check.decision != "confirm":
            raise SelectorUnavailableError(
                f"`{outcome.tool}` is no longer waiting for a person: {check.decision}"
            )
        if isinstance(session, ConnectedSession) and session.held(
            {"tool": outcome.tool, "arguments": arguments, "agent": self.agent}
        ):
            # A session the console holds: the yes is its approvers', in its queue (the resume
            # waits for them), never the resume's alone.
            return session.wait_for_approval(check, timeout=self.wait_timeout)
        return session.approve(check)

    def resume(
        self,
        outcome: Outcome,
        answer: Any,
        *,
        function: Function | None = None,
        context: Any = None,
        run_id: str | None = None,
        thread_id: str | None = None,
    ) -> Outcome:
        """Carry a person's answer to a `confirm`: a yes runs exactly the call shown, checked
        again with the signed token; changed arguments (`{"approved": true, "arguments": ...}`)
        are checked with that token too, and refused; a no runs nothing (against the console
        too, whatever its queue says; an answer that is neither waits for the queue there)."""
        approved, edited = _yes(answer)
        if outcome.status != CONFIRM:
            raise ValueError("only a call waiting for a person can be resumed")
        # Against the console an answer that is no yes waits for its queue; an explicit no is
        # the person withdrawing the call, and runs nothing wherever the call is decided.
        if _said_no(answer) or (not approved and not isinstance(self.session, RemoteSession)):
            return _denied(outcome)
        try:
            token = self.approve(outcome, context=context)
        except ApprovalDenied as exc:
            return _denied(outcome, str(exc))
        arguments = edited if edited is not None else outcome.arguments
        return self.call_with(
            outcome.tool,
            arguments,
            function=function,
            context=context,
            origins=outcome.origins,
            token=token,
            run_id=run_id,
            thread_id=thread_id,
        )

    def _outcome(
        self,
        tool: str,
        arguments: dict[str, Any],
        answer: Mapping[str, Any],
        origins: Mapping[str, str] | None,
    ) -> Outcome:
        kind = answer.get("outcome")
        reasons = tuple(str(r) for r in answer.get("reasons") or ())
        detail = dict(answer.get("detail") or {})
        given = dict(origins) if origins else None
        if kind == "SUCCEEDED":
            return Outcome(
                RAN, tool, arguments, answer.get("result"), reasons, detail, origins=given
            )
        if kind == "CONFIRM":
            approval = answer.get("approval")
            if approval:
                # A framework that re-runs its step on resume asks again for the same call: the
                # request the person was shown (the first) is the one whose answer counts.
                approval = self._asked.setdefault(_call_key(tool, arguments), approval)
            prompt = self.prompt(tool, arguments, reasons, detail, origins, approval)
            return Outcome(CONFIRM, tool, arguments, None, reasons, detail, prompt, given, approval)
        if kind in _REFUSED:
            undone = tuple(answer.get("undone") or ())
            return Outcome(REFUSED, tool, arguments, None, reasons, detail, undone=undone)
        if kind in _FAILED:
            return Outcome(FAILED, tool, arguments, None, reasons or (str(kind).lower(),), detail)
        raise SelectorUnavailableError(f"the executor answered `{kind}`, which is not an outcome")


def _walled(outcome: Outcome) -> bool:
    """Whether a firewall held the call a person was asked about (a reason names its rule)."""
    return any(str(reason).startswith("firewall: ") for reason in outcome.reasons)


def _call_key(tool: str, arguments: Mapping[str, Any]) -> str:
    return tool + ":" + json.dumps(arguments, sort_keys=True, default=str)


def _denied(outcome: Outcome, why: str = "the person said no") -> Outcome:
    return Outcome(
        REFUSED,
        outcome.tool,
        outcome.arguments,
        None,
        ("approval_denied",),
        {"problem": why},
    )


def _missing(tool: str) -> Function:
    def missing(arguments: dict[str, Any]) -> Any:
        raise LookupError(f"no function runs `{tool}` here")

    return missing


def agent_functions(agent: Any) -> dict[str, Function]:
    """The functions of an `Agent`'s tools: each `TOOLS` module's function of the tool's name."""
    found: dict[str, Function] = {}
    for module_name in getattr(agent, "modules", {}) or {}:
        module = sys.modules.get(module_name)
        for tool in getattr(agent, "modules", {})[module_name]:
            name = tool.get("name") if isinstance(tool, Mapping) else None
            function = getattr(module, str(name), None) if name else None
            if callable(function) and name not in found:
                found[name] = plain_function(function)
    return found


def result_text(result: Any) -> str:
    """A tool's result as the model reads it: JSON where it is JSON, else its text."""
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)
