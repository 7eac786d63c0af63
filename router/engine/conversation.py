"""A conversation, end to end: turns in, plans, guarded tool steps, template replies out.

`Conversation.say(turn)` plans the turn with the router and carries the plan out:

- `tool` -- the call goes to the tool check; allowed, the executor runs it and the result is
  recorded in the signed history; held for a person, the person is asked (their "yes" is turned
  into a confirmation token and the call checked again with it); refused, nothing runs;
- `confirm` -- checked first (a refusal never reaches the person); then the one question asked is
  the confirmation; "yes" runs exactly that call, "no" drops it;
- `chain` and `calculation` -- the reads of each round are checked and run, their results fed back
  to the router (at most `max_rounds` rounds), and the plan they make is carried out in turn; a
  calculation then has the agent's model write the function and the sandbox run it;
- `ask`, `declined`, `unread` -- the fixed question, refusal or answer; `unread` with
  `action: model` sends the turn to the model, whose every call is checked like any other
  (values' origin `model`), and `action: ask` first asks the person whether the model may have it;
  `action: answer` with a model composer gives the model the grounded passages only, and its
  answer must cite them (`[n]`) or it is refused.

A calculation's function is called with one argument per read the plan drew on (the newest
result of each of its calls), in the plan's order; the model is shown each read's call and result.

No model is called unless a plan needs one (`Plan.needs_model`, or the person's yes to `ask`).
With no model adapter, such a turn is refused, never run unchecked; a model that cannot answer
(`ModelUnavailable`: unreachable, timed out, an answer it could not read) refuses the turn with
the reason, and nothing runs. The model is sent the conversation so far (`transcript`: each turn
of the person and each reply, the question of `ask` and the yes to it included) and the schemas
of the tools the agent may reach; whatever origin a model claims for an argument, the values of
a call it asks for are the model's (`origins` `model`). The executor is the host's
function `executor(tool, arguments) -> result`; an executor that raises leaves nothing recorded
and says the step failed; one that answers `Replayed(result)` says the same call had already run
with nothing in between (its ledger held the intent): nothing ran again and nothing is recorded
again. Replies come from `phrases` (overridable by key).

The host may put a `gate` after the tool check (the SDK puts the firewall there): it sees every
call the tool check did not refuse -- with `confirmed` once the person said yes to exactly that
call -- and its answer can only make the tool check's stricter (`refuse` stops the call, naming
its rule; `confirm` puts the call to the person). A gate that cleans the arguments (a sanitize)
has the cleaned call checked again by the tool check, and that call is the one that runs. A gate
that raises stops the turn: the error reaches the caller and nothing runs (fail closed).

`model_free(...)` says whether an agent's settings let a conversation run with no model at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from guard.engine import ToolCheck
from guard.engine.catalogue import Catalogue
from guard.engine.decision import ALLOW, CONFIRM, REFUSE, Decision
from guard.engine.execution import Replayed
from guard.engine.post_checks import stricter_only
from guard.engine.refs import MISSING

from . import plan as plans
from .errors import ModelUnavailable, RouterError
from .models import FUNCTION, TURN, ModelAdapter, ModelReply, ModelRequest, tool_schemas
from .phrases import Phrases
from .plan import Plan
from .router import Router
from .said import said_checks
from .text import fold

Executor = Callable[[str, Mapping[str, Any]], Any]
COMPOSE = "answer"  # a model request's purpose: write the answer from the passages given
_CITED = re.compile(r"\[(\d{1,3})\]")
#: `sandbox(function_source, arguments) -> result`: runs the one function the source defines with
#: one argument per read; an error it raises is said as the calculation stopped, or, where the
#: error's `compute_off` is true (the sandbox cannot start on this machine), as `compute off:`.
Sandbox = Callable[[str, Any], Any]


class _EngineSession:
    """The conversation's own state when no runtime session is given: a tool check, its history
    and head, the turns. The SDK hands a `stalwart_agents.runtime.RuntimeSession` instead, which
    keeps the same state and adds what the runtime derives (origins, undo last first)."""

    def __init__(self, check: ToolCheck, session: str) -> None:
        self.check = check
        self.turns: list[str] = []
        self.history = check.new_history(session)
        # Kept apart from the history: one swapped, emptied or cut short is history_invalid.
        self.head = self.history.head

    def read(self, turn: str, *, continues: bool = False) -> None:
        self.turns.append(turn)

    def check_call(
        self, call: Mapping[str, Any], *, context: Any = None, token: str | None = None
    ) -> Decision:
        return self.check.check(
            call, session=self.history, head=self.head, context=context, token=token
        )

    def record_call(self, call: Mapping[str, Any], result: Any) -> None:
        self.check.record(self.history, call, result)
        self.head = self.history.head

    def token_for(self, call: Mapping[str, Any]) -> str:
        return self.check.issue_token(call, session=self.history, head=self.head)

    def undo_run(self) -> list[dict[str, Any]]:
        return []


@dataclass(frozen=True)
class GateAnswer:
    """What a host's gate after the tool check (the SDK's firewall) says about one call.

    `decision` can only make the tool check's answer stricter; `arguments`, where given, are the
    arguments the call is to run with instead (a sanitize); `record` is the gate's own answer, kept
    in the reply's checks.
    """

    decision: Decision
    arguments: Mapping[str, Any] | None = None
    record: Mapping[str, Any] = field(default_factory=dict)


Gate = Callable[[Mapping[str, Any], bool], "GateAnswer | None"]

#: What the console's approvers said of a write in a session the console holds, asked with the
#: confirm that put it to the person: `("approved", token)`, `("waiting", request id)`, or
#: `("refused", reason)` (denied, expired, or a console that cannot answer: nothing runs).
AskConsole = Callable[[Decision], tuple[str, str]]


@dataclass
class Reply:
    """What one turn did: the text said, the plan, every check and every call that ran."""

    text: str
    plan: Plan | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)
    ran: list[dict[str, Any]] = field(default_factory=list)
    waiting: str | None = None
    model_called: bool = False
    undone: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "plan": self.plan.to_dict() if self.plan is not None else None,
            "checks": self.checks,
            "ran": self.ran,
            "waiting": self.waiting,
            "model_called": self.model_called,
            "undone": self.undone,
        }


def _summary(result: Any, phrases: Phrases) -> str:
    if isinstance(result, Mapping):
        return ", ".join(f"{k} {phrases.value(v)}" for k, v in result.items()) or "{}"
    if isinstance(result, (list, tuple)):
        shown = [_summary(item, phrases) for item in result[:5]]
        more = f" (+{len(result) - 5})" if len(result) > 5 else ""
        return f"{len(result)}: " + "; ".join(shown) + more if shown else "0"
    return phrases.value(result)


def model_free(
    catalogue: Catalogue,
    *,
    agent: str | None = None,
    on_unread: str | None = None,
    composer: str | None = "extract",
    replies: Mapping[str, Any] | None = None,
) -> list[str]:
    """What stops an agent from running with no model at all (an empty list: nothing does).

    No model is ever called when: the agents name no model; `on_unread` is `refuse`, or `answer`
    with the `extract` composer; no agent hands off to another; replies are template phrasings.
    """
    problems = []
    agents = [catalogue.agents[agent]] if agent else list(catalogue.agents.values())
    for item in agents:
        if item.model:
            problems.append(f"agent `{item.name}` names the model `{item.model}`")
        if item.hands_off_to:
            problems.append(f"agent `{item.name}` hands off to {', '.join(item.hands_off_to)}")
        setting = item.on_unread or on_unread or plans.REFUSE
        if setting not in (plans.REFUSE, plans.ANSWER):
            problems.append(f"agent `{item.name}` sends unread turns to a model ({setting})")
        elif setting == plans.ANSWER and composer != "extract":
            problems.append(f"agent `{item.name}` answers with the composer `{composer}`")
    if replies is not None and replies.get("composer", "template") != "template":
        problems.append(f"replies are composed by `{replies.get('composer')}`, not templates")
    return problems


class Conversation:
    """One conversation with one agent (see the module docstring).

    `router` reads the turns; the tool check is `check`, or one built here from the router's
    catalogue and rulebook with `key` and `settings`, with the checks of what was said plugged in
    (reading this conversation's turns, in `said_modes`); `executor` runs an allowed call;
    `model` is the agent's model adapter, if it has one; `organisation_on_unread` is the
    organisation's setting (or a function giving it), taken at the first turn; `sandbox` runs a
    calculation's function; `context` the facts the application reports; `gate(call, confirmed)`
    the host's check after the tool check, named `gate_name` in the reply's checks; `ask_console`
    (`AskConsole`) files a write the runtime will not sign on the person's yes (a session the
    console holds) in the console's queue, and gives its approvers' answer.
    """

    def __init__(
        self,
        router: Router,
        *,
        executor: Executor,
        check: ToolCheck | None = None,
        key: bytes | str | None = None,
        settings: Mapping[str, Any] | None = None,
        said_modes: Mapping[str, str] | None = None,
        model: ModelAdapter | None = None,
        organisation_on_unread: str | Callable[[], str | None] | None = None,
        sandbox: Sandbox | None = None,
        context: Any = None,
        replies: Mapping[str, str] | None = None,
        session: str = "conversation",
        max_rounds: int = 4,
        gate: Gate | None = None,
        gate_name: str = "gate",
        runtime: Any = None,
        ask_console: AskConsole | None = None,
    ) -> None:
        self.router = router
        self.ask_console = ask_console
        self.executor = executor
        self.gate = gate
        self.gate_name = gate_name
        self.transcript: list[dict[str, str]] = []
        if runtime is not None:
            self.session = runtime
            self.check = runtime.wired.check
        else:
            if check is None:
                if key is None:
                    raise RouterError("a conversation needs a tool check, or a key to build one")
                turns = lambda: self.session.turns  # noqa: E731 - read at each check
                check = ToolCheck(
                    router.catalogue,
                    key=key,
                    rulebook=router.rulebook,
                    settings=settings,
                    post_checks=said_checks(router, turns=turns, modes=said_modes),
                )
            self.check = check
            self.session = _EngineSession(check, session)
        self.model = model
        self.sandbox = sandbox
        self.context = context
        self.phrases = Phrases(router.language, replies)
        self.max_rounds = max_rounds
        self._organisation = organisation_on_unread
        self._on_unread: str | None = None
        self.plans: list[Plan] = []
        self._asked_again = False
        self._pending_call: dict[str, Any] | None = None
        self._pending_asked: Decision | None = None  # the confirm that put it to the person
        # The calls a model asked for after the one waiting for the person, in the same run.
        self._pending_rest: list[dict[str, Any]] = []
        self._pending_model_turn: str | None = None

    @property
    def history(self) -> Any:
        return self.session.history

    @property
    def turns(self) -> list[str]:
        return self.session.turns

    # -- one turn ------------------------------------------------------------------------------

    def say(self, turn: str) -> Reply:
        """Take one turn of the person and answer it."""
        self.transcript.append({"role": "user", "content": turn})
        reply = self._answer(turn)
        self.transcript.append({"role": "assistant", "content": reply.text})
        return reply

    def _answer(self, turn: str) -> Reply:
        if self._on_unread is None:
            setting = self._organisation() if callable(self._organisation) else self._organisation
            self._on_unread = setting or plans.REFUSE
        answer = self._yes_no(turn)
        # A yes or a no to a call put to the person answers within the run that asked: the run
        # goes on (a refusal later in it still undoes what it wrote, and a no undoes it now).
        self.session.read(turn, continues=self._pending_call is not None and answer is not None)
        if self._pending_call is not None:
            call, self._pending_call = self._pending_call, None
            rest, self._pending_rest = self._pending_rest, []
            asked, self._pending_asked = self._pending_asked, None
            if answer == "yes":
                reply, ok = self._run_confirmed(call, asked)
                if reply.waiting == "console":  # the console's approvers have not answered yet
                    self._pending_call, self._pending_asked = call, asked
                    self._pending_rest = rest
                    return reply
                if ok and rest:
                    texts = [reply.text]
                    self._model_calls(rest, reply, texts)
                    reply.text = " ".join(t for t in texts if t)
                return reply
            if answer == "no":
                text = self.phrases("cancelled", action=self._action(call["tool"]))
                return self._refused(Reply(""), text)
        if self._pending_model_turn is not None:
            pending, self._pending_model_turn = self._pending_model_turn, None
            if answer == "yes":
                return self._to_model(pending)
            if answer == "no":
                return Reply(self.phrases("model_refused"))
        plan = self.router.plan(
            turn,
            history=self.plans,
            results=self.history,
            asked_again=self._asked_again,
            context=self.context,
            on_unread=self._on_unread,
        )
        reply = self._carry_out(plan, turn, rounds=0)
        return reply

    def _yes_no(self, turn: str) -> str | None:
        lex = self.router.lexicon
        text = " ".join(fold(turn).replace(",", " ").replace(".", " ").replace("!", " ").split())
        if text in lex.yes:
            return "yes"
        if text in lex.no:
            return "no"
        return None

    def _action(self, tool: str) -> str:
        return self.phrases("run", tool=tool)

    def _question(self, call: Mapping[str, Any], said: Mapping[str, str] | None) -> str:
        """The confirm question, from the tool's description and its parameters' titles."""
        tool = self.router.catalogue.tools.get(str(call["tool"]))
        return self.phrases.question(
            str(call["tool"]),
            call.get("arguments") or {},
            description=getattr(tool, "description", ""),
            parameters=getattr(tool, "parameters", None),
            said=said,
        )

    def _refused(self, reply: Reply, text: str) -> Reply:
        """A call of the run was refused or failed: say so, and undo the run's writes last first."""
        reply.text = text
        undone = self.session.undo_run()
        if undone:
            reply.undone = undone
            steps = ", ".join(f"{item['tool']} {item['status']}" for item in undone)
            reply.text = f"{text} {self.phrases('undone', steps=steps)}"
        return reply

    def _carry_out(self, plan: Plan, turn: str, *, rounds: int) -> Reply:
        self.plans.append(plan)
        self._asked_again = plan.kind == plans.UNREAD and plan.action == plans.SAY_AGAIN
        kind = plan.kind
        if kind in (plans.ASK, plans.DECLINED):
            return Reply(plan.question or "", plan)
        if kind == plans.UNREAD:
            return self._unread(plan, turn)
        if kind == plans.CALCULATION and (self.model is None or self.sandbox is None):
            return self._calculate(plan)  # compute off, before any of its reads runs
        if kind in (plans.CHAIN, plans.CALCULATION) and plan.steps:
            if rounds >= self.max_rounds:
                return Reply(self.phrases("unread_refused"), plan)
            reply = Reply("", plan)
            for step in plan.steps:
                ok = self._run(dict(step), reply, origins=None)
                if not ok:
                    return reply
            again = self.router.plan(
                turn,
                history=self.plans[:-1],
                results=self.history,
                context=self.context,
                on_unread=self._on_unread,
            )
            follow = self._carry_out(again, turn, rounds=rounds + 1)
            follow.checks[:0] = reply.checks
            follow.ran[:0] = reply.ran
            return follow
        if kind == plans.CALCULATION:
            return self._calculate(plan)
        assert plan.call is not None
        reply = Reply("", plan)
        decision, call = self._decide(dict(plan.call), reply)
        if decision.decision == REFUSE:
            return self._refused(
                reply, self.phrases("refused", reasons=", ".join(decision.reasons))
            )
        if decision.decision == CONFIRM:
            self._pending_call, self._pending_asked = call, decision
            reply.waiting = "confirm"
            planned = call == plan.call  # else the gate cleaned it: show the call that runs
            reply.text = (plan.question if planned else None) or self._question(
                call, plan.said if planned else None
            )
            return reply
        self._execute(call, reply)
        return reply

    # -- the guarded tool step -----------------------------------------------------------------

    def _check(self, call: Mapping[str, Any], reply: Reply, token: str | None) -> Decision:
        decision = self.session.check_call(call, context=self.context, token=token)
        reply.checks.append({"call": dict(call), "decision": decision.to_dict()})
        return decision

    def decide(self, call: Mapping[str, Any], *, token: str | None = None) -> Decision:
        """The answer a call gets in this conversation, as a call a turn plans gets it: the tool
        check (with the checks of what was said, over the turns so far), then the gate. Nothing
        runs."""
        decision, _ = self._decide(dict(call), Reply(""), token)
        return decision

    def _decide(
        self, call: dict[str, Any], reply: Reply, token: str | None = None
    ) -> tuple[Decision, dict[str, Any]]:
        """The tool check's answer, then the gate's; returns the answer and the call to run."""
        decision = self._check(call, reply, token)
        if self.gate is None or decision.decision == REFUSE:
            return decision, call
        answer = self.gate(call, token is not None)  # an error stops the turn: nothing runs
        if answer is None:
            return decision, call
        reply.checks.append(
            {
                "call": dict(call),
                "gate": self.gate_name,
                "decision": answer.decision.to_dict(),
                "answer": dict(answer.record),
            }
        )
        decided = stricter_only(decision, answer.decision, self.gate_name)
        cleaned = answer.arguments
        if decided.decision == REFUSE or cleaned is None or dict(cleaned) == call.get("arguments"):
            return decided, call
        # A sanitize: the cleaned call is the one that runs, so the tool check decides it too.
        call = {**call, "arguments": dict(cleaned)}
        again = self._check(call, reply, token)
        return stricter_only(again, answer.decision, self.gate_name), call

    def _execute(self, call: Mapping[str, Any], reply: Reply) -> bool:
        tool = call["tool"]
        try:
            result = self.executor(tool, dict(call.get("arguments") or {}))
        except Exception as error:  # noqa: BLE001 - the host's tool failed: say so, record nothing
            self._refused(
                reply, self.phrases("failed", action=self._action(tool), error=str(error))
            )
            return False
        if isinstance(result, Replayed):
            # The executor's ledger held this intent: the call had run, nothing ran again.
            reply.ran.append({"tool": tool, "arguments": dict(call.get("arguments") or {}),
                              "result": result.result, "duplicate": True})  # fmt: skip
            reply.text = self.phrases(
                "already_done", action=tool, result=_summary(result.result, self.phrases)
            )
            return True
        self.session.record_call(call, result)
        reply.ran.append({"tool": tool, "arguments": dict(call.get("arguments") or {}),
                          "result": result})  # fmt: skip
        profile = self.router.profiles.get(tool)
        key = "done" if profile is not None and profile.write else "result"
        reply.text = self.phrases(key, action=tool, result=_summary(result, self.phrases))
        return True

    def _run(self, call: dict[str, Any], reply: Reply, origins: Mapping[str, str] | None) -> bool:
        if origins is not None:
            call["origins"] = dict(origins)
        decision, call = self._decide(call, reply)
        if decision.decision != ALLOW:
            self._refused(reply, self.phrases("refused", reasons=", ".join(decision.reasons)))
            return False
        return self._execute(call, reply)

    def _run_confirmed(self, call: Mapping[str, Any], asked: Decision | None) -> tuple[Reply, bool]:
        """The call the person said yes to, checked again with their token; whether it ran. A
        reply `waiting` for the console: its approvers have the call and have not answered."""
        reply = Reply("")
        try:
            token = self.session.token_for(call)
        except PermissionError:
            # The runtime will not sign this yes (a write in a session the console holds): its
            # approvers answer it, in the console's queue; until they say yes nothing runs.
            if self.ask_console is None or asked is None:
                return self._refused(reply, self.phrases("refused", reasons="session_held")), False
            state, value = self.ask_console(asked)
            if state == "waiting":
                reply.waiting = "console"
                reply.text = self.phrases(
                    "held_on_console", action=self._action(str(call["tool"])), request=value
                )
                return reply, False
            if state != "approved":
                return self._refused(reply, self.phrases("refused", reasons=value)), False
            token = value
        decision, call = self._decide(dict(call), reply, token=token)
        if decision.decision != ALLOW:
            text = self.phrases("refused", reasons=", ".join(decision.reasons))
            return self._refused(reply, text), False
        return reply, self._execute(call, reply)

    # -- unread turns, models and calculations -------------------------------------------------

    def _unread(self, plan: Plan, turn: str) -> Reply:
        if plan.action == plans.MODEL:
            return self._to_model(turn, plan)
        if plan.action == plans.ANSWER and plan.needs_model:
            return self._compose(plan, turn)
        if plan.action == plans.ASK_MODEL:
            self._pending_model_turn = turn
            return Reply(plan.question or self.phrases("ask_model"), plan, waiting="ask_model")
        return Reply(plan.question or self.phrases("unread_refused"), plan)

    def _to_model(self, turn: str, plan: Plan | None = None) -> Reply:
        reply = Reply("", plan, model_called=self.model is not None)
        if self.model is None:
            reply.text = self.phrases("unread_refused")
            return reply
        reachable = tuple(sorted(self.router.reachable))
        request = ModelRequest(
            TURN,
            turn,
            self.router.language,
            tools=reachable,
            history=tuple(self.turns[:-1]),
            messages=tuple(dict(message) for message in self.transcript),
            schemas=tool_schemas(self.router.catalogue, reachable),
        )
        try:
            answer = ModelReply.of(self.model.respond(request))
        except ModelUnavailable as error:
            reply.text = self.phrases("model_unavailable", reason=str(error))
            return reply
        calls = []
        for asked in answer.calls:
            arguments = asked.get("arguments")
            arguments = dict(arguments) if isinstance(arguments, Mapping) else {}
            call = {
                "tool": asked.get("tool"),
                "arguments": arguments,
                # The model wrote every value, whatever origin its reply claims.
                "origins": {name: "model" for name in arguments},
            }
            owner = self.router.owner_of(str(call["tool"]))
            if owner is not None:
                call["agent"] = asked.get("agent", owner)
            calls.append(call)
        texts: list[str] = []
        self._model_calls(calls, reply, texts)
        if answer.text:
            texts.insert(0, answer.text)
        reply.text = " ".join(t for t in texts if t) or self.phrases("unread_refused")
        return reply

    def _model_calls(self, calls: list[dict[str, Any]], reply: Reply, texts: list[str]) -> None:
        """The calls a model asked for, in order, within one run: each checked; one put to the
        person waits with the rest kept for after their yes; a refusal or a failure stops the
        run and undoes what it wrote, last first."""
        for position, call in enumerate(calls):
            decision, call = self._decide(call, reply)
            if decision.decision == REFUSE:
                self._refused(reply, self.phrases("refused", reasons=", ".join(decision.reasons)))
                texts.append(reply.text)
                return
            if decision.decision == CONFIRM:
                self._pending_call, self._pending_asked = call, decision
                self._pending_rest = calls[position + 1 :]
                reply.waiting = "confirm"
                texts.append(self._question(call, None))
                return
            if not self._execute(call, reply):
                texts.append(reply.text)
                return
            texts.append(reply.text)

    def _compose(self, plan: Plan, turn: str) -> Reply:
        """`composer: model`: the model writes the answer from the grounded passages only, and
        cites them (`[n]`); an answer that cites none of them, or one it was not given, or that
        asks for a tool, is refused."""
        reply = Reply("", plan, model_called=self.model is not None)
        passages = list((plan.answer or {}).get("passages") or ())
        if self.model is None or not passages:
            reply.text = self.phrases("no_answer")
            return reply
        request = ModelRequest(COMPOSE, turn, self.router.language, data=passages)
        try:
            answer = ModelReply.of(self.model.respond(request))
        except ModelUnavailable:
            reply.text = self.phrases("no_answer")
            return reply
        given = {int(p["n"]): str(p["source"]) for p in passages}
        cited = [int(n) for n in _CITED.findall(answer.text or "")]
        if answer.calls or not cited or any(n not in given for n in cited):
            reply.text = self.phrases("no_answer")
            return reply
        sources = "; ".join(f"[{n}] {given[n]}" for n in sorted(set(cited)))
        reply.text = self.phrases("answer", text=str(answer.text).strip(), source=sources)
        return reply

    def _calculate(self, plan: Plan) -> Reply:
        reply = Reply("", plan, model_called=self.model is not None)
        if self.model is None or self.sandbox is None:
            reply.text = self.phrases("declined", reason="compute off: no model or no sandbox")
            return reply
        reads = self._reads_of(plan)
        if reads is None:
            reply.text = self.phrases(
                "declined", reason="compute off: a read it draws on did not run"
            )
            return reply
        request = ModelRequest(FUNCTION, plan.turn, self.router.language, data=reads)
        try:
            answer = ModelReply.of(self.model.respond(request))
        except ModelUnavailable:
            reply.text = self.phrases("declined", reason="compute off: the model did not answer")
            return reply
        if not answer.function:
            reply.text = self.phrases("declined", reason="compute off: the model wrote no function")
            return reply
        arguments = [read["result"] for read in reads]
        try:
            result = self.sandbox(answer.function, arguments)
        except Exception as error:  # noqa: BLE001 - the sandbox refused or failed: say so
            off = bool(getattr(error, "compute_off", False))  # it cannot start here at all
            why = f"compute off: {error}" if off else f"the calculation was stopped: {error}"
            reply.text = self.phrases("declined", reason=why)
            reply.ran.append({"tool": "sandbox", "arguments": {}, "refused": str(error),
                              "reason": getattr(error, "reason", "unavailable" if off else "failed")})  # fmt: skip
            return reply
        reply.ran.append({"tool": "sandbox", "arguments": {}, "result": result})
        reply.text = self.phrases("computed", result=_summary(result, self.phrases))
        return reply

    def _reads_of(self, plan: Plan) -> list[dict[str, Any]] | None:
        """Every read the calculation draws on, with its result, in the plan's order: the
        newest result in this conversation of each call (None when one of them has none)."""
        wanted = plan.detail.get("reads") or ([plan.call] if plan.call is not None else [])
        recorded = list(self.history.results)
        reads = []
        for call in wanted:
            found = self.router.result_of(
                str(call.get("tool")), call.get("arguments") or {}, recorded
            )
            if found is MISSING:
                return None
            reads.append(
                {
                    "tool": call.get("tool"),
                    "arguments": dict(call.get("arguments") or {}),
                    "result": found,
                }
            )
        return reads


def run_turns(conversation: Conversation, turns: Sequence[str]) -> list[Reply]:
    """Say several turns in a row (for demos and tests)."""
    return [conversation.say(turn) for turn in turns]
