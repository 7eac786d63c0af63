"""The model adapters `model: "provider:model"` resolves to, behind the router's one interface.

An adapter takes a `ModelRequest` (the conversation's messages and the schemas of the tools the
agent may reach) and answers a `ModelReply` (a text, tool calls, or a calculation's function):

- `scripted:<name>` -- canned replies, in order (`ScriptedModel`): a list given in code, or the
  YAML/JSON list `models: {"scripted:<name>": {replies: ./replies.yaml}}` names; deterministic,
  for tests and demos;
- `openai:<model>` -- OpenAI's chat completions through the `openai` SDK, at any base URL
  (`base_url:` in `models:`, else `OPENAI_BASE_URL`, else OpenAI's): vLLM, Ollama, LM Studio and
  hosted ones speak it;
- `anthropic:<model>` -- Anthropic's messages through the `anthropic` SDK (`base_url:`, else
  `ANTHROPIC_BASE_URL`, else Anthropic's).

The SDKs are the optional extra `stalwart[models]`, imported only when a model is called.
Keys come from the environment only (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, or the variable
`api_key_env:` names), never from agent.yaml (an `api_key:` there is refused), and are never put
in a message, an error or a reply. A model that cannot be reached, times out, refuses the key or
answers what cannot be read raises `ModelUnavailable` saying which (built from the error's kind
and status, never its text, which may echo the key): the conversation refuses the turn with that
reason and nothing runs.

`AgentModels` is how `Agent` picks each agent's adapter: the model agent.yaml names wins; the
`model=` given in code (an adapter, or a `provider:model` name) is used for an agent whose file
names none, and, as the configured adapter of that very model, for one whose file names the same
name. A code model of another name never replaces the file's.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from router.engine.errors import ModelNameInvalid, ModelUnavailable
from router.engine.models import (
    FUNCTION,
    ModelAdapter,
    ModelReply,
    ModelRequest,
    ScriptedModel,
    parse_model_name,
)
from stalwart_agents.agent import AgentFileError

__all__ = [
    "AgentModels",
    "AnthropicModel",
    "ModelConfigInvalid",
    "ModelOptions",
    "ModelUnavailable",
    "OpenAIModel",
    "ScriptedModel",
    "make_model",
    "read_models_section",
]

PROVIDERS = ("scripted", "openai", "anthropic")
DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 1
DEFAULT_MAX_TOKENS = 1024
MAX_CALLS = 16
MAX_TEXT = 8000
MAX_MESSAGES = 40
OPTION_KEYS = frozenset(
    {"base_url", "timeout", "max_retries", "max_tokens", "api_key_env", "replies"}
)
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")
_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\n(?P<code>.*?)\n?```\s*$", re.DOTALL)

SYSTEM_TURN = (
    "You are the assistant of the agent `{agent}`. The person's request could not be read by the "
    "router, so it is yours. You may answer in words, or call the tools you are given; every call "
    "you ask for is checked before anything runs, and a write is put to the person first. Call "
    "only the tools given, with the arguments their schemas declare. Answer in {language}."
)
SYSTEM_FUNCTION = (
    "Write one Python function `def f(data):` that computes what the person asks from `data`, "
    "the results of the reads already run (given below as JSON). Answer with the code only."
)
LANGUAGES = {"en": "English", "pt-BR": "Brazilian Portuguese"}


class ModelConfigInvalid(AgentFileError, ValueError):
    """A `models:` section, or a `model=` given in code, that cannot be used; names the field."""


@dataclass(frozen=True)
class ModelOptions:
    """How one model is reached: the base URL, limits, which variable holds its key."""

    base_url: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_RETRIES
    max_tokens: int = DEFAULT_MAX_TOKENS
    api_key_env: str | None = None
    replies: tuple[Any, ...] | None = None


def _number(value: Any, where: str, low: float, high: float, *, integer: bool = False) -> Any:
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not low <= value <= high:
        what = "a whole number" if integer else "a number"
        raise ModelConfigInvalid(f"{where}: must be {what} from {low:g} to {high:g}, not `{value}`")
    return value


def _replies(value: Any, where: str, folder: Path | None) -> tuple[Any, ...]:
    if isinstance(value, str):
        from guard.engine import safe_yaml

        path = (folder or Path.cwd()) / value
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ModelConfigInvalid(
                f"{where}: the replies file `{value}` cannot be read: {exc.strerror or exc}"
            ) from None
        try:
            value = safe_yaml.load(text)
        except Exception as exc:  # noqa: BLE001 - any parse failure is the file's: say so
            raise ModelConfigInvalid(f"{where}: `{value}` is not YAML or JSON: {exc}") from None
    if not isinstance(value, list):
        raise ModelConfigInvalid(f"{where}: must be a list of replies, or the file holding one")
    for index, reply in enumerate(value):
        if not isinstance(reply, (str, Mapping)):
            raise ModelConfigInvalid(f"{where}[{index}]: a reply is a text or a mapping")
        if isinstance(reply, Mapping):
            extra = set(reply) - {"text", "calls", "function"}
            if extra:
                raise ModelConfigInvalid(
                    f"{where}[{index}]: a reply has text, calls or function, not {sorted(extra)}"
                )
            calls = reply.get("calls") or []
            if not isinstance(calls, list) or not all(
                isinstance(c, Mapping) and isinstance(c.get("tool"), str) for c in calls
            ):
                raise ModelConfigInvalid(
                    f"{where}[{index}].calls: a list of {{tool, arguments}} mappings"
                )
    return tuple(value)


def read_models_section(section: Any, *, folder: Path | None = None) -> dict[str, ModelOptions]:
    """agent.yaml's `models:` (model name -> options), checked; `ModelConfigInvalid` naming the
    field otherwise. A key is never written there: `api_key_env` names the variable holding it."""
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise ModelConfigInvalid("models: must map `provider:model` names to their options")
    options: dict[str, ModelOptions] = {}
    for name, raw in section.items():
        where = f"models.{name}"
        try:
            provider, _model = parse_model_name(name)
        except ModelNameInvalid as exc:
            raise ModelConfigInvalid(f"{where}: {exc}") from None
        if provider not in PROVIDERS:
            raise ModelConfigInvalid(
                f"{where}: the provider `{provider}` is not one of {', '.join(PROVIDERS)}"
            )
        raw = raw or {}
        if not isinstance(raw, Mapping):
            raise ModelConfigInvalid(f"{where}: must be a mapping of options")
        if "api_key" in raw:
            raise ModelConfigInvalid(
                f"{where}.api_key: keys are read from the environment only; name the variable "
                "that holds it with `api_key_env`"
            )
        unknown = sorted(set(map(str, raw)) - OPTION_KEYS)
        if unknown:
            raise ModelConfigInvalid(
                f"{where}.{unknown[0]}: is not an option of a model "
                f"({', '.join(sorted(OPTION_KEYS))})"
            )
        base_url = raw.get("base_url")
        if base_url is not None and (
            not isinstance(base_url, str) or not re.match(r"^https?://[^\s]+$", base_url)
        ):
            raise ModelConfigInvalid(f"{where}.base_url: must be an http(s) URL, not `{base_url}`")
        env = raw.get("api_key_env")
        if env is not None and (not isinstance(env, str) or not _ENV_NAME.match(env)):
            raise ModelConfigInvalid(
                f"{where}.api_key_env: must be the name of an environment variable, not `{env}`"
            )
        replies = raw.get("replies")
        if replies is not None and provider != "scripted":
            raise ModelConfigInvalid(f"{where}.replies: only a `scripted:` model has replies")
        options[str(name)] = ModelOptions(
            base_url=base_url,
            timeout=float(
                _number(raw.get("timeout", DEFAULT_TIMEOUT), f"{where}.timeout", 0.1, 600)
            ),
            max_retries=_number(
                raw.get("max_retries", DEFAULT_RETRIES), f"{where}.max_retries", 0, 5, integer=True
            ),
            max_tokens=_number(
                raw.get("max_tokens", DEFAULT_MAX_TOKENS),
                f"{where}.max_tokens",
                1,
                200000,
                integer=True,
            ),  # fmt: skip
            api_key_env=env,
            replies=_replies(replies, f"{where}.replies", folder) if replies is not None else None,
        )
    return options


# -- the requests, in each provider's words --------------------------------------------------------


def _system(request: ModelRequest, agent: str | None) -> str:
    if request.purpose == FUNCTION:
        return SYSTEM_FUNCTION
    language = LANGUAGES.get(request.language, request.language)
    return SYSTEM_TURN.format(agent=agent or "assistant", language=language)


def _messages(request: ModelRequest) -> list[dict[str, str]]:
    """The conversation as alternating user/assistant messages, starting and ending with the
    person (what both providers take): its latest `MAX_MESSAGES`, each cut at `MAX_TEXT`."""
    if request.purpose == FUNCTION:
        data = json.dumps(request.data, ensure_ascii=False, default=str)[: MAX_TEXT * 4]
        return [{"role": "user", "content": f"{request.turn}\n\ndata = {data}"}]
    given = [
        {"role": m.get("role", ""), "content": str(m.get("content") or "")}
        for m in request.messages
        if m.get("role") in ("user", "assistant") and m.get("content")
    ] or [{"role": "user", "content": request.turn}]
    merged: list[dict[str, str]] = []
    for message in given:
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1]["content"] += "\n" + message["content"]
        else:
            merged.append(dict(message))
    merged = merged[-MAX_MESSAGES:]  # the conversation's latest turns, bounded
    for message in merged:
        message["content"] = message["content"][:MAX_TEXT]
    while merged and merged[0]["role"] != "user":
        merged.pop(0)
    return merged or [{"role": "user", "content": request.turn}]


def _parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    parameters = dict(schema.get("parameters") or {})
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    return parameters


def _function_source(text: str) -> str:
    match = _FENCE.match(text.strip())
    return match.group("code") if match else text.strip()


def _reply(text: Any, calls: list[dict[str, Any]], request: ModelRequest) -> ModelReply:
    """A reply read from a provider's answer, or `ModelUnavailable` if it cannot be used."""
    if text is not None and not isinstance(text, str):
        raise ModelUnavailable("its answer could not be read (the text is not a text)")
    text = (text or "").strip()[:MAX_TEXT] or None
    if len(calls) > MAX_CALLS:
        raise ModelUnavailable(
            f"it asked for {len(calls)} tool calls at once (at most {MAX_CALLS})"
        )
    if request.purpose == FUNCTION:
        if not text:
            raise ModelUnavailable("it wrote no function")
        return ModelReply(function=_function_source(text))
    if not text and not calls:
        raise ModelUnavailable("its answer held neither a text nor a tool call")
    return ModelReply(calls=tuple(calls), text=text)


def _key(options: ModelOptions, default_env: str, *, needed: bool) -> str | None:
    env = options.api_key_env or default_env
    key = os.environ.get(env) or None
    if key is None and needed:
        raise ModelUnavailable(f"no key: the environment variable {env} is not set")
    return key


def _sdk_failure(error: BaseException, module: Any) -> str:
    """What went wrong, in words of our own: the error's kind and status, never its text."""
    status = getattr(error, "status_code", None)
    if isinstance(error, module.APITimeoutError):
        return "it did not answer in time"
    if isinstance(error, module.APIConnectionError):
        return "it could not be reached"
    if isinstance(error, module.AuthenticationError):
        return f"it refused the key (HTTP {status})"
    if isinstance(error, module.PermissionDeniedError):
        return f"it refused the request (HTTP {status})"
    if isinstance(error, module.RateLimitError):
        return f"it is rate limited (HTTP {status})"
    if isinstance(error, module.APIStatusError):
        return f"it answered HTTP {status}"
    if isinstance(error, (ValueError, TypeError, KeyError, AttributeError)):
        return "its answer could not be read"
    return f"the call failed ({type(error).__name__})"


def _import(module: str) -> Any:
    try:
        return __import__(module)
    except ImportError:
        raise ModelUnavailable(
            f"the `{module}` package is not installed (pip install 'stalwart[models]')"
        ) from None


class _SDKModel:
    """What the two SDK adapters share: a name, options, a client made once, fail-closed calls."""

    provider = ""
    key_env = ""
    base_url_env = ""

    def __init__(
        self, name: str, options: ModelOptions | None = None, *, agent: str | None = None
    ) -> None:
        provider, self.model = parse_model_name(name)
        if provider != self.provider:
            raise ModelNameInvalid(f"this adapter is for `{self.provider}:<model>`, not `{name}`")
        self.name = name
        self.options = options or ModelOptions()
        self.agent = agent
        self._client: Any = None
        self.calls = 0

    def __repr__(self) -> str:  # never the client (it holds the key)
        return f"{type(self).__name__}({self.name!r}, base_url={self.base_url!r})"

    @property
    def base_url(self) -> str | None:
        return self.options.base_url or os.environ.get(self.base_url_env) or None

    def respond(self, request: ModelRequest) -> ModelReply:
        module = _import(self.provider)
        failure = None
        try:
            if self._client is None:
                self._client = self._make_client(module)
            self.calls += 1
            answer = self._create(request)
            return self._read(answer, request)
        except ModelUnavailable as error:
            failure = str(error)
        except Exception as error:  # noqa: BLE001 - every failure of the call fails closed
            failure = _sdk_failure(error, module)
        # Raised outside the handler: the SDK's error (whose text may echo the key) is not chained.
        raise ModelUnavailable(f"`{self.name}`: {failure}")

    def _make_client(self, module: Any) -> Any:
        raise NotImplementedError

    def _create(self, request: ModelRequest) -> Any:
        raise NotImplementedError

    def _read(self, answer: Any, request: ModelRequest) -> ModelReply:
        raise NotImplementedError


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value or "{}")
        except ValueError:
            raise ModelUnavailable(
                "the arguments of a tool call it asked for are not JSON"
            ) from None
    if not isinstance(value, Mapping):
        raise ModelUnavailable("the arguments of a tool call it asked for are not an object")
    return dict(value)


class OpenAIModel(_SDKModel):
    """`openai:<model>`: chat completions with tools, at any OpenAI-compatible base URL."""

    provider = "openai"
    key_env = "OPENAI_API_KEY"
    base_url_env = "OPENAI_BASE_URL"

    def _make_client(self, module: Any) -> Any:
        base_url = self.base_url
        # A local server (vLLM, Ollama, LM Studio) takes no key; OpenAI's own needs one.
        key = _key(self.options, self.key_env, needed=base_url is None) or "no-key"
        return module.OpenAI(
            api_key=key,
            base_url=base_url,
            timeout=self.options.timeout,
            max_retries=self.options.max_retries,
        )

    def _create(self, request: ModelRequest) -> Any:
        messages = [{"role": "system", "content": _system(request, self.agent)}]
        messages += _messages(request)
        arguments: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": self.options.max_tokens,
        }
        if request.schemas and request.purpose != FUNCTION:
            arguments["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": schema["name"],
                        "description": str(schema.get("description") or schema["name"]),
                        "parameters": _parameters(schema),
                    },
                }
                for schema in request.schemas
            ]
        return self._client.chat.completions.create(**arguments)

    def _read(self, answer: Any, request: ModelRequest) -> ModelReply:
        choices = getattr(answer, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise ModelUnavailable("its answer could not be read (no choices)")
        message = getattr(choices[0], "message", None)
        if message is None:
            raise ModelUnavailable("its answer could not be read (no message)")
        calls = []
        for tool_call in getattr(message, "tool_calls", None) or []:
            function = getattr(tool_call, "function", None)
            name = getattr(function, "name", None)
            if not isinstance(name, str) or not name:
                raise ModelUnavailable("a tool call it asked for has no name")
            calls.append(
                {"tool": name, "arguments": _arguments(getattr(function, "arguments", ""))}
            )
        return _reply(getattr(message, "content", None), calls, request)


class AnthropicModel(_SDKModel):
    """`anthropic:<model>`: messages with tools (`tool_use` blocks)."""

    provider = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    base_url_env = "ANTHROPIC_BASE_URL"

    def _make_client(self, module: Any) -> Any:
        # The key is passed explicitly, so the SDK reads no profile or other credential on disk.
        return module.Anthropic(
            api_key=_key(self.options, self.key_env, needed=True),
            base_url=self.base_url,
            timeout=self.options.timeout,
            max_retries=self.options.max_retries,
        )

    def _create(self, request: ModelRequest) -> Any:
        arguments: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.options.max_tokens,
            "system": _system(request, self.agent),
            "messages": _messages(request),
        }
        if request.schemas and request.purpose != FUNCTION:
            arguments["tools"] = [
                {
                    "name": schema["name"],
                    "description": str(schema.get("description") or schema["name"]),
                    "input_schema": _parameters(schema),
                }
                for schema in request.schemas
            ]
        return self._client.messages.create(**arguments)

    def _read(self, answer: Any, request: ModelRequest) -> ModelReply:
        content = getattr(answer, "content", None)
        if not isinstance(content, list):
            raise ModelUnavailable("its answer could not be read (no content)")
        texts, calls = [], []
        for block in content:
            kind = getattr(block, "type", None)
            if kind == "text":
                texts.append(getattr(block, "text", None) or "")
            elif kind == "tool_use":
                name = getattr(block, "name", None)
                if not isinstance(name, str) or not name:
                    raise ModelUnavailable("a tool call it asked for has no name")
                calls.append({"tool": name, "arguments": _arguments(getattr(block, "input", None))})
        return _reply(" ".join(t for t in texts if t) or None, calls, request)


@dataclass(frozen=True)
class NoAdapter:
    """A model named with a provider no adapter serves: a turn sent to it is refused."""

    name: str

    def respond(self, request: ModelRequest) -> ModelReply:
        provider = parse_model_name(self.name)[0]
        raise ModelUnavailable(
            f"`{self.name}`: no adapter serves the provider `{provider}` "
            f"(one of {', '.join(PROVIDERS)})"
        )


def make_model(
    name: str,
    options: ModelOptions | None = None,
    *,
    agent: str | None = None,
    replies: Sequence[Any] | None = None,
) -> ModelAdapter:
    """The adapter for `provider:model`; `ModelNameInvalid` for a name or provider we do not know.

    A `scripted:` model answers `replies` (or its options' `replies`); with none it has nothing to
    say, and a turn sent to it is refused (`ModelUnavailable`)."""
    provider, _model = parse_model_name(name)
    options = options or ModelOptions()
    if provider == "scripted":
        return ScriptedModel(name, list(replies if replies is not None else options.replies or ()))
    if provider == "openai":
        return OpenAIModel(name, options, agent=agent)
    if provider == "anthropic":
        return AnthropicModel(name, options, agent=agent)
    raise ModelNameInvalid(
        f"the model `{name}`: the provider `{provider}` is not one of {', '.join(PROVIDERS)}"
    )


class AgentModels:
    """Which adapter each agent of an agent file talks to (see the module docstring).

    `given` is the `model=` of `Agent(...)`: None, a `provider:model` name or an adapter (anything
    with a `name` and `respond(request)`). Checked here, at construction: a bad name, an unknown
    provider or a bad `models:` section raises `ModelConfigInvalid`, naming it.
    """

    def __init__(self, file: Any, path: Path | None = None, given: Any = None) -> None:
        folder = path.parent if path is not None else None
        other = getattr(file, "other", {}) or {}
        self.options = read_models_section(other.get("models"), folder=folder)
        catalogue = getattr(file, "catalogue", None)
        self._named = {
            name: agent.model for name, agent in (getattr(catalogue, "agents", {}) or {}).items()
        }
        # A provider we have no adapter for is not an error here (the proof reads any name): a
        # turn sent to it is refused, naming the provider (`NoAdapter`).
        if isinstance(given, str):
            self._check_name(given, "model")
        elif given is not None and not (
            isinstance(getattr(given, "name", None), str)
            and callable(getattr(given, "respond", None))
        ):
            raise ModelConfigInvalid(
                "model: give a `provider:model` name or an adapter with `name` and `respond()`"
            )
        self.given = given
        self._made: dict[tuple[str | None, str], ModelAdapter] = {}

    @staticmethod
    def _check_name(name: str, where: str) -> None:
        try:
            provider, _model = parse_model_name(name)
        except ModelNameInvalid as exc:
            raise ModelConfigInvalid(f"{where}: {exc}") from None
        if provider not in PROVIDERS:
            raise ModelConfigInvalid(
                f"{where}: the provider `{provider}` of `{name}` is not one of {', '.join(PROVIDERS)}"
            )

    def for_agent(self, agent: str | None, named: str | None) -> ModelAdapter | None:
        """The adapter for `agent`, whose file names the model `named` (or None)."""
        given = self.given
        given_name = given if isinstance(given, str) else getattr(given, "name", None)
        if named:
            if given is not None and not isinstance(given, str) and given_name == named:
                return given
            name = named
        elif given is None:
            return None
        elif not isinstance(given, str):
            return given
        else:
            name = given
        provider = parse_model_name(name)[0]
        if provider not in PROVIDERS:
            return NoAdapter(name)
        if provider == "scripted":  # each conversation reads its script anew
            return make_model(name, self.options.get(name), agent=agent)
        key = (agent, name)
        if key not in self._made:
            self._made[key] = make_model(name, self.options.get(name), agent=agent)
        return self._made[key]

    def for_router(self, router: Any) -> ModelAdapter | None:
        """The adapter for the router's agent; where only code gave one, the router is told the
        agent has a model (`router.model`), so `on_unread: model` and `ask` can reach it."""
        agents = list(self._named)
        agent = router.agent or (agents[0] if len(agents) == 1 else None)
        adapter = self.for_agent(agent, router.model)
        if adapter is not None and not router.model:
            router.model = adapter.name
        return adapter
