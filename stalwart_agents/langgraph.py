"""Agents built with LangGraph or LangChain v1 run under Stalwart (extra `stalwart[langgraph]`).

Three ways in, one check (`stalwart_agents.guarded.Guard`) behind each:

- `StalwartMiddleware(guard)`: LangChain v1 agent middleware (`create_agent(...,
  middleware=[...])`); its `wrap_tool_call` puts every tool call the model emits through the check;
- `StalwartToolNode(tools, guard=guard)`: a drop-in for LangGraph's prebuilt `ToolNode`, the same
  check around every call it runs;
- `build_stalwart_graph(agent, models=...)`: the graph of agent.yaml itself, built node for node
  and edge for edge from `agent.export()` -- the `qls-graph/1` document the proof checks -- so the
  graph proved is the graph that runs: a step that tries a transition the document does not have
  stops the run (fail closed).

What each decision becomes: `allow` runs the tool through the session's executor (its result
recorded in the signed history, with the labels of a `reads_outside` tool); `confirm` becomes a
LangGraph `interrupt()` whose payload is the call, each argument with its origin and the reasons;
resumed with `Command(resume=answer)` -- `True`/`"yes"`, `{"approved": true}`, or `False` -- a
yes is signed for exactly that call and the call is checked again with the token (changed
arguments, `{"approved": true, "arguments": {...}}`, are refused: `token_mismatch`); `refuse`
becomes a `ToolMessage` naming the reasons, so the model sees why and nothing ran. Turns are read
from the `HumanMessage`s (`guard.read`, once per message id) before any call of theirs is checked.
A step LangGraph re-runs on resume asks nothing new: the guard finds the call it asked about (by
tool call id and arguments), so the console's queue holds the one request the person saw. Every
decision carries the config's `thread_id` and `run_id` (see `_run_ids`). A built graph keeps one
session for the conversation (`Guard.handoff`): a handoff continues the same signed history.
LangSmith's traces keep a catalogue's `secret` arguments out only through the LangSmith client
`langsmith_client(catalogue)` makes (`stalwart_agents.langsmith_secrets`): give it to the run.

Framework imports live only in this module: the core SDK never needs LangGraph.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, TypedDict

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

from stalwart_agents.client import Client, SelectorUnavailableError
from stalwart_agents.facts import Context, facts_of
from stalwart_agents.guarded import (
    CONFIRM,
    RAN,
    REFUSED,
    Guard,
    Outcome,
    _call_key,
    outside_tools,
    result_text,
)
from stalwart_agents.langsmith_secrets import langsmith_client, secret_anonymizer

__all__ = [
    "StalwartMiddleware",
    "StalwartToolNode",
    "build_stalwart_graph",
    "guarded_tool_call",
    "graph_shape",
    "langchain_tools",
    "langsmith_client",
    "secret_anonymizer",
]


def _run_ids() -> dict[str, str]:
    """The framework's thread and run ids of the current step, where LangGraph has them: the
    `thread_id` and the `run_id` of the RunnableConfig's `configurable` (LangGraph's server sets
    both; the top-level `run_id` of `invoke` names only LangChain's root run and never reaches a
    step, so give it in `configurable`)."""
    try:
        from langgraph.config import get_config

        config = get_config()
    except (ImportError, RuntimeError):
        return {}
    ids: dict[str, str] = {}
    configurable = config.get("configurable") or {}
    for name in ("thread_id", "run_id"):
        value = configurable.get(name, config.get(name))
        if value is not None and str(value):
            ids[name] = str(value)
    return ids


def read_turns(guard: Guard, messages: Sequence[Any]) -> None:
    """Read every `HumanMessage` the guard has not read yet, in order, as the person's turns."""
    for index, message in enumerate(messages or ()):
        if isinstance(message, HumanMessage):
            text = message.content if isinstance(message.content, str) else str(message.content)
            guard.read(text, key=message.id or f"{index}:{text}")


def _messages(state: Any) -> Sequence[Any]:
    if isinstance(state, Mapping):
        return state.get("messages") or ()
    return getattr(state, "messages", ()) or ()


def _result_of(message: Any) -> Any:
    """What a tool's `ToolMessage` recorded in the history holds: its JSON, else its text."""
    content = getattr(message, "content", message)
    if isinstance(content, str):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content if isinstance(content, (list, dict)) else str(content)


class _ToolError(Exception):
    """The framework's tool answered with an error: the executor reports the call failed."""


def _refusal(outcome: Outcome, call: Mapping[str, Any]) -> ToolMessage:
    return ToolMessage(
        content=outcome.message,
        tool_call_id=str(call.get("id") or ""),
        name=str(call.get("name") or outcome.tool),
        status="error",
        artifact={"stalwart": {"decision": outcome.status, "reasons": list(outcome.reasons)}},
    )


def guarded_tool_call(
    guard: Guard, request: Any, handler: Callable[[Any], Any], *, context: Any = None
) -> Any:
    """One tool call of a LangGraph `ToolCallRequest`, through the check (see the module);
    `context` is the facts of this call (a mapping, a function or a `Context`; else the guard's)."""
    read_turns(guard, _messages(request.state))
    call = dict(request.tool_call)
    tool = str(call.get("name"))
    arguments = dict(call.get("args") or {})
    answered: dict[str, Any] = {}

    def run(args: dict[str, Any]) -> Any:
        message = handler(request.override(tool_call={**call, "args": args}))
        answered["message"] = message
        if isinstance(message, ToolMessage):
            if message.status == "error":
                raise _ToolError(str(message.content))
            return _result_of(message)
        return {"command": repr(message)[:2000]}

    ids = _run_ids()
    # LangGraph re-runs the whole step on resume: the call asked about at this step (the same
    # tool call, the same arguments) is asked once, so the console holds one request for it.
    step = f"{call.get('id') or ''}:{_call_key(tool, arguments)}"
    outcome = guard.waiting.get(step) or guard.call_with(
        tool, arguments, function=run, context=context, **ids
    )
    if outcome.status == CONFIRM:
        guard.waiting[step] = outcome
        answer = interrupt(outcome.prompt)  # the first time: the run stops here
        guard.waiting.pop(step, None)
        outcome = guard.resume(outcome, answer, function=run, context=context, **ids)
    if outcome.status == RAN and "message" in answered:
        return answered["message"]
    return _refusal(outcome, call)


async def aguarded_tool_call(
    guard: Guard, request: Any, handler: Callable[[Any], Any], *, context: Any = None
) -> Any:
    """`guarded_tool_call` for an async handler (`ainvoke`, `astream`)."""
    loop = asyncio.get_running_loop()

    def run_here(changed: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(handler(changed), loop).result()

    return await asyncio.to_thread(guarded_tool_call, guard, request, run_here, context=context)


class StalwartMiddleware(AgentMiddleware):
    """LangChain v1 agent middleware: every tool call the model emits goes through `guard`.

    `create_agent(model, tools, middleware=[StalwartMiddleware(guard)], checkpointer=...)`; a
    checkpointer is needed for a `confirm` to interrupt and resume.
    """

    def __init__(self, guard: Guard, *, context: Any = None) -> None:
        super().__init__()
        self.guard = guard
        self.context = context

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        read_turns(self.guard, _messages(state))
        return None

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return guarded_tool_call(self.guard, request, handler, context=self.context)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """The same check for `ainvoke`: the guard's (synchronous) path runs in a worker thread,
        with LangGraph's context, and the framework's own async tool runs back on this loop."""
        return await aguarded_tool_call(self.guard, request, handler, context=self.context)


class StalwartToolNode(ToolNode):
    """LangGraph's prebuilt `ToolNode`, with every call it runs put through `guard` first."""

    def __init__(
        self, tools: Sequence[Any], *, guard: Guard, context: Any = None, **options: Any
    ) -> None:
        if "wrap_tool_call" in options or "awrap_tool_call" in options:
            raise ValueError("a StalwartToolNode's wrapper is the guard's: pass no wrap_tool_call")
        super().__init__(
            tools,
            wrap_tool_call=lambda request, handler: guarded_tool_call(
                guard, request, handler, context=context
            ),
            awrap_tool_call=lambda request, handler: aguarded_tool_call(
                guard, request, handler, context=context
            ),
            **options,
        )
        self.guard = guard


# -- the graph of agent.yaml ----------------------------------------------------------------------


class StalwartState(TypedDict, total=False):
    """The graph's state: the conversation, and where the current call stands."""

    messages: Annotated[list[AnyMessage], add_messages]
    stalwart: dict[str, Any]


def graph_shape(graph: Any) -> tuple[set[str], set[tuple[str, str]]]:
    """(nodes, edges) of a compiled LangGraph graph, or of a `qls-graph/1` document, without
    LangGraph's own start and end."""
    if isinstance(graph, Mapping):
        nodes = {str(n["id"]) for n in graph["nodes"]}
        edges = {(str(e["from"]), str(e["to"])) for e in graph["edges"]}
        return nodes, edges
    drawn = graph.get_graph()
    skip = {START, END}
    nodes = {str(n) for n in drawn.nodes if n not in skip}
    edges = {
        (e.source, e.target) for e in drawn.edges if e.source not in skip and e.target not in skip
    }
    return nodes, edges


def _tool_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": tool.get("description") or tool["name"],
            "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
        },
    }


def _handoff_schema(other: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": f"transfer_to_{other}",
            "description": f"Hands the conversation to the agent `{other}`.",
            "parameters": {"type": "object", "properties": {}},
        },
    }


def build_stalwart_graph(
    agent: Any,
    *,
    models: Mapping[str, Any] | None = None,
    client: Client | None = None,
    settings: Mapping[str, Any] | None = None,
    context: Any = None,
    checkpointer: Any = None,
    language: str | None = None,
    max_model_rounds: int = 8,
    max_chain_rounds: int = 4,
    require_proof: bool = True,
) -> Any:
    """The compiled LangGraph graph of an `Agent` (agent.yaml), guarded throughout.

    Its nodes and edges are those of `agent.export()` (see the module docstring): each agent's
    router reads the turn before any model sees it and answers what it reads itself (a tool step
    from the person's words, a question, a refusal), and only a turn it sends to the model reaches
    `models[agent]` (a LangChain chat model); each tool step is the check, a person's yes where
    the check asks for one (`interrupt()`), then the tool; `hands_off_to` are the handoff steps.
    `context=` is code's facts (the file's `facts:` are read from the tools' results, and win).
    A `checkpointer` is needed to interrupt and resume (LangGraph's `InMemorySaver` in-process).
    An agent that was not proved (`Agent(..., verify=False)`) raises `NotVerified` unless
    `require_proof=False` says the host chose to run it unproved.
    """
    from router.engine import Router
    from stalwart_agents.agent import NotVerified

    if require_proof and getattr(agent, "report", None) is None:
        raise NotVerified(
            "build_stalwart_graph runs only a proved agent: build it with verify=True (the "
            "default), or pass require_proof=False to run it unproved"
        )

    doc = agent.export()
    catalogue = agent.catalogue()
    rulebook = agent.rules().record
    client = client or Client()
    outside = outside_tools(catalogue)
    code = context if context is not None else getattr(agent, "context", None)
    facts = Context(facts_of(agent), context=code, reads_outside=list(outside))
    names = [str(n) for n in (catalogue.get("agents") or {})]
    # One session for the whole conversation: each agent's guard makes its calls in it, so a
    # handoff continues the same signed history and every check (order rules, taint) sees what
    # each agent read and did.
    first_guard = Guard.for_agent(agent, names[0], client=client, settings=settings, facts=facts)
    guards = {names[0]: first_guard}
    for name in names[1:]:
        guards[name] = first_guard.handoff(name)
    file_settings = agent.file.other.get("settings") or {}
    routers = {
        name: Router(
            agent.file,
            rulebook=rulebook,
            agent=name,
            language=language or file_settings.get("language") or "en",
        )
        for name in names
    }
    tools_data = {t["name"]: t for t in catalogue.get("tools", []) if isinstance(t, Mapping)}
    reach = agent.file.catalogue.agents
    models = dict(models or {})

    nodes = {n["id"]: n for n in doc["nodes"]}
    targets: dict[str, list[str]] = {node_id: [] for node_id in nodes}
    for edge in doc["edges"]:
        if edge["to"] not in targets[edge["from"]]:
            targets[edge["from"]].append(edge["to"])

    def ids(name: str) -> dict[str, str]:
        return {
            n["kind"] + ":" + str(n.get("tool") or n.get("to") or ""): i
            for i, n in nodes.items()
            if n["agent"] == name
        }

    by_agent = {name: ids(name) for name in names}

    def step(name: str, kind: str, what: str = "") -> str:
        found = by_agent[name].get(f"{kind}:{what}")
        if found is None:
            raise SelectorUnavailableError(
                f"the proved graph has no {kind} step `{what}` for agent `{name}`"
            )
        return found

    def state_of(state: Mapping[str, Any]) -> dict[str, Any]:
        return dict(state.get("stalwart") or {})

    def last_turn(state: Mapping[str, Any]) -> HumanMessage | None:
        for message in reversed(_messages(state)):
            if isinstance(message, HumanMessage):
                return message
        return None

    def results() -> list[dict[str, Any]]:
        return list(first_guard.ran)  # the conversation's, shared by every agent's guard

    def say(text: str) -> AIMessage:
        return AIMessage(content=text)

    def make_router(name: str) -> Callable[[Any], dict[str, Any]]:
        guard = guards[name]
        router = routers[name]

        def node(state: Mapping[str, Any]) -> dict[str, Any]:
            st = state_of(state)
            st["agent"] = name
            turn = last_turn(state)
            if turn is None:
                return {"stalwart": {**st, "next": step(name, "end")}}
            read_turns(guard, _messages(state))
            text = turn.content if isinstance(turn.content, str) else str(turn.content)
            # A turn nothing reads is asked again once; the next one goes where on_unread says.
            replanned = st.get("chain", 0) > 0
            asked = bool(st.get("asked_again")) and not replanned
            plan = router.plan(text, results=results(), context=facts.code, asked_again=asked)
            kind = plan.kind
            if not replanned:
                st["asked_again"] = kind == "unread" and plan.action == "say_again"
            planned: dict[str, Any] | None = None
            if kind in ("tool", "confirm") and plan.call:
                planned = {**st, "chain": 0, **_planned(name, dict(plan.call), st)}
            elif kind == "chain" and plan.steps and st.get("chain", 0) < max_chain_rounds:
                first = dict(plan.steps[0])
                rounds = st.get("chain", 0) + 1
                planned = {**st, "chain": rounds, **_planned(name, first, st, more=True)}
            if planned is not None:
                said = planned.pop("say", None)
                return {"messages": [say(said)] if said else [], "stalwart": planned}
            if (kind == "calculation" or (kind == "unread" and plan.action == "model")) and (
                name in models and _has(name, "model")
            ):
                return {"stalwart": {**st, "next": step(name, "model")}}
            text_out = plan.question or (
                "I can't do that: " + ", ".join(plan.reasons)
                if plan.reasons
                else "I can't do that."
            )
            return {"messages": [say(text_out)], "stalwart": {**st, "next": step(name, "end")}}

        return node

    def _has(name: str, kind: str, what: str = "") -> bool:
        return f"{kind}:{what}" in by_agent[name]

    def _planned(
        name: str, call: dict[str, Any], st: dict[str, Any], more: bool = False
    ) -> dict[str, Any]:
        owner = str(call.get("agent") or name)
        tool = str(call.get("tool"))
        current = {
            "tool": tool,
            "arguments": dict(call.get("arguments") or {}),
            "origins": dict(call.get("origins") or {}),
            "chooser": "person",
            "more": more,
        }
        if owner != name:
            # The proved graph has no edge from a router to another agent's steps: the turn ends
            # here, and the conversation's next turn starts at the router of the agent that holds
            # the tool (a session may start at any agent's router).
            if owner not in reach[name].hands_off_to:
                raise SelectorUnavailableError(f"agent `{name}` does not hand off to `{owner}`")
            return {
                "call": None,
                "agent": owner,
                "say": f"`{tool}` is for {owner}: your next turn goes to {owner}.",
                "next": step(name, "end"),
            }
        return {"call": current, "next": step(name, "check", tool)}

    def make_model(name: str) -> Callable[[Any], dict[str, Any]]:
        guard = guards[name]
        own = list(reach[name].tool_order)
        handoffs = {f"transfer_to_{o}": o for o in reach[name].hands_off_to}

        def node(state: Mapping[str, Any]) -> dict[str, Any]:
            st = state_of(state)
            queue = list(st.get("queue") or [])
            if queue:
                return {"stalwart": {**st, **_model_call(name, queue.pop(0), queue)}}
            chat = models.get(name)
            if chat is None:
                raise SelectorUnavailableError(f"no chat model given for agent `{name}`")
            bound = chat.bind_tools(
                [_tool_schema(tools_data[t]) for t in own if t in tools_data]
                + [_handoff_schema(o) for o in handoffs.values()]
            )
            history = list(_messages(state))
            new: list[Any] = []
            for _ in range(max_model_rounds):
                reply = bound.invoke(history + new)
                new.append(reply)
                calls = list(getattr(reply, "tool_calls", None) or [])
                if not calls:
                    return {"messages": new, "stalwart": {**st, "next": step(name, "end")}}
                known = []
                for call in calls:
                    if call["name"] in handoffs or call["name"] in own:
                        known.append(dict(call))
                        continue
                    # Not a tool of this agent: the check refuses it (unknown_tool) and the model
                    # is told why; nothing runs and no step of the graph is taken.
                    check = guard.check(call["name"], dict(call.get("args") or {}), **_run_ids())
                    refused = Outcome(
                        REFUSED if check.decision == "refuse" else check.decision,
                        call["name"],
                        dict(call.get("args") or {}),
                        reasons=tuple(check.reasons),
                    )
                    new.append(_refusal(refused, call))
                if known:
                    first, rest = known[0], known[1:]
                    return {"messages": new, "stalwart": {**st, **_model_call(name, first, rest)}}
            return {
                "messages": new
                + [say("I stopped: the model kept calling tools it does not have.")],
                "stalwart": {**st, "next": step(name, "end")},
            }

        return node

    def _model_call(name: str, call: Mapping[str, Any], rest: list[Any]) -> dict[str, Any]:
        handoffs = {f"transfer_to_{o}": o for o in reach[name].hands_off_to}
        current = {
            "tool": call["name"],
            "arguments": dict(call.get("args") or {}),
            "origins": {},
            "chooser": "model",
            "id": call.get("id"),
        }
        if call["name"] in handoffs:
            other = handoffs[call["name"]]
            return {"call": current, "queue": rest, "next": step(name, "handoff", other)}
        return {"call": current, "queue": rest, "next": step(name, "check", call["name"])}

    def back(
        name: str, st: dict[str, Any], message: str, call: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A decided call goes back to the model that chose it, or ends a planned turn."""
        if call.get("chooser") == "model":
            tool_message = ToolMessage(
                content=message, tool_call_id=str(call.get("id") or ""), name=call["tool"]
            )
            return {"messages": [tool_message], "stalwart": {**st, "next": step(name, "model")}}
        return {"messages": [say(message)], "stalwart": {**st, "next": step(name, "end")}}

    def make_check(name: str, tool: str) -> Callable[[Any], dict[str, Any]]:
        guard = guards[name]

        def node(state: Mapping[str, Any]) -> dict[str, Any]:
            st = state_of(state)
            call = st["call"]
            check = guard.check(
                tool, call["arguments"], origins=call["origins"] or None, **_run_ids()
            )
            if check.decision == "allow":
                return {"stalwart": {**st, "next": step(name, "tool", tool)}}
            if check.decision == "confirm" and _has(name, "human", tool):
                prompt = guard.prompt(
                    tool,
                    call["arguments"],
                    check.reasons,
                    check.detail,
                    call["origins"],
                    check.approval,
                )
                pending = {
                    "prompt": prompt,
                    "approval": check.approval,
                    "reasons": list(check.reasons),
                }
                return {"stalwart": {**st, "pending": pending, "next": step(name, "human", tool)}}
            refused = Outcome(REFUSED, tool, call["arguments"], reasons=tuple(check.reasons))
            return back(name, {**st, "call": None}, refused.message, call)

        return node

    def make_confirm(name: str, tool: str) -> Callable[[Any], dict[str, Any]]:
        def node(state: Mapping[str, Any]) -> dict[str, Any]:
            st = state_of(state)
            call = st["call"]
            pending = st.get("pending") or {}
            prompt = dict(pending.get("prompt") or {})
            answer = interrupt({**prompt, "run": {**dict(prompt.get("run") or {}), **_run_ids()}})
            from stalwart_agents.guarded import _yes

            approved, _ = _yes(answer)
            if not approved and not pending.get("approval"):
                said_no = Outcome(REFUSED, tool, call["arguments"], reasons=("approval_denied",))
                return back(name, {**st, "pending": None, "call": None}, said_no.message, call)
            return {"stalwart": {**st, "answer": answer, "next": step(name, "tool", tool)}}

        return node

    def make_tool(name: str, tool: str) -> Callable[[Any], dict[str, Any]]:
        guard = guards[name]

        def node(state: Mapping[str, Any]) -> dict[str, Any]:
            st = state_of(state)
            call = st["call"]
            origins = call["origins"] or None
            answer = st.pop("answer", None)
            pending = st.pop("pending", None)
            if answer is not None and pending:
                waiting = Outcome(
                    CONFIRM,
                    tool,
                    dict(call["arguments"]),
                    reasons=tuple(pending.get("reasons") or ()),
                    origins=origins,
                    approval=pending.get("approval"),
                )
                outcome = guard.resume(waiting, answer, **_run_ids())
            else:
                outcome = guard.call_with(tool, call["arguments"], origins=origins, **_run_ids())
            st["call"] = None
            if outcome.status == RAN:
                text = result_text(outcome.result)
                if call.get("chooser") != "model" and call.get("more"):
                    return {"stalwart": {**st, "next": step(name, "end"), "replan": True}}
                return back(name, st, text, call)
            return back(name, st, outcome.message, call)

        return node

    def make_handoff(name: str, other: str) -> Callable[[Any], dict[str, Any]]:
        def node(state: Mapping[str, Any]) -> dict[str, Any]:
            st = state_of(state)
            call = st.get("call") or {}
            moved = {**st, "call": None, "agent": other, "next": step_router(other)}
            out: dict[str, Any] = {"stalwart": moved}
            if call.get("chooser") == "model":
                out["messages"] = [
                    ToolMessage(
                        content=f"handed to {other}",
                        tool_call_id=str(call.get("id") or ""),
                        name=call["tool"],
                    )
                ]
            return out

        return node

    def step_router(name: str) -> str:
        return step(name, "router")

    def make_end(name: str) -> Callable[[Any], dict[str, Any]]:
        def node(state: Mapping[str, Any]) -> dict[str, Any]:
            st = state_of(state)
            if st.pop("replan", False):
                return {"stalwart": {**st, "next": step(name, "router")}}
            return {"stalwart": {**st, "chain": 0, "next": END}}

        return node

    makers = {
        "router": lambda n: make_router(n["agent"]),
        "model": lambda n: make_model(n["agent"]),
        "check": lambda n: make_check(n["agent"], n["tool"]),
        "human": lambda n: make_confirm(n["agent"], n["tool"]),
        "tool": lambda n: make_tool(n["agent"], n["tool"]),
        "handoff": lambda n: make_handoff(n["agent"], n["to"]),
        "end": lambda n: make_end(n["agent"]),
    }
    graph = StateGraph(StalwartState)
    for node_id, node in nodes.items():
        maker = makers.get(node["kind"])
        if maker is None:
            raise SelectorUnavailableError(
                f"the graph has a `{node['kind']}` step (`{node_id}`) this builder cannot run"
            )
        graph.add_node(node_id, maker(node))
    for node_id, allowed in targets.items():
        ends = nodes[node_id]["kind"] == "end"
        path = {target: target for target in allowed}
        if ends:
            path[END] = END
        graph.add_conditional_edges(node_id, _route(node_id, frozenset(path)), path)
    entries = [str(e) for e in doc["entries"]]
    first = {nodes[e]["agent"]: e for e in entries}

    def start(state: Mapping[str, Any]) -> str:
        at = (state.get("stalwart") or {}).get("agent")
        return first.get(at, entries[0])

    graph.add_conditional_edges(START, start, {e: e for e in entries})
    compiled = graph.compile(checkpointer=checkpointer)
    compiled.stalwart_guards = guards  # type: ignore[attr-defined]
    return compiled


def _route(node_id: str, allowed: frozenset[str]) -> Callable[[Any], str]:
    """The edge a step takes: the one it named, if the proved graph has it; else the run stops."""

    def route(state: Mapping[str, Any]) -> str:
        target = (state.get("stalwart") or {}).get("next")
        if target not in allowed:
            raise SelectorUnavailableError(
                f"`{node_id}` tried to go to `{target}`, which the proved graph does not allow"
            )
        return target

    return route


def langchain_tools(guard: Guard, catalogue: Mapping[str, Any]) -> list[Any]:
    """LangChain tools for the guard's agent, made from the catalogue (name, description, JSON
    Schema parameters) over the guard's functions: what `create_agent` or a `ToolNode` is given,
    with `StalwartMiddleware(guard)` or `StalwartToolNode(..., guard=guard)` in front of them."""
    from langchain_core.tools import StructuredTool

    reach = (catalogue.get("agents") or {}).get(guard.agent) or {}
    names = reach.get("tools") or [t.get("name") for t in catalogue.get("tools", [])]
    made = []
    for spec in catalogue.get("tools", []):
        name = spec.get("name") if isinstance(spec, Mapping) else None
        if name not in names or name not in guard.tools:
            continue
        function = guard.tools[name]
        made.append(
            StructuredTool.from_function(
                func=lambda _f=function, **arguments: _f(arguments),
                name=name,
                description=str(spec.get("description") or name),
                args_schema=dict(spec.get("parameters") or {"type": "object", "properties": {}}),
            )
        )
    return made
