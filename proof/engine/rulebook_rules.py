"""The rules that read the compiled rulebook itself (QG002's rulebook part, QG004, QG005, QG007,
QG008, QG009, QG010, QG022), each returning its findings as plain data for `hunt`.

They read the record `rulebooks.compiler` wrote -- flows with their steps and lines, the routes
by which each tool is reached, rule-sheet rows -- against the catalogue:

- QG002: a governed tool with a route under a condition and another route with none (the gate
  passes when any route holds), or a rulebook that guards tools while the tool check has
  `your_rules` switched off;
- QG004: a route or an `allow` row whose conditions hold with nothing reported;
- QG005: compile errors, and tools the rulebook governs that the catalogue does not have;
- QG007: a condition reading `$v` before any statement of its flow writes `$v`, when the flow
  writes it later;
- QG008: a `bot` line naming a tool (`bot refund_card`, `bot run refund card`), or a call of a
  flow the file does not define whose name is a tool's;
- QG009: a bot message said by name in Colang 1.0 and not defined (`refuse` is built in);
- QG010: a tool call no route reaches, or a governed tool no agent lists;
- QG022: a flow or import an advisory names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from guard.engine import Catalogue
from guard.engine.checks import switched_on

from .advisories import Advisory, matching
from .conditions import facts_read, holds_by_default
from .graphdoc import Graph

BUILT_IN_BOT_MESSAGES = frozenset({"refuse"})
CALL_WORDS = ("call", "run", "exec", "execute", "invoke", "do", "use", "perform", "trigger")
_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'")


@dataclass(frozen=True)
class RulebookFinding:
    rule: str
    subject: str
    line: int | None
    message: str
    fix_values: Mapping[str, str] = field(default_factory=dict)
    tool: str | None = None  # a tool whose reachability the finding depends on


def _norm(text: str) -> str:
    return re.sub(r"[\s\-]+", "_", text.strip().lower())


def _walk(steps: Sequence[Mapping[str, Any]]):
    """Every step of a flow, depth first, in the order written."""
    for step in steps:
        yield step
        if step.get("step") == "group":
            yield from _walk(step.get("items", []))
        for branch in step.get("branches", []) or []:
            if "event" in branch:
                yield from _walk([branch["event"]])
            yield from _walk(branch.get("steps", []))
        if step.get("else"):
            yield from _walk(step["else"].get("steps", []))
        if step.get("step") == "while":
            yield from _walk(step.get("steps", []))


def compile_errors(graph: Graph) -> list[RulebookFinding]:
    """QG005 for each error that stopped the rulebook from compiling."""
    rulebook = graph.rulebook
    if rulebook is None:
        return []
    return [
        RulebookFinding(
            "QG005",
            rulebook.file,
            line,
            f"the rulebook '{rulebook.file}' does not compile: {message}; the agent cannot hold "
            "it and does not start",
        )
        for line, message in rulebook.errors
    ]


def unknown_tools(graph: Graph) -> list[RulebookFinding]:
    """QG005 for each tool the rulebook governs that the catalogue does not have."""
    record = graph.record
    if record is None:
        return []
    out = []
    for name, governed in sorted((record.get("tools") or {}).items()):
        if name in graph.catalogue.tools:
            continue
        lines = [r.get("line") for r in governed.get("routes") or []]
        lines += [r.get("row") for r in governed.get("rules") or []]
        line = next((n for n in lines if isinstance(n, int)), None)
        out.append(
            RulebookFinding(
                "QG005",
                name,
                line,
                f"the rulebook governs '{name}', which the catalogue does not have: it cannot "
                "ship with this catalogue",
            )
        )
    return out


def escapable(graph: Graph) -> list[RulebookFinding]:
    """QG002's rulebook part (see the module docstring)."""
    record = graph.record
    if record is None:
        return []
    out: list[RulebookFinding] = []
    governed_tools = record.get("tools") or {}
    guarded_any = False
    for name, governed in sorted(governed_tools.items()):
        if name not in graph.catalogue.tools:
            continue
        routes = governed.get("routes") or []
        guarded = [r for r in routes if any("test" in c for c in r.get("conditions", ()))]
        open_routes = [r for r in routes if not any("test" in c for c in r.get("conditions", ()))]
        if guarded or governed.get("rules"):
            guarded_any = True
        if guarded and open_routes:
            route = open_routes[0]
            guard_line = guarded[0]["conditions"][0].get("line")
            out.append(
                RulebookFinding(
                    "QG002",
                    name,
                    route.get("line"),
                    f"the rulebook guards '{name}' at line {guard_line}, but flow "
                    f"'{route.get('flow')}' reaches it with no condition, and the gate lets a "
                    "call through when any route holds",
                    {"tool": name},
                    tool=name,
                )
            )
    if guarded_any and "your_rules" not in switched_on(graph.settings.checks):
        for name in sorted(governed_tools):
            if name in graph.catalogue.tools:
                out.append(
                    RulebookFinding(
                        "QG002",
                        name,
                        None,
                        f"the tool check has `your_rules` switched off, so the rulebook's guard "
                        f"on '{name}' is never applied",
                        {"tool": name},
                        tool=name,
                    )
                )
    return out


def permissive(graph: Graph) -> list[RulebookFinding]:
    """QG004: routes and allow rows that hold with nothing reported."""
    record = graph.record
    if record is None:
        return []
    out: list[RulebookFinding] = []
    for name, governed in sorted((record.get("tools") or {}).items()):
        if name not in graph.catalogue.tools:
            continue
        for route in governed.get("routes") or []:
            tests = [c for c in route.get("conditions", ()) if "test" in c]
            reads = set().union(*(facts_read(c["test"]) for c in tests)) if tests else set()
            if not reads:
                continue
            if all(holds_by_default(c["test"], bool(c.get("holds"))) for c in tests):
                line = tests[0].get("line")
                out.append(
                    RulebookFinding(
                        "QG004",
                        name,
                        line,
                        f"the condition on '{name}' at line {line} holds when no fact is "
                        f"reported ({', '.join('$' + f for f in sorted(reads))} absent), so the "
                        "call goes through by default",
                        {"tool": name},
                        tool=name,
                    )
                )
                break
        for row in governed.get("rules") or []:
            test = row.get("test")
            if row.get("decision") != "allow" or test is None or not facts_read(test):
                continue
            if holds_by_default(test, True):
                out.append(
                    RulebookFinding(
                        "QG004",
                        name,
                        row.get("row"),
                        f"the row {row.get('row')} allows '{name}' when no fact is reported, so "
                        "the call runs without a person by default",
                        {"tool": name},
                        tool=name,
                    )
                )
    return out


def read_before_written(graph: Graph) -> list[RulebookFinding]:
    """QG007 over every flow of a Colang record."""
    record = graph.record
    if record is None:
        return []
    out: list[RulebookFinding] = []
    for flow in record.get("flows", []):
        written_anywhere: set[str] = set()
        for step in _walk(flow.get("steps", [])):
            written_anywhere |= _writes(step)
        seen: set[tuple[str, int]] = set()
        _scan(flow.get("steps", []), set(), written_anywhere, flow.get("name", ""), out, seen)
    return out


def _writes(step: Mapping[str, Any]) -> set[str]:
    found = set()
    if step.get("step") == "set" and isinstance(step.get("variable"), str):
        found.add(step["variable"])
    for key in ("result", "capture"):
        if isinstance(step.get(key), str):
            found.add(step[key])
    return found


def _reads(text: Any) -> set[str]:
    if not isinstance(text, str):
        return set()
    return set(_VARIABLE.findall(_STRING.sub("", text)))


def _scan(steps, written: set[str], anywhere: set[str], flow: str, out, seen) -> set[str]:
    """Walk steps in order; report reads of variables written only later. Returns what is
    written once the steps ran (on some route)."""
    written = set(written)
    for step in steps:
        kind = step.get("step")
        tests = []
        if kind in ("if", "while"):
            tests = [(b.get("line"), b.get("test")) for b in step.get("branches", []) or []]
            if kind == "while":
                tests = [(step.get("line"), step.get("test"))]
        for line, text in tests:
            for variable in sorted(_reads(text)):
                if (
                    variable in anywhere
                    and variable not in written
                    and (variable, line) not in seen
                ):
                    seen.add((variable, line))
                    out.append(
                        RulebookFinding(
                            "QG007",
                            f"${variable}",
                            line,
                            f"the condition at line {line} of flow '{flow}' reads ${variable} "
                            "before the flow writes it, so it sees what an earlier run left",
                            {"variable": variable},
                        )
                    )
        after = set(written)
        for branch in step.get("branches", []) or []:
            after |= _scan(branch.get("steps", []), written, anywhere, flow, out, seen)
        if step.get("else"):
            after |= _scan(step["else"].get("steps", []), written, anywhere, flow, out, seen)
        if kind == "while":
            after |= _scan(step.get("steps", []), written, anywhere, flow, out, seen)
        if kind == "group":
            after |= _scan(step.get("items", []), written, anywhere, flow, out, seen)
        written = after | _writes(step)
    return written


def without_execute(graph: Graph) -> list[RulebookFinding]:
    """QG008: bot lines and calls of undefined flows that name a tool."""
    record = graph.record
    if record is None:
        return []
    tools = {_norm(name): name for name in graph.catalogue.tools}
    flows = {flow.get("name") for flow in record.get("flows", [])}
    out: list[RulebookFinding] = []
    for flow in record.get("flows", []):
        for step in _walk(flow.get("steps", [])):
            kind = step.get("step")
            named = None
            if kind == "bot" and isinstance(step.get("message"), str):
                named = _tool_named(step["message"], tools)
                how = f"`bot {step['message']}`"
            elif kind == "call" and step.get("flow") not in flows:
                named = _tool_named(str(step.get("flow", "")), tools)
                how = f"a call of the flow `{step.get('flow')}`, which the file does not define"
            if named is not None:
                out.append(
                    RulebookFinding(
                        "QG008",
                        named,
                        step.get("line"),
                        f"line {step.get('line')} of flow '{flow.get('name')}' names '{named}' "
                        f"with {how}: it says something, it does not call the tool, so the flow "
                        "does not govern it",
                        {"tool": named},
                        tool=named,
                    )
                )
    return out


def _tool_named(text: str, tools: Mapping[str, str]) -> str | None:
    name = _norm(text)
    if name in tools:
        return tools[name]
    for word in CALL_WORDS:
        prefix = word + "_"
        if name.startswith(prefix) and name[len(prefix) :] in tools:
            return tools[name[len(prefix) :]]
    return None


def undefined_messages(graph: Graph) -> list[RulebookFinding]:
    """QG009, Colang 1.0 only."""
    record = graph.record
    if record is None or record.get("format") != "colang-1.0":
        return []
    defined = {m.get("name") for m in record.get("bot_messages", [])}
    out: list[RulebookFinding] = []
    reported: set[str] = set()
    for flow in record.get("flows", []):
        for step in _walk(flow.get("steps", [])):
            message = step.get("message") if step.get("step") == "bot" else None
            if not isinstance(message, str) or message in defined:
                continue
            if message in BUILT_IN_BOT_MESSAGES or message in reported:
                continue
            reported.add(message)
            out.append(
                RulebookFinding(
                    "QG009",
                    message,
                    step.get("line"),
                    f"flow '{flow.get('name')}' says `bot {message}`, which the file does not "
                    "define, so a model writes what it says",
                    {"message": message},
                )
            )
    return out


def dead_actions(graph: Graph) -> list[RulebookFinding]:
    """QG010: tool calls no route reaches, and governed tools no agent lists."""
    record = graph.record
    if record is None:
        return []
    live: set[tuple[str, int]] = set()
    for governed in (record.get("tools") or {}).values():
        for route in governed.get("routes") or []:
            live.add((route.get("flow"), route.get("line")))
    out: list[RulebookFinding] = []
    for flow in record.get("flows", []):
        for step in _walk(flow.get("steps", [])):
            if step.get("step") != "tool":
                continue
            if (flow.get("name"), step.get("line")) not in live:
                out.append(
                    RulebookFinding(
                        "QG010",
                        step.get("tool", ""),
                        step.get("line"),
                        f"the call of '{step.get('tool')}' at line {step.get('line')} of flow "
                        f"'{flow.get('name')}' can never run, so the conditions around it govern "
                        "nothing",
                        {"tool": str(step.get("tool"))},
                    )
                )
    callable_tools = _callable(graph.catalogue)
    for name, governed in sorted((record.get("tools") or {}).items()):
        if name in graph.catalogue.tools and name not in callable_tools:
            lines = [r.get("line") for r in governed.get("routes") or []]
            lines += [r.get("row") for r in governed.get("rules") or []]
            out.append(
                RulebookFinding(
                    "QG010",
                    name,
                    next((n for n in lines if isinstance(n, int)), None),
                    f"the rulebook governs '{name}', which no agent lists, so its rules govern "
                    "nothing any agent does",
                    {"tool": name},
                )
            )
    return out


def _callable(catalogue: Catalogue) -> set[str]:
    return {tool for agent in catalogue.agents.values() for tool in agent.tools}


def advised(graph: Graph, advisories: Sequence[Advisory]) -> list[RulebookFinding]:
    """QG022."""
    record = graph.record
    if record is None:
        return []
    return [
        RulebookFinding(
            "QG022",
            rail,
            line,
            f"the rail '{rail}' has a published advisory, {advisory.id}: {advisory.summary}",
            {"rail": rail, "advisory": advisory.id},
        )
        for advisory, rail, line in matching(record, advisories)
    ]
