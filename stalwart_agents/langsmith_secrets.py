"""A catalogue's `secret` arguments kept out of LangSmith's traces (LangChain, LangGraph).

LangSmith records a traced run's inputs and outputs as they are: the model's tool calls with
their arguments, the tool's input, the graph's state (its messages) at every step. The model's
call is uploaded before any check sees it, so no guard in front of the tool can mask it: only the
LangSmith client can, as it uploads each run. `langsmith_client(catalogue)` is that client,
`langsmith.Client(anonymizer=secret_anonymizer(catalogue))`; give it to the run:

    with langsmith.tracing_context(client=langsmith_client(catalogue)):
        app.invoke(...)

(or `LangChainTracer(client=...)` among the run's callbacks). The anonymizer sees each run's
inputs, outputs and error as JSON (`Client(anonymizer=...)`), and masks, as `[secret]`:

1. the value under any key that some tool of the catalogue marks `secret` (a tool call's `args`,
   the tool's input), at any depth;
2. in text, the value written after such a name, as JSON (`"card_number": "4111..."`) or a
   Python mapping (`'card_number': '4111...'`) writes it (a call's arguments as a string);
3. in text, any value found by 1 or 2 (in this run, or in an earlier one of this client: the
   last `REMEMBERED`), at least `SHORTEST` characters long: a tool's output or an error that
   repeats it.

A name is masked whichever tool it belongs to (masking more is the safe side). The same value in
words no argument gave it (a person's message typing a card number before any call) is not
masked: nothing marks it yet.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import re2

from stalwart_agents.guarded import SECRET

__all__ = ["langsmith_client", "secret_anonymizer"]

#: How many secret values one anonymizer remembers to mask in later text (the oldest forgotten).
REMEMBERED = 256
#: A remembered value shorter than this is not masked in text (a `1` would mask every digit).
SHORTEST = 4

#: A quoted string, JSON's or Python's, or a bare value up to the next separator.
_VALUE = r"(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[^,}\]\s]+)"


def secret_names(catalogue: Mapping[str, Any]) -> frozenset[str]:
    """Every argument name some tool of the catalogue marks `secret`."""
    return frozenset(
        str(name)
        for tool in catalogue.get("tools") or ()
        if isinstance(tool, Mapping)
        for name in tool.get("secret") or ()
    )


def secret_anonymizer(catalogue: Mapping[str, Any]) -> Callable[[Any], Any]:
    """A LangSmith anonymizer (`langsmith.Client(anonymizer=...)`) masking the catalogue's
    `secret` arguments (see the module)."""
    names = secret_names(catalogue)
    if not names:
        return lambda data: data
    # RE2 (linear time): it runs over every traced run's text, which the model and tools wrote
    written = re2.compile(
        r"((?:\\?[\"'])(?:"
        + "|".join(re2.escape(n) for n in sorted(names))
        + r")\\?[\"']\s*:\s*)"
        + _VALUE
    )
    remembered: dict[str, None] = {}  # insertion-ordered: the oldest is forgotten first
    lock = threading.Lock()

    def remember(value: Any) -> None:
        text = value.strip("\"'") if isinstance(value, str) else str(value)
        if len(text) < SHORTEST or isinstance(value, (dict, list)):
            return
        with lock:
            remembered.pop(text, None)
            remembered[text] = None
            while len(remembered) > REMEMBERED:
                remembered.pop(next(iter(remembered)))

    def found(data: Any) -> None:
        """Pass one: remember every secret value the run holds, under a key or in text."""
        if isinstance(data, Mapping):
            for key, value in data.items():
                if key in names and not isinstance(value, (Mapping, list)):
                    remember(value)
                found(value)
        elif isinstance(data, list):
            for value in data:
                found(value)
        elif isinstance(data, str):
            for match in written.finditer(data):
                remember(match.group(2))

    def text(value: str) -> str:
        value = written.sub(lambda m: f'{m.group(1)}"{SECRET}"', value)
        with lock:
            known = sorted(remembered, key=len, reverse=True)  # a longer value first
        for secret in known:
            if secret in value:
                value = value.replace(secret, SECRET)
        return value

    def masked(data: Any) -> Any:
        """Pass two: the run with every secret value masked."""
        if isinstance(data, Mapping):
            return {k: SECRET if k in names else masked(v) for k, v in data.items()}
        if isinstance(data, list):
            return [masked(value) for value in data]
        return text(data) if isinstance(data, str) else data

    def anonymizer(data: Any) -> Any:
        found(data)
        return masked(data)

    return anonymizer


def langsmith_client(catalogue: Mapping[str, Any], **options: Any) -> Any:
    """A `langsmith.Client(**options)` that masks the catalogue's `secret` arguments in every run
    it uploads (see the module); an `anonymizer=` given runs after this one."""
    from langsmith import Client

    ours = secret_anonymizer(catalogue)
    theirs = options.pop("anonymizer", None)
    anonymizer = ours if theirs is None else (lambda data: theirs(ours(data)))
    return Client(anonymizer=anonymizer, **options)
