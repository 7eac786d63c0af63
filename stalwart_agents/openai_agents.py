"""Agents built with the OpenAI Agents SDK run under Stalwart (extra `stalwart[openai-agents]`).

`StalwartTools(guard)` makes the SDK's `FunctionTool`s of the guard's agent from its catalogue
(name, description, parameters), each with three hooks, all answered by the one check:

- `needs_approval`: asks the check; a `confirm` makes the SDK interrupt the run
  (`result.interruptions`, a `ToolApprovalItem`), and `tools.prompt(item)` is what the person
  must see (the call, each argument with its origin, the reasons);
- a tool input guardrail: a call the check refuses is rejected, the reasons as the rejection
  message the model reads (`reject_content`); nothing runs;
- `on_invoke_tool`: runs the call through the session's executor, its output recorded in the
  signed history. A call the person approved the SDK's way (`state.approve(item)`, then
  `Runner.run(agent, state)`) is signed for exactly the arguments shown and checked again with
  that token, so it runs only as approved (changed arguments are refused, `token_mismatch`); one
  rejected (`state.reject(item)`) never reaches it.

`tools.input_guardrail()` reads the person's input as turns before the model runs (an agent-level
input guardrail that does not run in parallel); `tools.run_config()` has a call of a tool the
agent does not have answered to the model by the check (`unknown_tool`) instead of ending the run,
and keeps a catalogue's `secret` arguments out of the SDK's traces (no tool inputs or outputs traced).
Against the console (`STALWART_URL`), the approval comes from the approvals queue: a resumed call
waits for it (`wait_for_approval`).

`tools.guard_agent(agent)` puts every other tool call of an SDK agent through the same check: the
host's own `FunctionTool`s and its MCP servers' tools (each time the SDK lists them) get the same
hooks, so a tool the catalogue does not know is refused (`unknown_tool`) and nothing runs; the
agents it hands off to are guarded too, and so is every copy of a guarded agent (`agent.clone`).
A tool no check can stand in front of (a hosted tool, a computer, shell or patch tool) raises
`UncheckedToolError`; so does a run (`tools.run_config()`) of an agent with a tool that is not
checked: fail closed, nothing runs unchecked. A guarded tool refuses the same way, in any run, each
time the SDK lists its agent's tools: so a saved state resumed by an agent that was not guarded
(its approved calls run before any model call) raises before they run.

Every decision carries the run's trace id and group id as its run and thread ids (`tools.ids`). A
handoff is another agent's `StalwartTools` over `guard.handoff(name)`: the same session and signed
history. `Runner.run_streamed` goes through the same hooks.

Framework imports live only in this module: the core SDK never needs the Agents SDK.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from agents import Agent, FunctionTool, Handoff, InputGuardrail, RunConfig
from agents.exceptions import UserError
from agents.guardrail import GuardrailFunctionOutput
from agents.tool_guardrails import ToolGuardrailFunctionOutput, ToolInputGuardrail

from stalwart_agents.guarded import CONFIRM, RAN, REFUSED, Guard, Outcome, result_text

__all__ = ["StalwartTools", "UncheckedToolError"]

#: The sessions with a host's tool wrapped (`StalwartTools._wrap`): its call holds the session in
#: a thread while its coroutine runs on the event loop, so their other calls leave the loop free
#: while they wait for the session (a thread each); the calls of any other session run inline.
_ON_THE_LOOP: weakref.WeakSet[Any] = weakref.WeakSet()

#: The attribute a guarded SDK agent carries: the `StalwartTools` whose guard checks its calls.
_GUARDED = "_stalwart_tools"


def _arguments(text: Any) -> dict[str, Any] | None:
    if isinstance(text, Mapping):
        return dict(text)
    try:
        value = json.loads(text or "{}")
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _turns(given: Any) -> list[str]:
    """The person's words in an Agents SDK input: the text, or each user message's text."""
    if isinstance(given, str):
        return [given]
    turns: list[str] = []
    for item in given or ():
        if not isinstance(item, Mapping) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            turns.append(content)
        elif isinstance(content, list):
            parts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
            turns.append(" ".join(p for p in parts if p))
    return turns


def _plain(result: Any) -> Any:
    """A host tool's output as the signed history records it: an MCP tool's text (the SDK's
    `{"type": "text", "text": ...}`) as its JSON value where it is JSON, else as text."""
    if isinstance(result, list) and len(result) == 1:
        result = result[0]
    field = result.get if isinstance(result, Mapping) else lambda name: getattr(result, name, None)
    if field("type") != "text":
        return result
    try:
        return json.loads(field("text"))
    except (TypeError, ValueError):
        return field("text")


def _trace_ids() -> dict[str, str]:
    """The current trace's id (the run) and group id (the conversation), where a trace records."""
    from agents.tracing import get_current_trace

    trace = get_current_trace()
    ids: dict[str, str] = {}
    trace_id = getattr(trace, "trace_id", None)
    if isinstance(trace_id, str) and trace_id and trace_id != "no-op":
        ids["run_id"] = trace_id
    group = getattr(trace, "group_id", None)
    if isinstance(group, str) and group:
        ids["thread_id"] = group
    return ids


class UncheckedToolError(UserError):
    """An agent has a tool no check can stand in front of: its run does not start."""


class _Check:
    """A guarded tool's input guardrail: the check of `owner` for the calls of tool `name`."""

    def __init__(self, owner: StalwartTools, name: str) -> None:
        self.owner = owner
        self.name = name
        self.__name__ = "stalwart"

    def __call__(self, data: Any) -> ToolGuardrailFunctionOutput:
        return self.owner._guardrail(self.name, data.context, self.owner.ids(data.context))


def _owner(tool: Any) -> StalwartTools | None:
    """The `StalwartTools` whose check a tool's calls go through, if they go through one."""
    for guardrail in getattr(tool, "tool_input_guardrails", None) or ():
        function = getattr(guardrail, "guardrail_function", None)
        if isinstance(function, _Check):
            return function.owner
    return None


#: The SDK's kinds of tool, in words (an error names a tool by its name and kind).
KINDS = {
    "FunctionTool": "a function tool",
    "ComputerTool": "a computer tool, run by the SDK",
    "LocalShellTool": "a shell tool, run by the SDK",
    "ShellTool": "a shell tool, run by the SDK",
    "ApplyPatchTool": "a patch tool, run by the SDK",
    "CustomTool": "a custom tool",
}


def _kind(tool: Any) -> str:
    """A tool as an error names it: its name and kind (a hosted tool runs on OpenAI's side)."""
    kind = KINDS.get(type(tool).__name__, "a hosted tool, run by OpenAI")
    return f"`{getattr(tool, 'name', None) or type(tool).__name__}` ({kind})"


def _reached(agent: Any) -> Iterator[Agent[Any]]:
    """An SDK agent and every agent a run of it can reach: the agents it hands off to and the
    agents its tools run (`agent.as_tool`), each once."""
    seen: set[int] = set()
    waiting = [agent]
    while waiting:
        current = waiting.pop()
        if id(current) in seen or not isinstance(current, Agent):
            continue
        seen.add(id(current))
        yield current
        for item in getattr(current, "handoffs", None) or ():
            if isinstance(item, Handoff):
                ref = getattr(item, "_agent_ref", None)
                item = ref() if callable(ref) else None
            waiting.append(item)
        for tool in current.tools:
            waiting.append(getattr(tool, "_agent_instance", None))


def _unchecked(agent: Any) -> list[str]:
    """What of an agent's tools no check stands in front of (nothing, for a guarded agent)."""
    found = [
        _kind(tool)
        for tool in getattr(agent, "tools", None) or ()
        if not isinstance(tool, FunctionTool) or _owner(tool) is None
    ]
    if getattr(agent, "mcp_servers", None) and getattr(agent, _GUARDED, None) is None:
        names = ", ".join(f"`{getattr(s, 'name', type(s).__name__)}`" for s in agent.mcp_servers)
        found.append(f"the tools of the MCP servers {names}")
    return found


def _refuse_unchecked(agent: Any) -> None:
    """Raise `UncheckedToolError` for an agent with a tool no check stands in front of."""
    unchecked = _unchecked(agent)
    if unchecked:
        raise UncheckedToolError(
            f"stalwart cannot check {', '.join(unchecked)} of agent `{agent.name}`: "
            "run the agent as `tools.guard_agent(agent)`, so every call is checked"
        )


def _checked_agent(own: Any = True) -> Callable[[Any, Any], Any]:
    """A guarded tool's `is_enabled`: in a run, the agent holding it has every tool checked
    (else `UncheckedToolError`), then the tool's own answer. The SDK asks each time a run lists
    an agent's tools: before each model call, and when a run state is resumed, before the calls
    approved in it are run (where `run_config`'s filter, before the model, would come too late)."""

    async def is_enabled(ctx: Any, agent: Any) -> bool:
        from agents.tracing import get_current_trace

        # A run always has a current trace (a no-op one with tracing off). Outside a run the
        # SDK lists tools only to restore a saved state (`RunState.from_json`), which runs
        # nothing and would hide the error's words: the run that resumes it refuses instead.
        if get_current_trace() is not None:
            _refuse_unchecked(agent)
        if callable(own):
            answer = own(ctx, agent)
            return bool(await answer if inspect.isawaitable(answer) else answer)
        return bool(own)

    return is_enabled


#: The guarded class made for each class of SDK agent (`_guarded_class`).
_GUARDED_CLASSES: dict[type, type] = {}


def _guarded_class(kind: type) -> type:
    """`kind` as a guarded agent's class: a dataclass of `kind`'s fields and one more, the
    `StalwartTools` that checks its calls (`_GUARDED`), whose MCP tools are wrapped each time the
    SDK lists them. `agent.clone(...)` is `dataclasses.replace`, which builds the copy from the
    fields: the copy is of this class, its field the original's, so it is guarded as the
    original is, the tools and agents given to the copy included."""
    if kind in _GUARDED_CLASSES.values():
        return kind
    made = _GUARDED_CLASSES.get(kind)
    if made is not None:
        return made

    def __post_init__(self: Any) -> None:
        super(made, self).__post_init__()
        owner = getattr(self, _GUARDED, None)
        if owner is not None:  # a copy of a guarded agent
            owner.guard_agent(self)

    async def get_mcp_tools(self: Any, run_context: Any) -> list[Any]:
        # The SDK lists an agent's MCP tools afresh on each turn, through this method.
        tools = await super(made, self).get_mcp_tools(run_context)
        cannot = [_kind(tool) for tool in tools if not isinstance(tool, FunctionTool)]
        if cannot:
            raise UncheckedToolError(
                f"stalwart cannot check the calls of {', '.join(cannot)} of agent "
                f"`{self.name}`'s MCP servers: they would run unchecked"
            )
        owner = getattr(self, _GUARDED, None)
        if owner is None and tools:  # a copy told to drop its guard (`_stalwart_tools=None`)
            raise UncheckedToolError(
                f"stalwart cannot check the tools of agent `{self.name}`'s MCP servers: "
                "the agent was copied without its guard"
            )
        return [owner._wrap(tool) for tool in tools]

    owner = dataclasses.field(default=None, repr=False, compare=False, kw_only=True)
    made = dataclasses.make_dataclass(
        kind.__name__,
        [(_GUARDED, Any, owner)],
        bases=(kind,),
        namespace={
            "__module__": __name__,
            "__post_init__": __post_init__,
            "get_mcp_tools": get_mcp_tools,
        },
        eq=False,
        repr=False,
    )
    _GUARDED_CLASSES[kind] = made
    return made


class StalwartTools:
    """The guarded `FunctionTool`s of one guard's agent, and the hooks they share.

    `names` limits the tools (default: every tool the agent reaches in the catalogue that the
    guard has a function for); `functions` adds or replaces functions by tool name.
    """

    def __init__(
        self,
        guard: Guard,
        catalogue: Mapping[str, Any],
        *,
        names: Sequence[str] | None = None,
        functions: Mapping[str, Callable[[dict[str, Any]], Any]] | None = None,
    ) -> None:
        self.guard = guard
        self.catalogue = catalogue
        self.functions = {**guard.tools, **dict(functions or {})}
        self._pending: dict[str, Outcome] = {}
        # The check `needs_approval` made, reused by the guardrail for the same call at the same
        # point of the conversation (nothing ran in between, no new outside content).
        self._checked: dict[str, tuple[tuple[Any, ...], Any]] = {}
        # The ids `run_config(trace_id=..., group_id=...)` was given: a run with tracing off
        # still names its run and conversation with them.
        self._config_ids: dict[str, str] = {}
        # The `StalwartTools` `guard_agent` made for agents reached without one of their own.
        self._others: list[StalwartTools] = []
        tools = {t["name"]: t for t in catalogue.get("tools", []) if isinstance(t, Mapping)}
        reach = (catalogue.get("agents") or {}).get(guard.agent) or {}
        wanted = list(names) if names is not None else list(reach.get("tools") or tools)
        self.tools: list[FunctionTool] = [
            self._tool(tools[name]) for name in wanted if name in tools and name in self.functions
        ]
        # Whether a tool here has an argument the catalogue marks `secret` (see `run_config`).
        self.secret = any(tools[t.name].get("secret") for t in self.tools)
        self._specs = tools

    # -- the hooks ------------------------------------------------------------------------------

    def _tool(self, spec: Mapping[str, Any]) -> FunctionTool:
        name = str(spec["name"])

        async def needs_approval(ctx: Any, params: dict[str, Any], call_id: str) -> bool:
            return self._needs_approval(name, params, call_id, self.ids(ctx))

        async def invoke(ctx: Any, text: str) -> str:
            call_id = getattr(ctx, "tool_call_id", "")
            given = (self._invoke, name, text, call_id, self.ids(ctx), self.functions[name])
            if self.guard.session not in _ON_THE_LOOP:
                return given[0](*given[1:])  # no call of the session waits for this loop
            # In a thread: a session runs its calls one at a time, and a host's tool waits for
            # this loop (see `_wrap`); a call waiting for another must not hold the loop.
            return await asyncio.to_thread(*given)

        return FunctionTool(
            name=name,
            description=str(spec.get("description") or name),
            params_json_schema=dict(spec.get("parameters") or {"type": "object"}),
            on_invoke_tool=invoke,
            strict_json_schema=False,
            needs_approval=needs_approval,
            tool_input_guardrails=[ToolInputGuardrail(_Check(self, name), name="stalwart")],
            is_enabled=_checked_agent(),
        )

    def _wrap(self, tool: FunctionTool) -> FunctionTool:
        """A host's own `FunctionTool` (an MCP server's too), its calls through this check: the
        same hooks as a guarded tool's, the host's tool run by the session's executor. The
        tool's own approval and guardrails still apply after the check's."""
        name = tool.name
        own_approval = tool.needs_approval
        original = tool.on_invoke_tool

        async def needs_approval(ctx: Any, params: dict[str, Any], call_id: str) -> bool:
            if self._needs_approval(name, params, call_id, self.ids(ctx)):
                return True
            if self._checked[call_id][1].decision == "refuse":
                return False  # the guardrail rejects it: no person is asked about a refusal
            if callable(own_approval):
                answer = own_approval(ctx, params, call_id)
                return bool(await answer if inspect.isawaitable(answer) else answer)
            return bool(own_approval)

        async def invoke(ctx: Any, text: str) -> str:
            loop = asyncio.get_running_loop()

            def function(arguments: dict[str, Any]) -> Any:
                # The host's tool is a coroutine of this loop: the executor's thread waits for it.
                given = json.dumps(arguments)
                result = asyncio.run_coroutine_threadsafe(original(ctx, given), loop).result()
                return _plain(result)

            call_id = getattr(ctx, "tool_call_id", "")
            return await asyncio.to_thread(
                self._invoke, name, text, call_id, self.ids(ctx), function
            )

        guardrails = [ToolInputGuardrail(_Check(self, name), name="stalwart")]
        _ON_THE_LOOP.add(self.guard.session)
        spec = self._specs.get(name) or {}
        self.secret = self.secret or bool(spec.get("secret"))
        return dataclasses.replace(
            tool,
            on_invoke_tool=invoke,
            needs_approval=needs_approval,
            tool_input_guardrails=[*guardrails, *(tool.tool_input_guardrails or ())],
            is_enabled=_checked_agent(tool.is_enabled),
        )

    def _point(self, tool: str, params: Mapping[str, Any]) -> tuple[Any, ...]:
        text = json.dumps(params, sort_keys=True, default=str)
        return (tool, text, len(self.guard.ran), len(self.guard.labels))

    def ids(self, ctx: Any = None) -> dict[str, str]:
        """The run and thread ids of a call: the trace's id and group id (the current trace's,
        else the run's `RunConfig`'s, else those `run_config(...)` was given)."""
        ids = dict(self._config_ids)
        config = getattr(ctx, "run_config", None)
        for name, field in (("run_id", "trace_id"), ("thread_id", "group_id")):
            value = getattr(config, field, None)
            if isinstance(value, str) and value:
                ids[name] = value
        return {**ids, **_trace_ids()}

    def _needs_approval(
        self, tool: str, params: Mapping[str, Any], call_id: str, ids: Mapping[str, str]
    ) -> bool:
        # A question asked earlier under this call id (a call rejected, or a run abandoned) is
        # not this call's: only the check made now may put it to the person.
        self._pending.pop(call_id, None)
        check = self.guard.check(tool, params, **ids)
        self._checked[call_id] = (self._point(tool, params), check)
        if check.decision != "confirm":
            return False
        prompt = self.guard.prompt(
            tool, dict(params), check.reasons, check.detail, approval=check.approval
        )
        self._pending[call_id] = Outcome(
            CONFIRM,
            tool,
            dict(params),
            reasons=tuple(check.reasons),
            detail=dict(check.detail),
            prompt=prompt,
            approval=check.approval,
        )
        return True

    def _guardrail(
        self, tool: str, ctx: Any, ids: Mapping[str, str]
    ) -> ToolGuardrailFunctionOutput:
        call_id = getattr(ctx, "tool_call_id", "")
        arguments = _arguments(getattr(ctx, "tool_arguments", None))
        if arguments is None:
            return ToolGuardrailFunctionOutput.reject_content(
                f"Stalwart refused `{tool}`: its arguments are not a JSON object. Nothing ran."
            )
        if self._asked(call_id, tool) is not None:
            # Approved the SDK's way: the call is checked with its token when invoked.
            return ToolGuardrailFunctionOutput.allow()
        point, check = self._checked.pop(call_id, (None, None))
        if check is None or point != self._point(tool, arguments):
            check = self.guard.check(tool, arguments, **ids)
        if check.decision == "refuse":
            refused = Outcome(REFUSED, tool, arguments, reasons=tuple(check.reasons))
            return ToolGuardrailFunctionOutput.reject_content(
                refused.message, output_info={"reasons": list(check.reasons)}
            )
        return ToolGuardrailFunctionOutput.allow(output_info={"decision": check.decision})

    def _asked(self, call_id: str, tool: str) -> Outcome | None:
        """The question put to the person for this call (its id, its tool), if one was."""
        pending = self._pending.get(call_id)
        return pending if pending is not None and pending.tool == tool else None

    def _invoke(
        self,
        tool: str,
        text: str,
        call_id: str,
        ids: Mapping[str, str],
        function: Callable[[dict[str, Any]], Any],
    ) -> str:
        arguments = _arguments(text)
        if arguments is None:
            return f"Stalwart refused `{tool}`: its arguments are not a JSON object. Nothing ran."
        pending = self._asked(call_id, tool)
        self._pending.pop(call_id, None)
        if pending is not None:
            # The SDK only invokes an approved call: the yes is signed for the call shown, and the
            # call as invoked is checked with it (different arguments: token_mismatch).
            outcome = self.guard.resume(
                pending, {"approved": True, "arguments": arguments}, function=function, **ids
            )
        else:
            outcome = self.guard.call_with(tool, arguments, function=function, **ids)
        if outcome.status == RAN:
            return result_text(outcome.result)
        return outcome.message

    # -- what a host uses -----------------------------------------------------------------------

    def prompt(self, item: Any) -> dict[str, Any]:
        """What the person must see for an interruption (`ToolApprovalItem`)."""
        call_id = getattr(getattr(item, "raw_item", None), "call_id", None) or getattr(
            item, "call_id", ""
        )
        for tools in (self, *self._others):
            pending = tools._pending.get(str(call_id))
            if pending is not None:
                return dict(pending.prompt or {})
        return {"call": {"tool": getattr(item, "tool_name", "")}, "reasons": []}

    def guard_agent(self, agent: Agent[Any]) -> Agent[Any]:
        """Put every tool call of an SDK agent through the check, and answer the agent.

        Each `FunctionTool` of the agent that is not a guarded one (the host's own) is replaced by
        one whose calls go through this check; the tools of its MCP servers are, each time the
        SDK lists them. The agents it hands off to and those its tools run (`as_tool`) are
        guarded too, each by the `StalwartTools` its guarded tools have, else by one over
        `guard.handoff(name)`. A tool no check can stand in front of (a hosted tool such as
        `WebSearchTool`, a computer, shell or patch tool) raises `UncheckedToolError`, naming it,
        and nothing is changed. The agent is changed in place: guard it before a run. Its copies
        (`agent.clone(...)`, `dataclasses.replace`) are guarded as it is, by the same check, the
        tools and agents given to a copy included (a tool no check can stand in front of raises
        `UncheckedToolError` from `clone`)."""
        reached = list(_reached(agent))
        cannot = [
            f"{_kind(tool)} of agent `{each.name}`"
            for each in reached
            for tool in each.tools
            if not isinstance(tool, FunctionTool)
        ]
        # A sandbox agent runs on a copy of itself whose tools (its capabilities') it makes.
        cannot += [
            f"agent `{each.name}` (a sandbox agent, its tools made by the SDK)"
            for each in reached
            if any(kind.__name__ == "SandboxAgent" for kind in type(each).__mro__)
        ]
        if cannot:
            raise UncheckedToolError(
                "stalwart cannot check the calls of "
                + ", ".join(cannot)
                + ": they would run unchecked, so the agent is not run"
            )
        for each in reached:
            owner = getattr(each, _GUARDED, None) or self._owner_for(each)
            self._guard_one(each, self if each is agent else owner)
        return agent

    def _owner_for(self, agent: Agent[Any]) -> StalwartTools:
        """The `StalwartTools` of an agent reached from the guarded one: its tools' own, else a
        new one over this guard's `handoff` to it (the same session and signed history)."""
        for tool in agent.tools:
            found = _owner(tool)
            if found is not None:
                return found
        made = StalwartTools(self.guard.handoff(agent.name), self.catalogue, names=[])
        made._config_ids = self._config_ids
        self._others.append(made)
        return made

    def _guard_one(self, agent: Agent[Any], owner: StalwartTools) -> None:
        if owner is not self and owner not in self._others:
            self._others.append(owner)
        agent.tools = [
            tool if _owner(tool) is not None else owner._wrap(tool) for tool in agent.tools
        ]
        if getattr(agent, _GUARDED, None) is not None:
            return
        try:
            # The guard lives in the agent's class (its MCP tools wrapped as the SDK lists them
            # each turn) and in a field of it, so every copy of the agent carries it too.
            agent.__class__ = _guarded_class(type(agent))
        except TypeError as error:
            raise UncheckedToolError(
                f"stalwart cannot guard agent `{agent.name}` of class `{type(agent).__name__}`: "
                f"{error}"
            ) from None
        setattr(agent, _GUARDED, owner)

    def input_guardrail(self) -> InputGuardrail:
        """An agent input guardrail that reads the person's input as turns, before the model."""

        def read(_ctx: Any, _agent: Any, given: Any) -> GuardrailFunctionOutput:
            for turn in _turns(given):
                self.guard.read(turn)
            return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)

        return InputGuardrail(read, name="stalwart_turns", run_in_parallel=False)

    def run_config(self, **options: Any) -> RunConfig:
        """A `RunConfig` whose unknown tools are refused by the check, the model told why; where
        a tool has a `secret` argument, one whose traces keep no tool inputs or outputs
        (`trace_include_sensitive_data=False`, unless given)."""

        def formatter(args: Any) -> str | None:
            if getattr(args, "kind", None) != "tool_not_found":
                return None
            check = self.guard.check(str(args.tool_name), {}, **self.ids())
            outcome = Outcome(REFUSED, str(args.tool_name), {}, reasons=tuple(check.reasons))
            return outcome.message

        own_filter = options.pop("call_model_input_filter", None)

        def unchecked_not_run(data: Any) -> Any:
            # Before each model call of each agent of the run (the first, the handed-to): an
            # agent with a tool no check stands in front of is not run at all.
            _refuse_unchecked(data.agent)
            return own_filter(data) if own_filter is not None else data.model_data

        options.setdefault("tool_not_found_behavior", "return_error_to_model")
        if self.secret:
            # The SDK's traces record each tool's input and output in clear by default (and send
            # them to the trace exporter): with a `secret` argument among the tools, they do not,
            # unless the host says so here.
            options.setdefault("trace_include_sensitive_data", False)
        for name, field in (("run_id", "trace_id"), ("thread_id", "group_id")):
            if isinstance(options.get(field), str) and options[field]:
                self._config_ids[name] = options[field]
        return RunConfig(
            tool_error_formatter=formatter, call_model_input_filter=unchecked_not_run, **options
        )
