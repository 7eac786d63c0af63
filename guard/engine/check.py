"""The tool check: every call, whoever chose it, through admission and the 13 ordered steps.

Order (the first that applies decides; see `checks.REGISTRY` for the switchable ones):

    the call's shape           malformed_call
    admission chain            withdrawn, disallowed_address (address), off_plan (plan_step),
                               tier / labels / payment_limit (not yet active: every call passes)
     1 allowed tools            unknown_tool, agent_required, licence_lapsed
     2 session record           history_invalid
     3 arguments                argument_schema (detail `pointer`, e.g. `/note`)
     4 destinations             undeclared_destination (tools not declared `sends_out`; a read's
                                `fetches` arguments pass while the address check is on)
     5 order                    order_rule (rule `after get_order`, `not_after ...`, `at_most N`)
     6 undo                     compensation_spent, compensation_mismatch
     7 the tool's own checks    condition_failed, condition_unknown, usage_unknown, limit_reached,
                                spend_unknown, spend_exceeded, cost_unknown, cost_exceeded
                                (never on a verified undo)
     8 the rulebook's gate      the gate's own reasons and detail (e.g. reasons ["refuse"], flow)
     9 outside content          tainted_call, where `taint_policy` is `refuse`
    10 confirmation             confirmed (allow), or token_invalid / token_mismatch / token_expired
    11 a person is needed       gate reasons or gate_clarify, argument_origin: <arg> (never for a
                                `free_text` argument), tainted_call,
                                irreversible_pivot, schema_partial; a write with none of them: write
    12 a verified undo          compensation (allow)
    13 anything else            allow
    post-checks (said)          hooks that may only make the answer stricter

The rulebook's gate (step 8) answers `refuse` (the call is refused with the gate's reasons and
detail), `confirm` (its reasons, or `gate_clarify` where it gives none, join step 11's), `pass` or
None (no opinion), or `allow`: an explicit allow from a rule sheet, which removes the `write` reason
at step 11, so a write the rule allows runs without a person *unless* another reason of step 11
holds (`argument_origin`, `tainted_call`, `irreversible_pivot`, `schema_partial`); it never
overrides an earlier step (a refusal at steps 1-7 or 9, or a refused token at 10).

A verified undo (step 6 passed with `undo` on) skips step 7, is not asked for a person for `write`,
and its arguments bound to the step it undoes count as vouched for; any other reason of step 11
still holds.

The check never raises on a malformed call, a history that does not verify, a token that does not
match, or a rulebook that fails: it refuses with a reason. Configuration mistakes by the host
program (an unknown check name, a catalogue that does not load, a short key) raise `GuardError`s.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from .addresses import classify_host, find_destinations, find_fetched, in_arguments
from .call import Call, MalformedCall, read_call
from .canonical import NotJSON
from .catalogue import Binding, Catalogue, OrderRule, Tool, load_catalogue
from .checks import NAMES, switched_on
from .decision import ALLOW, CONFIRM, REFUSE, Decision
from .errors import GuardError, HistoryInvalid
from .history import Entry, History
from .keys import Keys
from .kinds import READ, SENDS_OUT, is_write
from .marks import MISSING_COST, as_number, cents, declared_cost, is_amount
from .post_checks import PostCheck, stricter_only
from .refs import MISSING, resolve, value_key
from .schema import validate_arguments
from .settings import Settings, load_settings
from .taint import tainting_labels, unvouched_arguments
from .tokens import (
    CallPoint,
    check_call_token,
    check_plan_token,
    digest,
    issue_call_token,
    plan_payload,
    sign,
)
from .tool_checks import RunCost, cap_failure, evaluate

SECRET = "[secret]"


@functools.cache
def _rulebook_api() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The rulebook compiler's gate and facts, imported on first use (the compiler is optional)."""
    from rulebooks.compiler import gate, resolve_facts

    return gate, resolve_facts


def _epoch(now: Any) -> float:
    if now is None:
        return time.time()
    if isinstance(now, dt.datetime):
        if now.tzinfo is None:
            now = now.replace(tzinfo=dt.UTC)
        return now.timestamp()
    if isinstance(now, (int, float)) and not isinstance(now, bool):
        return float(now)
    raise GuardError("`now` must be a datetime or a number of seconds")


def _refuse(
    reason: str, step: int | None, check: str | None, rule: str | None = None, **detail: Any
) -> Decision:
    """A refusal with its step, check and rule in the detail; the rule defaults to the check."""
    info: dict[str, Any] = {}
    if step is not None:
        info["step"] = step
    if check is not None:
        info["check"] = check
    if rule is not None:
        info["rule"] = rule
    info.update(detail)
    return Decision(REFUSE, (reason,), info, rule if rule is not None else check)


class _Refused(Exception):
    """Carries a decision out of a step (internal)."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision


class ToolCheck:
    """The tool check for one catalogue, rulebook record, settings and key; build it once, reuse it.

    `catalogue` is a loaded `Catalogue` or its data (loaded with the settings' `tool_kinds` and
    `infer`); `rulebook` the compiled record (or None: step 8 then has no opinion); `key` the secret
    that signs histories and tokens (held by the server or the runtime, never by the agent).
    """

    def __init__(
        self,
        catalogue: Catalogue | Mapping[str, Any],
        *,
        key: bytes | str,
        rulebook: Mapping[str, Any] | None = None,
        settings: Settings | Mapping[str, Any] | None = None,
        post_checks: Sequence[PostCheck] = (),
    ) -> None:
        self.settings = load_settings(settings, known_checks=NAMES)
        if isinstance(catalogue, Catalogue):
            self.catalogue = catalogue
        else:
            self.catalogue = load_catalogue(
                catalogue, tool_kinds=self.settings.tool_kinds, infer=self.settings.infer
            )
        self.rulebook = rulebook
        # The tools the record governs: for any other tool the gate has no opinion, so step 8
        # (and reading the facts for it) is skipped. Without a readable `tools`, ask the gate.
        governed = rulebook.get("tools") if isinstance(rulebook, Mapping) else None
        self._governed = frozenset(governed) if isinstance(governed, Mapping) else None
        # Only the facts the record's conditions read are worth resolving for the gate.
        read = rulebook.get("facts") if isinstance(rulebook, Mapping) else None
        self._facts_read = frozenset(read) if isinstance(read, list) else None
        self._facts_spec = {
            name: spec
            for name, spec in self.catalogue.facts.items()
            if self._facts_read is None or name in self._facts_read
        }
        self._fact_sources = tuple(
            source
            for source in self.catalogue.fact_sources
            if self._facts_read is None or source.name in self._facts_read
        )
        self._keys = Keys.from_secret(key)
        for post in post_checks:
            if post.name not in NAMES:
                raise GuardError(f"a post-check must carry the name of a check, not `{post.name}`")
        self.post_checks = tuple(post_checks)
        self._default_on = switched_on(self.settings.checks)
        agents = self.catalogue.agents
        self._only_agent = next(iter(agents)) if len(agents) == 1 else None

    # -- sessions and tokens -------------------------------------------------------------------

    def new_history(self, session: str) -> History:
        """An empty history for a new session, signed with this check's key."""
        return History(session, self._keys.history)

    def load_history(self, data: Any, *, head: Mapping[str, Any]) -> History:
        """Verify a history given as JSON once (O(n)) against the head kept for its session.

        Raises `HistoryInvalid`: a history cut short, emptied or of another session is one.
        """
        return History.from_json(data, key=self._keys.history, head=head)

    def record(
        self,
        history: History,
        call: Mapping[str, Any],
        result: Any,
        *,
        cost: Any = None,
        **extra: Any,
    ) -> Entry:
        """Append a call that ran to the history (for the executor), with labels and plan step.

        The entry carries the call's `cost` in cents: the larger of what the host reports here
        (`cost=`, what the call cost) and what the tool's `cost:` declares; nothing where neither
        says. The run's cost (`History.cost`) adds these up.
        """
        parsed = read_call(call)
        tool = self.catalogue.tools.get(parsed.tool)
        if "cost" in extra:
            cost = extra.pop("cost") if cost is None else cost
        if cost is not None and not is_amount(cost):
            raise GuardError("`cost` must be a number of cents, 0 or more")
        labels = set(parsed.labels) | set(tool.reads_outside if tool else ())
        content: dict[str, Any] = {
            "tool": parsed.tool,
            "arguments": dict(parsed.arguments),
            "result": result,
        }
        agent = self._agent_of(parsed)
        if agent is not None:
            content["agent"] = agent
        if parsed.origins:
            content["origins"] = dict(parsed.origins)
        if labels:
            content["labels"] = sorted(labels)
        if parsed.compensation_of is not None:
            content["compensation_of"] = parsed.compensation_of
        if parsed.plan is not None:
            content["plan"] = {
                "id": parsed.plan["id"],
                "step": history.plan_progress(parsed.plan["id"]),
            }
        content.update(extra)
        declared = declared_cost(tool.cost, parsed.arguments) if tool is not None else None
        if tool is not None and tool.cost is None:
            declared = None
        figures = [
            value for value in (declared, cost) if value is not None and value is not MISSING_COST
        ]
        if figures:
            content["cost"] = as_number(max(cents(value) for value in figures))
        return history.append(content)

    def run_cost(self, session: History) -> int | float:
        """The run's cost so far, in cents: the sum of the costs its verified history carries."""
        return as_number(self._history(session, None).cost)

    def call_cost(self, call: Mapping[str, Any], *, cost: Any = None) -> Any:
        """What a call would cost the run, in cents (a decimal): the larger of the tool's `cost:`
        and the host's `cost`; `MISSING_COST` where the tool prices it by an argument it lacks."""
        parsed = read_call(call)
        tool = self.catalogue.tools.get(parsed.tool)
        declared = declared_cost(tool.cost if tool else None, parsed.arguments)
        if cost is None:
            return declared
        if not is_amount(cost):
            raise GuardError("`cost` must be a number of cents, 0 or more")
        reported = cents(cost)
        return reported if declared is MISSING_COST else max(declared, reported)

    def over_cost_cap(
        self,
        call: Mapping[str, Any],
        *,
        session: History | Mapping[str, Any],
        cap: Any,
        head: Mapping[str, Any] | None = None,
        cost: Any = None,
        source: str = "firewall",
    ) -> Decision | None:
        """The refusal of a call that would take the run's cost past `cap` cents, or None.

        This is how a cap given outside the catalogue is held with the tool check's own figures:
        the firewall's `cap_cost` verdict (`Decision.cap_cost_cents`) is given here as `cap`, and a
        call with spent + this call > cap is refused `cost_exceeded` (detail `spent`, `this_call`,
        `cap`, `source`); == cap runs. A history that does not verify refuses `history_invalid`.
        """
        if not is_amount(cap):
            raise GuardError("`cap` must be a number of cents, 0 or more")
        try:
            history = self._history(session, head)
        except HistoryInvalid as error:
            return _refuse(
                "history_invalid", 2, "session_record", index=error.index, problem=error.problem
            )
        try:
            this_call = self.call_cost(call, cost=cost)
        except MalformedCall as error:
            return _refuse("malformed_call", None, None, problem=str(error))
        failure = cap_failure(history.cost, this_call, cents(cap))
        if failure is None:
            return None
        reason, detail = failure
        return _refuse(reason, None, source, rule=f"cap_cost {cap}", **detail)

    def issue_token(
        self,
        call: Mapping[str, Any],
        *,
        session: History | Mapping[str, Any],
        head: Mapping[str, Any] | None = None,
        now: Any = None,
        ttl: int | None = None,
    ) -> str:
        """Sign a person's yes to exactly this call at the session's current point.

        A token names the point it was issued at, so one issued over a history that is not the
        session's (cut short, another session's) never covers the call at the session's real head;
        with `head`, such a history is refused here already.
        """
        parsed = read_call(call)
        history = self._history(session, head, required=False)
        point = self._point(parsed, history)
        return issue_call_token(
            point, key=self._keys.token, now=_epoch(now), ttl=ttl or self.settings.token_ttl
        )

    def issue_plan_token(
        self,
        plan: Mapping[str, Any],
        *,
        session: str | History,
        now: Any = None,
        ttl: int | None = None,
    ) -> str:
        """Sign a person's approval of a plan (`{id, steps: [{tool, arguments}]}`) for a session."""
        if not isinstance(plan, Mapping) or not isinstance(plan.get("id"), str):
            raise MalformedCall("plan: must be `{id, steps}`")
        session_id = session.session if isinstance(session, History) else session
        expires = int(_epoch(now)) + (ttl or self.settings.token_ttl)
        return sign(
            plan_payload(plan["id"], plan.get("steps"), session_id, expires), self._keys.token
        )

    def _history(self, session: Any, head: Any, *, required: bool = True) -> History:
        """The session's verified history: a `History` the caller keeps, or JSON at `head`."""
        if isinstance(session, History):
            if not session.signed_with(self._keys.history):
                raise HistoryInvalid("the history is not signed with this check's key")
            if head is not None and not session.at_head(head):
                raise HistoryInvalid("the history does not end at the head kept for its session")
            return session
        if head is None and not required and isinstance(session, Mapping):
            # Only where a wrong history cannot let anything through (a token names its point).
            head = {**_head_of(session), "session": session.get("session")}
        return History.from_json(session, key=self._keys.history, head=head)

    def _agent_of(self, call: Call) -> str | None:
        if call.agent is None and self._only_agent is not None:
            return self._only_agent
        return call.agent

    def _point(self, call: Call, history: History) -> CallPoint:
        return CallPoint(
            agent=self._agent_of(call),
            tool=call.tool,
            arguments=call.arguments,
            session=history.session,
            at=len(history),
            head=history.head["mac"],
        )

    # -- the check -----------------------------------------------------------------------------

    def check(
        self,
        call: Any,
        *,
        session: History | Mapping[str, Any] | None,
        head: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
        token: str | None = None,
        cost: Any = None,
        checks: Collection[str] | None = None,
        now: Any = None,
        usage: Mapping[str, Any] | None = None,
        turns: Sequence[str] | None = None,
    ) -> Decision:
        """Decide one call: `allow`, `confirm` or `refuse`, with reasons and detail.

        `cost` is what the host says this call costs the run, in cents (the tool's declared
        `cost:` counts where larger), read by a `cap_cost` check.

        `session` is the session's `History` (kept by the caller: O(1) per call) or its JSON
        (verified here, O(n)); `head` the point it must end at (`History.head`, kept per session
        by whoever keeps the history): JSON without it, or a history at another point or of
        another session, is `history_invalid`; `context` the facts the application reports (a mapping or a function
        called now);
        `token` a confirmation token; `checks` the checks switched on for this call (default: the
        settings' list, or all); `now` a datetime or epoch seconds; `usage` what the host counted
        for this tool, `{"count": {"day": 3}, "spend": {"day": 120.0}}`; `turns` the person's turns,
        handed to the post-checks (the checks of what was said) that read them, when the host keeps
        them per session rather than in the post-check.
        """
        on = self._default_on if checks is None else switched_on(checks)
        epoch = _epoch(now)
        try:
            parsed = read_call(call)
        except MalformedCall as error:
            field, _, problem = str(error).partition(": ")
            return _refuse("malformed_call", None, None, rule=None, field=field, problem=problem)
        if cost is not None and not is_amount(cost):
            return _refuse(
                "malformed_call", None, None, rule=None, field="cost",
                problem="must be a number of cents, 0 or more",
            )  # fmt: skip
        history: History | None = None
        problem: HistoryInvalid | None = None
        try:
            history = self._history(session, head)
        except HistoryInvalid as error:
            problem = error
        try:
            decision = self._decide(
                parsed, history, problem, context, token, on, epoch, usage, cost
            )
        except _Refused as refused:
            decision = refused.decision
        except Exception as error:  # noqa: BLE001 - fail closed: a check that cannot answer refuses
            decision = _refuse("check_error", None, None, error=type(error).__name__)
        for post in self.post_checks:
            if decision.decision == REFUSE:
                break
            if post.name not in on:
                continue
            try:
                if turns is None:
                    proposed = post.run(parsed, decision, session=history, context=context)
                else:
                    proposed = post.run(
                        parsed, decision, session=history, context=context, turns=turns
                    )
            except Exception as error:  # noqa: BLE001 - a broken post-check fails closed
                proposed = _refuse("post_check_error", None, post.name, error=type(error).__name__)
            decision = stricter_only(decision, proposed, post.name)
        return decision

    def _decide(
        self,
        call: Call,
        history: History | None,
        history_problem: HistoryInvalid | None,
        context: Any,
        token: str | None,
        on: frozenset[str],
        epoch: float,
        usage: Mapping[str, Any] | None,
        cost: Any = None,
    ) -> Decision:
        catalogue = self.catalogue
        tool = catalogue.tools.get(call.tool)
        arguments = call.arguments
        kind = None
        if tool is not None:
            kind = tool.kind if "tool_kinds" in on else tool.kind_uninferred
        found = None

        # Admission chain.
        if tool is not None and tool.withdrawn:
            return _refuse("withdrawn", None, "withdrawn", tool=call.tool)
        if "address" in on:
            found = find_destinations(
                arguments, tool.arguments.host_arguments if tool else frozenset()
            )
            self._address(found, tool)
            if tool is not None and tool.fetches:
                self._address(find_fetched(arguments, tool.fetches), tool)
        if "plan_step" in on and call.plan is not None and history is not None:
            self._plan(call, history, epoch)
        # tier, labels and payment_limit are present but not yet active: every call passes them.

        # 1: the tool is in the catalogue and this agent may reach it; the licence.
        if tool is None:
            return _refuse("unknown_tool", 1, "allowed_tools", tool=call.tool)
        agent = self._agent_of(call)
        if catalogue.agents:
            if agent is None:
                return _refuse(
                    "agent_required", 1, "allowed_tools", agents=sorted(catalogue.agents)
                )
            reach = catalogue.agents.get(agent)
            if reach is None:
                return _refuse(
                    "agent_required", 1, "allowed_tools", agent=agent, problem="unknown agent"
                )
            if call.tool not in reach.tools:
                return _refuse("unknown_tool", 1, "allowed_tools", tool=call.tool, agent=agent)
        licence = self.settings.licence
        if licence is not None and licence.lapsed(dt.datetime.fromtimestamp(epoch, dt.UTC).date()):
            if licence.on_lapse == "refuse_all" or is_write(kind):
                return _refuse(
                    "licence_lapsed",
                    1,
                    "allowed_tools",
                    valid_until=licence.valid_until.isoformat(),
                )

        # 2: the history verifies.
        if history is None:
            return _refuse(
                "history_invalid",
                2,
                "session_record",
                index=history_problem.index,
                problem=history_problem.problem,
            )

        # 3: the arguments fit the tool's schema.
        if "arguments" in on:
            problems = validate_arguments(tool.arguments, arguments)
            if problems:
                return _refuse(
                    "argument_schema",
                    3,
                    "arguments",
                    pointer=problems[0]["pointer"],
                    errors=problems,
                )

        # 4: no destination in a tool that is not declared to send out.
        if "destinations" in on and kind != SENDS_OUT:
            if found is None:
                found = find_destinations(arguments, tool.arguments.host_arguments)
            if tool.fetches and kind == READ and "address" in on:
                # A read's fetched addresses pass here: the address check above held them.
                found = [item for item in found if not in_arguments(item.pointer, tool.fetches)]
            if found:
                first = found[0]
                return _refuse(
                    "undeclared_destination",
                    4,
                    "destinations",
                    pointer=first.pointer,
                    form=first.form,
                    destination=_shown(tool, first.pointer, first.host),
                )

        # 5: order rules over the verified history.
        if "order" in on:
            self._order(tool, arguments, history)

        # 6: an undo matches the step it undoes, once.
        verified_undo = False
        if "undo" in on and call.compensation_of is not None:
            self._undo(tool, call, history)
            verified_undo = True

        # 7: the tool's own checks (never on an undo).
        if "your_rules" in on and tool.checks and not verified_undo:
            failure = evaluate(
                tool.checks,
                arguments,
                history,
                usage,
                tool=tool.name,
                cost=self.run_cost_of(tool, call.arguments, history, cost),
            )
            if failure is not None:
                reason, detail = failure
                rule = detail.pop("rule")
                raise _Refused(_refuse(reason, 7, "your_rules", rule=rule, **detail))

        # 8: the rulebook's gate.
        gate_reasons: tuple[str, ...] = ()
        gate_detail: dict[str, Any] | None = None
        gate_allow = False
        if (
            "your_rules" in on
            and self.rulebook is not None
            and (self._governed is None or call.tool in self._governed)
        ):
            answer = self._gate(call, history, context, usage)
            if answer is not None:
                decision = getattr(answer, "decision", None)
                reasons = tuple(getattr(answer, "reasons", ()) or ())
                detail = dict(getattr(answer, "detail", {}) or {})
                rule = _gate_rule(detail)
                if decision == "refuse":
                    return Decision(
                        REFUSE,
                        reasons or ("refuse",),
                        {**detail, "step": 8, "check": "your_rules"},
                        str(rule) if rule is not None else "your_rules",
                    )
                if decision == "confirm":
                    gate_reasons = reasons or ("gate_clarify",)
                    gate_detail = detail
                elif decision == "allow":
                    gate_allow = True
                    gate_detail = detail
                elif decision != "pass":
                    return _refuse(
                        "rulebook_error", 8, "your_rules", problem="the gate gave no answer"
                    )

        # 9: outside content, refused where the policy says so.
        write = is_write(kind)
        tainting: list[str] = []
        if "outside_content" in on and write:
            tainting = self._tainting(tool, call, history)
            if tainting and self.settings.taint_policy == "refuse":
                return _refuse("tainted_call", 9, "outside_content", labels=tainting)

        # 10: a confirmation token that covers exactly this call.
        if token is not None:
            failure = check_call_token(
                token, self._point(call, history), key=self._keys.token, now=epoch
            )
            if failure is None:
                return Decision(ALLOW, ("confirmed",), {"step": 10, "check": "confirmation"}, None)
            reason, differing = failure
            detail = {"mismatch": differing} if differing else {}
            return _refuse(reason, 10, "confirmation", **detail)

        # 11: every reason a person is needed, together.
        reasons = list(gate_reasons)
        if write:
            if "grounded" in on:
                bound = self._bound_arguments(call, history) if verified_undo else frozenset()
                for name in unvouched_arguments(arguments, call.origins):
                    if name not in bound and name not in tool.free_text:
                        reasons.append(f"argument_origin: {name}")
            if tainting:
                reasons.append("tainted_call")
            if tool.irreversible:
                reasons.append("irreversible_pivot")
            if tool.arguments.partial_arguments(arguments):
                reasons.append("schema_partial")
            if not reasons and not verified_undo and not gate_allow:
                reasons.append("write")
        if reasons:
            detail = {"step": 11, "arguments": self._shown_arguments(tool, call)}
            if tainting:
                detail["labels"] = tainting
            rule = None
            if gate_reasons and gate_detail is not None:
                detail["gate"] = gate_detail
                rule = _gate_rule(gate_detail)
            return Decision(CONFIRM, tuple(reasons), detail, rule)

        # 12: a verified undo; 13: anything nothing above held back.
        if verified_undo:
            return Decision(ALLOW, ("compensation",), {"step": 12, "check": "undo"}, None)
        if gate_allow:
            rule = _gate_rule(gate_detail) if gate_detail else None
            return Decision(ALLOW, ("allow",), {"step": 13, "gate": gate_detail}, rule)
        if tool.fetches and kind == READ:
            return Decision(ALLOW, ("allow",), {"step": 13, "fetches": self.fetched(call)}, None)
        return Decision(ALLOW, ("allow",), {"step": 13}, None)

    # -- steps that need more than a few lines -------------------------------------------------

    def _address(self, found, tool: Tool | None) -> None:
        settings = self.settings
        for item in found:
            reason = classify_host(
                item.host,
                allow=settings.address_allow,
                allow_names=settings.address_allow_names,
                deny=settings.address_deny,
                deny_names=settings.address_deny_names,
            )
            if reason is not None:
                raise _Refused(
                    _refuse(
                        "disallowed_address",
                        None,
                        "address",
                        pointer=item.pointer,
                        range=reason,
                        host=_shown(tool, item.pointer, item.host),
                    )
                )

    def run_cost_of(
        self, tool: Tool, arguments: Mapping[str, Any], history: History, cost: Any
    ) -> RunCost | None:
        """The figures a `cap_cost` check of `tool` reads for a call with `arguments` (`cost`:
        what the host says it costs), computed only for a tool that has one."""
        if not any(item.form == "cap_cost" for item in tool.checks):
            return None
        this_call = declared_cost(tool.cost, arguments)
        if cost is not None:
            reported = cents(cost)
            this_call = reported if this_call is MISSING_COST else max(this_call, reported)
        argument = tool.cost.argument if tool.cost is not None else None
        return RunCost(history.cost, this_call, argument)

    def fetched(self, call: Mapping[str, Any] | Call) -> list[dict[str, str]]:
        """What a read fetches: `{pointer, destination}` for each text in its `fetches` arguments,
        for the firewall's egress rules (a call at stage `egress` with that `destination`)."""
        parsed = call if isinstance(call, Call) else read_call(call)
        tool = self.catalogue.tools.get(parsed.tool)
        if tool is None or not tool.fetches:
            return []
        out = []
        for name in tool.fetches:
            if name in parsed.arguments:
                for pointer, text in _texts(parsed.arguments[name], "/" + _escape(name)):
                    out.append({"pointer": pointer, "destination": text})
        return out

    def _plan(self, call: Call, history: History, epoch: float) -> None:
        plan = call.plan
        steps = plan["steps"]

        def off(problem: str, **detail: Any) -> _Refused:
            return _Refused(
                _refuse("off_plan", None, "plan_step", plan=plan["id"], problem=problem, **detail)
            )

        problem = check_plan_token(
            call.plan_token, plan["id"], steps, history.session, key=self._keys.token, now=epoch
        )
        if problem is not None:
            raise off(problem)
        step = history.plan_progress(plan["id"])
        if call.plan_step is not None and call.plan_step != step:
            raise off("the call is not the plan's next step", expected=step, given=call.plan_step)
        if step >= len(steps):
            raise off("every step of the plan already ran", expected=step)
        approved = steps[step]
        if not isinstance(approved, Mapping) or approved.get("tool") != call.tool:
            raise off("the call is not the plan's next step", expected=step)
        try:
            same = digest(approved.get("arguments", {})) == digest(call.arguments)
        except NotJSON:
            same = False
        if not same:
            raise off("the values differ from the approved step", expected=step)

    def _order(self, tool: Tool, arguments: Mapping[str, Any], history: History) -> None:
        for rule in tool.after:
            if not _matches(rule, arguments, history):
                raise _Refused(_order_refusal(rule.text, rule))
        for rule in tool.not_after:
            if _matches(rule, arguments, history):
                raise _Refused(_order_refusal(rule.text, rule))
        if tool.at_most is not None and history.count(tool.name) >= tool.at_most:
            raise _Refused(
                _order_refusal(f"at_most {tool.at_most}", None, ran=history.count(tool.name))
            )

    def _undo(self, tool: Tool, call: Call, history: History) -> None:
        index = call.compensation_of

        def refuse(reason: str, problem: str, **detail: Any) -> _Refused:
            return _Refused(_refuse(reason, 6, "undo", undoes=index, problem=problem, **detail))

        if index >= len(history):
            raise refuse("compensation_mismatch", "the step it undoes did not run")
        step = history[index].content
        undone = self.catalogue.tools.get(step["tool"])
        if undone is None or undone.compensation is None or undone.compensation.tool != tool.name:
            raise refuse(
                "compensation_mismatch",
                "it is not the undo declared for that step",
                undone_tool=step["tool"],
            )
        if history.undone_by(index) is not None:
            raise refuse(
                "compensation_spent", "the step was already undone", by=history.undone_by(index)
            )
        for binding in undone.compensation.bind:
            expected = resolve(step, binding.source)
            given = call.arguments.get(binding.argument, MISSING)
            if expected is MISSING or given is MISSING or value_key(expected) != value_key(given):
                raise refuse(
                    "compensation_mismatch",
                    "an argument differs from the step it undoes",
                    argument=binding.argument,
                )

    def _gate(self, call: Call, history: History, context, usage):
        try:
            gate, resolve_facts = _rulebook_api()
        except ImportError:
            raise _Refused(
                _refuse(
                    "rulebook_unavailable",
                    8,
                    "your_rules",
                    problem="the rulebook compiler is not installed",
                )
            ) from None
        try:
            if self._facts_read is not None and not self._facts_read:
                facts: Mapping[str, bool] = {}
            else:
                facts = resolve_facts(
                    self._facts_spec,
                    arguments=call.arguments,
                    results=self._fact_results(call, history),
                    reads_outside=tuple(self.catalogue.outside_tools),
                    context=context,
                )
            return gate(
                self.rulebook,
                tool=call.tool,
                arguments=call.arguments,
                facts=facts,
                results=history.results,
                usage=usage,
            )
        except Exception as error:  # noqa: BLE001 - a rulebook that cannot answer refuses
            # The compiler's errors carry a code (`facts_unavailable`, `rulebook_not_held`, ...).
            reason = getattr(error, "code", None)
            if not isinstance(reason, str) or not reason:
                reason = "rulebook_error"
            raise _Refused(_refuse(reason, 8, "your_rules", error=type(error).__name__)) from None

    def _fact_results(self, call: Call, history: History) -> list[Mapping[str, Any]]:
        """The results the agent file's facts read: for each fact, the latest call of its tool with
        the checked call's values of its `same` arguments. The facts come out as they would from the
        whole history, at a cost that does not grow with it."""
        positions: set[int] = set()
        arguments = call.arguments
        for source in self._fact_sources:
            if not source.same:
                latest = history.latest_index(source.tool)
                if latest is not None:
                    positions.add(latest)
                continue
            if not all(name in arguments for name in source.same):
                continue
            first, *rest = source.same
            candidates = history.matching(source.tool, ("arguments", first), arguments[first])
            for position in reversed(candidates):
                content = history[position].content
                if all(
                    value_key(resolve(content, ("arguments", name))) == value_key(arguments[name])
                    for name in rest
                ):
                    positions.add(position)
                    break
        return [history[position].content for position in sorted(positions)]

    def _tainting(self, tool: Tool, call: Call, history: History) -> list[str]:
        labels = set(call.labels) | history.labels
        for name, outside in self.catalogue.outside_tools.items():
            if history.ran(name):
                labels.update(outside)
        if not labels:
            return []
        return tainting_labels(
            labels, required=tool.requires_trust, label_trust=self.settings.label_trust
        )

    def _bound_arguments(self, call: Call, history: History) -> frozenset[str]:
        """The arguments of a verified undo that come from the step it undoes."""
        undone = self.catalogue.tools[history[call.compensation_of].content["tool"]]
        return frozenset(binding.argument for binding in undone.compensation.bind)

    def _shown_arguments(self, tool: Tool, call: Call) -> dict[str, Any]:
        """Each argument and where its value came from, as the person sees them (secrets hidden)."""
        shown = {
            name: {
                "value": SECRET if name in tool.secret else value,
                "origin": call.origins.get(name, "model"),
            }
            for name, value in call.arguments.items()
        }
        for name in tool.free_text:
            if name in shown:
                shown[name]["free_text"] = True
        return shown


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _texts(value: Any, pointer: str):
    """Each text inside a JSON value, with its pointer."""
    if isinstance(value, str):
        yield pointer, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _texts(item, f"{pointer}/{_escape(str(key))}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _texts(item, f"{pointer}/{index}")


def _gate_rule(detail: Mapping[str, Any]) -> str | None:
    """How a decision names the rulebook's rule: its flow, its rule, or its rule sheet's row."""
    for key in ("flow", "rule"):
        if detail.get(key):
            return str(detail[key])
    if detail.get("row") is not None:
        return f"row {detail['row']}"
    return None


def _shown(tool: Tool | None, pointer: str, value: str) -> str:
    if tool is not None and pointer.split("/")[1] in tool.secret:
        return SECRET
    return value


def _matches(rule: OrderRule, arguments: Mapping[str, Any], history: History) -> bool:
    """Say whether an earlier call of the rule's tool matches every binding of the rule."""
    if not rule.bind:
        return history.ran(rule.tool)
    first: Binding = rule.bind[0]
    if first.argument not in arguments:
        return False
    candidates = history.matching(rule.tool, first.source, arguments[first.argument])
    for position in reversed(candidates):
        content = history[position].content
        if all(
            binding.argument in arguments
            and value_key(resolve(content, binding.source))
            == value_key(arguments[binding.argument])
            for binding in rule.bind[1:]
        ):
            return True
    return False


def _head_of(data: Mapping[str, Any]) -> dict[str, Any]:
    """The head a history's JSON claims for itself (its own length and last MAC)."""
    entries = data.get("entries")
    last = entries[-1] if isinstance(entries, list) and entries else None
    mac = last.get("mac") if isinstance(last, Mapping) else ""
    return {"length": len(entries) if isinstance(entries, list) else -1, "mac": mac}


def _order_refusal(text: str, rule: OrderRule | None, **detail: Any) -> Decision:
    if rule is not None and rule.bind:
        detail["bind"] = {binding.argument: ".".join(binding.source) for binding in rule.bind}
    return _refuse("order_rule", 5, "order", rule=text, **detail)


def check_call(
    call: Any,
    *,
    catalogue: Catalogue | Mapping[str, Any],
    key: bytes | str,
    session: History | Mapping[str, Any],
    head: Mapping[str, Any] | None = None,
    rulebook: Mapping[str, Any] | None = None,
    settings: Settings | Mapping[str, Any] | None = None,
    **options: Any,
) -> Decision:
    """Decide one call without keeping a `ToolCheck` (builds one each time: prefer `ToolCheck`)."""
    return ToolCheck(catalogue, key=key, rulebook=rulebook, settings=settings).check(
        call, session=session, head=head, **options
    )
