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

Every decision carries the run's trace id and group id as its run and thread ids (`tools.ids`). A
handoff is another agent's `StalwartTools` over `guard.handoff(name)`: the same session and signed
history. `Runner.run_streamed` goes through the same hooks.

Framework imports live only in this module: the core SDK never needs the Agents SDK.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agents import FunctionTool, InputGuardrail, RunConfig
from agents.guardrail import GuardrailFunctionOutput
from agents.tool_guardrails import ToolGuardrailFunctionOutput, ToolInputGuardrail

from stalwart_agents.guarded import CONFIRM, RAN, REFUSED, Guard, Outcome, result_text

__all__ = ["StalwartTools"]


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
        self.functions = {**guard.tools, **dict(functions or {})}
        self._pending: dict[str, Outcome] = {}
        # The check `needs_approval` made, reused by the guardrail for the same call at the same
        # point of the conversation (nothing ran in between, no new outside content).
        self._checked: dict[str, tuple[tuple[Any, ...], Any]] = {}
        # The ids `run_config(trace_id=..., group_id=...)` was given: a run with tracing off
        # still names its run and conversation with them.
        self._config_ids: dict[str, str] = {}
        tools = {t["name"]: t for t in catalogue.get("tools", []) if isinstance(t, Mapping)}
        reach = (catalogue.get("agents") or {}).get(guard.agent) or {}
        wanted = list(names) if names is not None else list(reach.get("tools") or tools)
        self.tools: list[FunctionTool] = [
            self._tool(tools[name]) for name in wanted if name in tools and name in self.functions
        ]
        # Whether a tool here has an argument the catalogue marks `secret` (see `run_config`).
        self.secret = any(tools[t.name].get("secret") for t in self.tools)

    # -- the hooks ------------------------------------------------------------------------------

    def _tool(self, spec: Mapping[str, Any]) -> FunctionTool:
        name = str(spec["name"])

        async def needs_approval(ctx: Any, params: dict[str, Any], call_id: str) -> bool:
            return self._needs_approval(name, params, call_id, self.ids(ctx))

        async def invoke(ctx: Any, text: str) -> str:
            return self._invoke(name, text, getattr(ctx, "tool_call_id", ""), self.ids(ctx))

        def guardrail(data: Any) -> ToolGuardrailFunctionOutput:
            return self._guardrail(name, data.context, self.ids(data.context))

        return FunctionTool(
            name=name,
            description=str(spec.get("description") or name),
            params_json_schema=dict(spec.get("parameters") or {"type": "object"}),
            on_invoke_tool=invoke,
            strict_json_schema=False,
            needs_approval=needs_approval,
            tool_input_guardrails=[ToolInputGuardrail(guardrail, name="stalwart")],
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

    def _invoke(self, tool: str, text: str, call_id: str, ids: Mapping[str, str]) -> str:
        arguments = _arguments(text)
        if arguments is None:
            return f"Stalwart refused `{tool}`: its arguments are not a JSON object. Nothing ran."
        function = self.functions[tool]
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
        pending = self._pending.get(str(call_id))
        if pending is None:
            return {"call": {"tool": getattr(item, "tool_name", "")}, "reasons": []}
        return dict(pending.prompt or {})

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

        options.setdefault("tool_not_found_behavior", "return_error_to_model")
        if self.secret:
            # The SDK's traces record each tool's input and output in clear by default (and send
            # them to the trace exporter): with a `secret` argument among the tools, they do not,
            # unless the host says so here.
            options.setdefault("trace_include_sensitive_data", False)
        for name, field in (("run_id", "trace_id"), ("thread_id", "group_id")):
            if isinstance(options.get(field), str) and options[field]:
                self._config_ids[name] = options[field]
        return RunConfig(tool_error_formatter=formatter, **options)
