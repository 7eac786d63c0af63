"""The framework doors' overhead: a guarded tool call beside the same call unguarded, per framework.

LangGraph: the prebuilt `ToolNode` (in a one-step graph) running one `get_order` call the model emitted, beside
`StalwartToolNode` running the same call (the check, the executor, the result recorded in the signed
history, the turn already read). The same wrapper is what `StalwartMiddleware.wrap_tool_call` runs.

OpenAI Agents SDK: the function tool's hooks as the SDK calls them for one call -- `needs_approval`,
the tool input guardrail, `on_invoke_tool` -- guarded (`StalwartTools`), beside a plain
`FunctionTool`'s `on_invoke_tool` calling the same function. A whole `Runner.run` with a scripted
model (one tool call, one reply) is timed too, guarded and not, for scale.

Each figure is taken in 3 rounds and the round with the lowest p99 is shown (the machine is shared);
"added" is guarded minus unguarded at the same percentile. The session's history grows by one entry
per guarded call; a fresh guard (a new conversation) is opened every 100 calls, since the
in-process `LocalSession.execute` copies the whole history at each call (O(n), outside the doors).

Run: `python -m benchmarks.frameworks` (or `--quick`). Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop" / "agent.yaml"
# Calls per conversation before a fresh guard: `LocalSession.execute` copies the history at each
# call (O(n)), so a figure over a longer conversation measures that copy, not the door.
REFRESH = 100


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered), p99


def _rounds(
    make: Callable[[], Callable[[], Any]], calls: int, rounds: int = 3
) -> tuple[float, float]:
    """(p50, p99) in µs of the best round (lowest p99); `make()` gives a fresh callable per round."""
    best: tuple[float, float] | None = None
    for _ in range(rounds):
        one = make()
        for _ in range(min(50, calls)):
            one()
        gc.collect()
        gc.freeze()
        samples = []
        for _ in range(calls):
            start = time.perf_counter_ns()
            one()
            samples.append((time.perf_counter_ns() - start) / 1000)
        gc.unfreeze()
        figures = _percentiles(samples)
        if best is None or figures[1] < best[1]:
            best = figures
    assert best is not None
    return best


def _shop() -> Any:
    sys.path.insert(0, str(ROOT))
    from stalwart_agents import Agent

    return Agent.from_file(SHOP, verify=False)


def langgraph_figures(calls: int) -> dict[str, tuple[float, float]]:
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import StructuredTool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    agent = _shop()
    import shop.tools as shop_tools

    from stalwart_agents.guarded import Guard
    from stalwart_agents.langgraph import StalwartToolNode

    tool = StructuredTool.from_function(shop_tools.get_order, name="get_order", description="read")
    turn = HumanMessage("show order 4411", id="turn-1")
    emitted = AIMessage(
        content="",
        tool_calls=[{"name": "get_order", "args": {"order_id": "4411"}, "id": "c1"}],
    )
    state = {"messages": [turn, emitted]}

    def graph_of(node: Any) -> Any:
        graph = StateGraph(MessagesState)
        graph.add_node("tools", node)
        graph.add_edge(START, "tools")
        graph.add_edge("tools", END)
        return graph.compile()

    plain = graph_of(ToolNode([tool]))

    def unguarded() -> Callable[[], Any]:
        return lambda: plain.invoke(state)

    def guarded() -> Callable[[], Any]:
        box: dict[str, Any] = {"n": 0}

        def fresh() -> None:
            box["node"] = graph_of(StalwartToolNode([tool], guard=Guard.for_agent(agent, "desk")))
            box["n"] = 0

        fresh()

        def one() -> Any:
            box["n"] += 1
            if box["n"] > REFRESH:
                fresh()
            return box["node"].invoke(state)

        return one

    return {"unguarded": _rounds(unguarded, calls), "guarded": _rounds(guarded, calls)}


def agents_figures(calls: int, runs: int) -> dict[str, tuple[float, float]]:
    from agents import Agent as SdkAgent
    from agents import FunctionTool, RunConfig, Runner
    from agents.tool_context import ToolContext

    agent = _shop()
    import shop.tools as shop_tools

    from stalwart_agents.guarded import Guard
    from stalwart_agents.openai_agents import StalwartTools
    from tests.frameworks.scripted_agents_model import ScriptedModel

    arguments = json.dumps({"order_id": "4411"})
    loop = asyncio.new_event_loop()

    async def plain_invoke(_ctx: Any, text: str) -> str:
        return json.dumps(shop_tools.get_order(**json.loads(text)))

    plain_spec = next(t for t in agent.catalogue()["tools"] if t["name"] == "get_order")
    plain = FunctionTool(
        name="get_order",
        description="read",
        params_json_schema=plain_spec["parameters"],
        on_invoke_tool=plain_invoke,
        strict_json_schema=False,
    )

    def context() -> Any:
        return ToolContext(
            context=None, tool_name="get_order", tool_call_id="c1", tool_arguments=arguments
        )

    def unguarded() -> Callable[[], Any]:
        ctx = context()
        return lambda: loop.run_until_complete(plain.on_invoke_tool(ctx, arguments))

    def guarded() -> Callable[[], Any]:
        box: dict[str, Any] = {"n": 0}

        def fresh() -> None:
            tools = StalwartTools(Guard.for_agent(agent, "desk"), agent.catalogue())
            box["tool"] = next(t for t in tools.tools if t.name == "get_order")
            box["n"] = 0

        fresh()
        ctx = context()

        class Data:
            context = ctx

        async def hooks() -> Any:
            tool = box["tool"]
            await tool.needs_approval(None, {"order_id": "4411"}, "c1")
            tool.tool_input_guardrails[0].guardrail_function(Data)
            return await tool.on_invoke_tool(ctx, arguments)

        def one() -> Any:
            box["n"] += 1
            if box["n"] > REFRESH:
                fresh()
            return loop.run_until_complete(hooks())

        return one

    figures = {"unguarded": _rounds(unguarded, calls), "guarded": _rounds(guarded, calls)}

    def whole(guard_it: bool) -> Callable[[], Callable[[], Any]]:
        def make() -> Callable[[], Any]:
            box: dict[str, Any] = {"n": REFRESH + 1}

            def one() -> Any:
                model = ScriptedModel(("get_order", {"order_id": "4411"}, "c1"), "done")
                if guard_it:
                    box["n"] += 1
                    if box["n"] > REFRESH:
                        box["tools"] = StalwartTools(
                            Guard.for_agent(agent, "desk"), agent.catalogue()
                        )
                        box["n"] = 0
                    tools = box["tools"]
                    sdk = SdkAgent(name="desk", tools=tools.tools, model=model)
                    config = tools.run_config(tracing_disabled=True)
                else:
                    sdk = SdkAgent(name="desk", tools=[plain], model=model)
                    config = RunConfig(tracing_disabled=True)
                return loop.run_until_complete(
                    Runner.run(sdk, "show order 4411", run_config=config)
                )

            return one

        return make

    figures["run unguarded"] = _rounds(whole(False), runs)
    figures["run guarded"] = _rounds(whole(True), runs)
    loop.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.frameworks")
    parser.add_argument("--quick", action="store_true", help="a short run")
    args = parser.parse_args(argv)
    calls, runs = (300, 40) if args.quick else (3000, 300)
    print(
        f"machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}"
    )
    table = [("LangGraph ToolNode", langgraph_figures(calls))]
    table.append(("Agents SDK tool hooks", agents_figures(calls, runs)))
    print(
        "| door | unguarded p50 µs | p99 µs | guarded p50 µs | p99 µs | added p50 µs | added p99 µs |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, figures in table:
        rows = [(name, figures["unguarded"], figures["guarded"])]
        if "run guarded" in figures:
            rows.append(("Agents SDK Runner.run", figures["run unguarded"], figures["run guarded"]))
        for label, (u50, u99), (g50, g99) in rows:
            print(
                f"| {label} | {u50:.0f} | {u99:.0f} | {g50:.0f} | {g99:.0f} | "
                f"{g50 - u50:.0f} | {g99 - u99:.0f} |"
            )
    return 0
