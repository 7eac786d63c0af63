"""Models, named `provider:model`, behind one small adapter interface; and the scripted model.

The router never needs a model. A conversation calls one only where the settings send a turn to it
(`on_unread: model` or `ask`, a calculation's function), through an adapter:

    adapter.respond(ModelRequest) -> ModelReply

A request says what the model is asked for (`purpose`: `turn`, to answer a turn nothing read, or
`function`, to write a calculation's function over `data`), in which language, with which tools
(`tools` their names, `schemas` each one's name, description and JSON Schema of its arguments),
and the conversation so far (`messages`, each `{"role": "user" | "assistant", "content": ...}`,
the last the person's: a yes to `ask` and the question it answered are messages like any other).
A reply holds the tool calls the model asks for (each is checked by the tool check like any other,
its values' origin `model`), a text, or a function's source.

`scripted:<name>` is the adapter for tests and demos: it answers from a script of canned replies,
in order, and records every request; when the script runs out it raises `ModelUnavailable` (a
conversation then refuses rather than continue unchecked). Real providers are optional adapters a
host registers in `Models(adapters={"anthropic": factory})`; with none registered, naming one is
an error, never a silent fall-back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .errors import ModelNameInvalid, ModelUnavailable

NAME = re.compile(
    r"^(?P<provider>[a-z][a-z0-9_-]{0,39}):(?P<model>[A-Za-z0-9][A-Za-z0-9._:/-]{0,199})$"
)
TURN = "turn"
FUNCTION = "function"


def parse_model_name(name: Any) -> tuple[str, str]:
    """`provider:model` -> (provider, model); raise `ModelNameInvalid` for anything else."""
    if not isinstance(name, str):
        raise ModelNameInvalid("a model is named `provider:model`")
    match = NAME.match(name.strip())
    if match is None:
        raise ModelNameInvalid(f"a model is named `provider:model`, not `{name}`")
    return match.group("provider"), match.group("model")


@dataclass(frozen=True)
class ModelRequest:
    """What a model is asked for."""

    purpose: str
    turn: str
    language: str
    tools: tuple[str, ...] = ()
    data: Any = None
    history: tuple[str, ...] = ()
    messages: tuple[Mapping[str, str], ...] = ()
    schemas: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class ModelReply:
    """What a model answers: tool calls, a text, or a function's source."""

    calls: tuple[Mapping[str, Any], ...] = ()
    text: str | None = None
    function: str | None = None

    @classmethod
    def of(cls, data: ModelReply | Mapping[str, Any] | str) -> ModelReply:
        if isinstance(data, ModelReply):
            return data
        if isinstance(data, str):
            return cls(text=data)
        return cls(
            calls=tuple(data.get("calls") or ()),
            text=data.get("text"),
            function=data.get("function"),
        )


def tool_schemas(catalogue: Any, names: Sequence[str]) -> tuple[dict[str, Any], ...]:
    """What a model is shown of each tool: its name, description and JSON Schema of arguments."""
    schemas = []
    for name in names:
        tool = catalogue.tools[name]
        parameters = dict(tool.parameters or {"type": "object", "properties": {}})
        schemas.append(
            {"name": name, "description": tool.description or name, "parameters": parameters}
        )
    return tuple(schemas)


class ModelAdapter(Protocol):
    """A model a conversation may call."""

    name: str

    def respond(self, request: ModelRequest) -> ModelReply: ...


@dataclass
class ScriptedModel:
    """`scripted:<name>`: canned replies, in order, and a record of every request."""

    name: str
    script: Sequence[ModelReply | Mapping[str, Any] | str] = ()
    requests: list[ModelRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        provider, _model = parse_model_name(self.name)
        if provider != "scripted":
            raise ModelNameInvalid(
                f"a scripted model is named `scripted:<name>`, not `{self.name}`"
            )
        self._next = 0

    def respond(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        if self._next >= len(self.script):
            raise ModelUnavailable(f"the script of `{self.name}` has no reply left")
        reply = ModelReply.of(self.script[self._next])
        self._next += 1
        return reply


class Models:
    """The adapters a host offers, by provider; `resolve(name)` gives the one for a model."""

    def __init__(
        self,
        *,
        adapters: Mapping[str, Callable[[str], ModelAdapter]] | None = None,
        scripts: Mapping[str, Sequence[ModelReply | Mapping[str, Any] | str]] | None = None,
    ) -> None:
        self._adapters = dict(adapters or {})
        self._scripts = dict(scripts or {})

    def resolve(self, name: str) -> ModelAdapter:
        provider, model = parse_model_name(name)
        if provider == "scripted":
            if model not in self._scripts:
                raise ModelUnavailable(f"there is no script for `{name}`")
            return ScriptedModel(name, self._scripts[model])
        factory = self._adapters.get(provider)
        if factory is None:
            raise ModelUnavailable(f"no adapter is installed for the provider `{provider}`")
        return factory(model)
