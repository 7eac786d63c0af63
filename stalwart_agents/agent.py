"""`Agent`: an agent.yaml read on this machine, with its catalogue, facts and compiled rulebook."""

from __future__ import annotations

import importlib
import secrets
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from guard import engine
from rulebooks import compiler


class AgentFileError(Exception):
    """An agent.yaml (or a file it names) that cannot be read; the message names file and place."""


@dataclass(frozen=True)
class Rules:
    """The rulebook an agent runs under: its compiled record and where it came from."""

    record: dict[str, Any] | None
    source: str | None


def _python_modules(data: Mapping[str, Any], folder: Path) -> dict[str, list]:
    """Import every `tools: - python: <module>` the file names; its `TOOLS` list is the catalogue's.

    The module is looked up beside agent.yaml: `shop.tools` for an agent.yaml in `.../shop/` is
    `.../shop/tools.py`, with the folder above on the import path.
    """
    modules: dict[str, list] = {}
    for entry in data.get("tools", []) or []:
        if not (isinstance(entry, Mapping) and isinstance(entry.get("python"), str)):
            continue
        name = entry["python"]
        for root in (folder.parent, folder):
            if str(root) not in sys.path:
                sys.path.insert(0, str(root))
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise AgentFileError(f"agent.yaml: tools: cannot import `{name}`: {exc}") from exc
        tools = getattr(module, "TOOLS", None)
        if not isinstance(tools, list):
            raise AgentFileError(f"agent.yaml: tools: `{name}` has no `TOOLS` list")
        modules[name] = tools
    return modules


class Agent:
    """An agent file read on this machine (`Agent.from_file("agent.yaml", context=...)`)."""

    def __init__(
        self,
        file: engine.AgentFile,
        *,
        path: Path,
        rules: Rules,
        context: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
        modules: Mapping[str, list] | None = None,
    ) -> None:
        self.file = file
        self.path = path
        self._rules = rules
        self.context = context
        self.modules = dict(modules or {})
        self._conversations: dict[tuple, Any] = {}

    @classmethod
    def from_file(
        cls, path: str | Path, *, context: Any = None, colang_version: str | None = None
    ) -> Agent:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise AgentFileError(f"cannot read `{path}`: {exc.strerror or exc}") from exc
        try:
            data = engine.agent_yaml.parse_yaml(text, filename=path.name)
        except engine.CatalogueInvalid as exc:
            raise AgentFileError(str(exc)) from exc
        modules = _python_modules(data if isinstance(data, Mapping) else {}, path.parent)
        try:
            agent_file = engine.load_agent_yaml(text, modules=modules, filename=path.name)
        except engine.CatalogueInvalid as exc:
            raise AgentFileError("; ".join(f"{path.name}: {i}" for i in exc.issues)) from exc
        return cls(
            agent_file,
            path=path,
            rules=cls._compile(path, agent_file, colang_version),
            context=context,
            modules=modules,
        )

    @staticmethod
    def _compile(path: Path, agent_file: engine.AgentFile, colang_version: str | None) -> Rules:
        if not agent_file.rulebook:
            return Rules(None, None)
        source = (path.parent / agent_file.rulebook).resolve()
        try:
            if source.is_dir():  # a folder `stalwart rules compile` wrote is read as it is
                record = compiler.read_record_folder(source)
            else:
                record = compiler.hold_rulebook(
                    source.read_bytes(), filename=source.name, colang_version=colang_version
                )
        except OSError as exc:
            raise compiler.RulebookNotHeld(
                f"the rulebook `{agent_file.rulebook}` of `{path.name}` cannot be read: "
                f"{exc.strerror or exc}"
            ) from exc
        except compiler.RulebookError as exc:
            raise compiler.RulebookNotHeld(
                f"the rulebook `{agent_file.rulebook}` of `{path.name}` is not held: {exc}"
            ) from exc
        return Rules(record, str(source))

    def catalogue(self) -> dict[str, Any]:
        """The agents and tools, as JSON: what a session of the tool check is opened with.

        The file's `facts:` are the agent's own (read by its runtime from its tools' results); a
        check made through a client or a session gets its facts with `context=` on each call.
        """
        data = dict(self.file.data)
        data.pop("facts", None)
        return data

    def rules(self) -> Rules:
        return self._rules

    @property
    def agents(self) -> list[str]:
        return sorted(self.file.catalogue.agents)

    def chat(
        self,
        text: str,
        *,
        user: str = "anonymous",
        agent: str | None = None,
        language: str | None = None,
    ) -> Any:
        """One turn of `user`'s conversation: router, plan, tool check, then the tool runs.

        The turn is read before any model sees it; a call runs only when the tool check (with the
        checks of what was said) allows it, through the tool's function in the module agent.yaml
        names. Each user has a conversation of their own, with its own signed history. Returns the
        router's `Reply` (`text`, `plan`, `checks`, `ran`, `waiting`, `model_called`).
        """
        from router import engine as router_engine

        key = (user, agent, language)
        conversation = self._conversations.get(key)
        if conversation is None:
            settings = self.file.other.get("settings") or {}
            router = router_engine.Router(
                self.file,
                rulebook=self._rules.record,
                agent=agent,
                language=language or settings.get("language") or "en",
            )
            conversation = router_engine.Conversation(
                router,
                executor=self._run_tool,
                key=secrets.token_bytes(32),
                context=self.context,
                session=f"{user}-{secrets.token_hex(4)}",
            )
            self._conversations[key] = conversation
        return conversation.say(text)

    def _run_tool(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        """Run an allowed call with the tool's function from the module that declared it."""
        for name in self.modules:
            function = getattr(sys.modules.get(name), tool, None)
            if callable(function):
                return function(**arguments)
        raise AgentFileError(f"no function `{tool}` in {', '.join(self.modules) or 'no module'}")
