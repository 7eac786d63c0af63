"""`Context(facts=agent.facts)`: the agent file's `facts:`, read from the tool results a door saw.

The chapter's promise for the framework doors: the guard middleware, `build_stalwart_graph` and
`Guard.call_with` take `context=`, and a `Context` reads the file's `facts:` for them from the tools'
answers. A door tells its `Context` every call that ran (`observe`); at each check it asks for the
facts of the call being checked (`for_call(arguments)`), so a fact bound with `same: order_id`
only counts the answer for the order that call names.

The rules are the rulebook compiler's (`rulebooks.compiler.resolve_facts`, the one reader of
facts): until the tool answered, a fact is false; a fact is never read from a tool that
`reads_outside`; where code (`context=`) and the file report the same fact, the file wins.

A `Context` whose `facts:` do not read is refused at construction, naming the fact
(`FactsInvalid`); a code context that raises makes the check's facts unavailable: the check
raises `SelectorUnavailableError` and nothing runs (fail closed), never a fact read as false.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Collection, Mapping
from typing import Any

from rulebooks.compiler import resolve_facts, validate_facts_spec
from rulebooks.compiler.errors import FactsInvalid
from rulebooks.compiler.facts import parse_facts_spec, read_fact

CodeFacts = Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None

#: Most answers a `Context` keeps per tool: the latest answers are the ones facts read.
KEEP_PER_TOOL = 256


def facts_of(agent: Any) -> Mapping[str, Any]:
    """The `facts:` of an `Agent`: `agent.facts` where the SDK has it, else the file's section."""
    facts = getattr(agent, "facts", None)
    if facts is None:
        file = getattr(agent, "file", None)
        data = getattr(file, "data", None) or {}
        facts = data.get("facts") if isinstance(data, Mapping) else None
    return dict(facts or {})


class Context:
    """The facts of one conversation: the file's `facts:` over the results seen, and code's.

    `facts` is the `facts:` mapping (`agent.facts`); `context` the facts your code reports (a
    mapping, or a function called at each check); `reads_outside` the tools that read outside
    content (a fact is never read from them; `Guard` fills it from the catalogue).
    """

    def __init__(
        self,
        facts: Mapping[str, Any] | None = None,
        *,
        context: CodeFacts = None,
        reads_outside: Collection[str] = (),
    ) -> None:
        issues = validate_facts_spec(facts or {}, reads_outside=reads_outside)
        if issues:
            raise FactsInvalid(issues)
        self.facts = dict(facts or {})
        self.code = context
        self.reads_outside = tuple(reads_outside)
        self._sources, _ = parse_facts_spec(self.facts)  # read once, not at every check
        self._results: dict[str, deque[dict[str, Any]]] = {
            source.tool: deque(maxlen=KEEP_PER_TOOL) for source in self._sources
        }
        self._lock = threading.Lock()

    def observe(self, tool: str, arguments: Mapping[str, Any], result: Any) -> None:
        """A call that ran, with its result: what the file's facts are read from."""
        kept = self._results.get(tool)
        if kept is None or tool in self.reads_outside:
            return
        with self._lock:
            kept.append({"tool": tool, "arguments": dict(arguments), "result": result})

    def for_call(self, arguments: Mapping[str, Any] | None = None) -> dict[str, bool]:
        """Every fact's value for a call with these arguments (the file's win over code's)."""
        arguments = dict(arguments or {})
        # Code's facts first, by the compiler's own rules (a failing function raises)...
        out = resolve_facts(None, arguments=arguments, results=(), context=self.code)
        # ...then the file's, read by the compiler's reader from each tool's latest answers.
        for source in self._sources:
            with self._lock:
                results = list(self._results[source.tool])
            out[source.name] = read_fact(
                source, arguments=arguments, results=results, reads_outside=self.reads_outside
            )
        return out

    def __call__(self) -> dict[str, bool]:
        """The facts bound to no call (a fact with `same:` is false here: it names no call)."""
        return self.for_call({})
