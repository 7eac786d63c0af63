"""`Agent`: an agent.yaml read on this machine, with its catalogue, facts and compiled rulebook.

`Agent(..., verify=True)`, the default, proves the agent before its first turn, at construction:
the graph of agent.yaml, its tools' sources and the rulebook record it runs under are proved by
the engine `stalwart verify` runs (`proof.engine`, in this process; the tools' sources are read,
never run, and must be the very files the agent imported). A rebuilt, identical graph is answered from the engine's process-wide cache, keyed by the
graph's digest. A finding whose rule stops `Agent(...)` (every Vulnerability of the chapter's
table), a question left undecided that such a rule asks, a disagreement of the two engines, and a
proof that could not run at all raise `NotVerified`: the agent is not built and nothing runs.
`verify=False` skips the proof.

`agent.chat(text, user=...)` runs a turn on the guarded path, in this process: router -> plan ->
tool check -> firewall (the policy file agent.yaml names with `firewall:`) -> executor -> reply
(see `stalwart_agents.chat`).
"""

from __future__ import annotations

import copy
import importlib
import secrets
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from guard import engine
from rulebooks import compiler


def open_firewall(path: Path, name: str, text: str) -> Any:
    """The firewall policy `firewall: <name>` names beside agent.yaml (`path`, whose `text` is
    given), compiled; `AgentFileError` naming the key and its line when the file is missing,
    unreadable or not a valid policy. `Agent.from_file` and `stalwart verify` both ask here."""
    from stalwart_agents.chat import FirewallFileError, LocalFirewall, key_line

    line = key_line(text, "firewall")
    where = f"{path.name}:{line}" if line else path.name
    try:
        return LocalFirewall((path.parent / name).resolve())
    except FileNotFoundError:
        raise AgentFileError(f"{where}: firewall: the policy `{name}` does not exist") from None
    except OSError as exc:
        raise AgentFileError(
            f"{where}: firewall: the policy `{name}` cannot be read: {exc.strerror or exc}"
        ) from None
    except FirewallFileError as exc:
        raise AgentFileError(f"{where}: firewall: {exc}") from None


class AgentFileError(Exception):
    """An agent.yaml (or a file it names) that cannot be read; the message names file and place."""


class NotVerified(Exception):
    """The proof stops this agent, or could not be made: the agent is not built, nothing runs.

    `findings` are the findings that stop it (a rule that stops `Agent(...)`, a question of such a
    rule left undecided, an engine disagreement), empty when no proof could be made; `report` is
    the proof's whole `Report`, or None when there is none.
    """

    def __init__(self, message: str, *, findings: Sequence[Any] = (), report: Any = None) -> None:
        super().__init__(message)
        self.findings: tuple[Any, ...] = tuple(findings)
        self.report = report


def stopping_findings(report: Any) -> tuple[list[Any], list[Any]]:
    """(findings that stop the agent, findings that leave its proof unfinished) of a report.

    A finding stops the agent when its rule says so (the registry's `stops_agent`). The proof is
    unfinished when the engines disagree (QG312) or a question is undecided (QG006) that a rule
    which stops the agent asks, or about steps beyond the bounds, where any rule may fire: an
    undecided answer is never read as a clean one.
    """
    from proof.engine import BY_ID

    stops = [f for f in report.findings if f.stops_agent]
    unfinished = [
        f
        for f in report.findings
        if f.rule == "QG312"
        or (f.rule == "QG006" and (f.subject not in BY_ID or BY_ID[f.subject].stops_agent))
    ]
    return stops, unfinished


def _listed(findings: Sequence[Any], limit: int = 5) -> str:
    shown = [f"{f.rule} on {f.subject}" + (f" ({f.where})" if f.where else "") for f in findings]
    more = f" and {len(shown) - limit} more" if len(shown) > limit else ""
    return "; ".join(shown[:limit]) + more


def _same_source(module: Any, proved: Any) -> bool:
    """Whether an imported module was loaded from the very text the proof read."""
    file = getattr(module, "__file__", None)
    if not file or not isinstance(proved, str):
        return False
    try:
        return Path(file).read_text(encoding="utf-8") == proved
    except (OSError, UnicodeDecodeError):
        return False


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


def _check_settings(agent_file: engine.AgentFile, text: str, path: Path) -> None:
    """The file's `settings:` as the runtime reads them; `AgentFileError` naming the line."""
    from stalwart_agents import runtime
    from stalwart_agents.chat import key_line

    settings = agent_file.other.get("settings")
    if settings is None:
        return
    line = key_line(text, "settings")
    where = f"{path.name}:{line}" if line else path.name
    if not isinstance(settings, Mapping):
        raise AgentFileError(f"{where}: settings: must be a mapping")
    try:
        check_settings, _, _ = runtime.split_settings(settings)
        engine.ToolCheck({"tools": []}, key=b"k" * 32, settings=check_settings)
    except runtime.SettingsRefused as exc:
        raise AgentFileError(f"{where}: settings.{exc}") from None
    except engine.GuardError as exc:
        issues = getattr(exc, "issues", None) or [exc]
        shown = "; ".join(
            f"settings.{getattr(i, 'path', '')}: {getattr(i, 'message', i)}" for i in issues
        )
        raise AgentFileError(f"{where}: {shown}") from None


class Agent:
    """An agent file read on this machine (`Agent.from_file("agent.yaml", context=...)`).

    Built with `verify=True` (the default), it is proved first (see the module docstring) and
    `report` holds the proof's report; `NotVerified` is raised instead when the proof stops it.
    """

    def __init__(
        self,
        file: engine.AgentFile,
        *,
        path: Path,
        rules: Rules,
        context: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
        facts: Mapping[str, Any] | None = None,
        modules: Mapping[str, list] | None = None,
        verify: bool = True,
        source: str | None = None,
        firewall: Any = None,
        approver: Callable[[Mapping[str, Any]], bool] | None = None,
        model: Any = None,
        sandbox: Any = None,
    ) -> None:
        from stalwart_agents.extras import ChatExtras
        from stalwart_agents.models import AgentModels

        # The model each agent talks to: the file's, else `model=` (see stalwart_agents.models).
        self.models = AgentModels(file, path, model)
        # The calculation sandbox (None: the default one; False: none) and `documents:`.
        self.extras = ChatExtras(path=path, other=file.other, text=source, sandbox=sandbox)
        self.file = file
        self.firewall = firewall
        self.path = path
        self._rules = rules
        self.context = context
        self._facts = self._facts_of(facts)
        self.approver = approver
        self.modules = dict(modules or {})
        self._conversations: dict[tuple, Any] = {}
        self._client: Any = None  # the bundle client, once asked for (False: decide as before)
        self._sealed: tuple[Any, Any] | None = None  # catalogue and rulebook, sealed for bundles
        self._source = source
        self._key = secrets.token_bytes(32)  # signs this agent's histories and tokens here
        self._wiring: dict[tuple, Any] = {}
        self._routers: dict[tuple, Any] = {}
        self.report: Any = None
        if verify:
            self.report = self._verify()

    def _facts_of(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """The facts code gives (`Agent(..., facts=...)`) under the file's: the file wins."""
        file_facts = dict(self.file.data.get("facts") or {})
        if given is None:
            return file_facts
        if not isinstance(given, Mapping):
            raise AgentFileError("facts: must map each fact's name to `{from, same}`")
        merged = {**dict(given), **file_facts}
        if merged != file_facts:
            from rulebooks.compiler import validate_facts_spec

            tools = list(self.file.catalogue.tools)
            outside = tuple(self.file.catalogue.outside_tools)
            problems = validate_facts_spec(merged, reads_outside=outside, tools=tools)
            if problems:
                shown = "; ".join(str(p) for p in problems)
                raise AgentFileError(f"facts: {shown}")
        return merged

    @property
    def facts(self) -> dict[str, Any]:
        """The facts this agent reads from its tools' results (`facts:`, and `facts=` under it)."""
        return dict(self._facts)

    def _input(self) -> Any:
        """agent.yaml as read (its text, once) and what it names, with the record it runs under."""
        from stalwart_agents.cli_verify import read_agent

        given = read_agent(self.path, text=self._source, rulebook=self._rules.record)
        self._source = given.text
        return given

    def _verify(self) -> Any:
        """Prove this agent; return the report, or raise `NotVerified` (never a clean result
        from a proof that did not finish)."""
        from stalwart_agents.cli_verify import VerifyError, verify_agent_input

        try:
            given = self._input()
            report = verify_agent_input(self.path, given)
        except VerifyError as exc:
            raise NotVerified(f"the proof could not run: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - no proof is never a clean proof: refuse to run
            problems = getattr(exc, "problems", None)
            detail = "; ".join(str(p) for p in problems) if problems else str(exc)
            raise NotVerified(f"the proof could not run: {detail or type(exc).__name__}") from exc
        for name, relative in sorted(given.modules.items()):
            if name in self.modules and not _same_source(
                sys.modules.get(name), given.files.get(relative)
            ):
                raise NotVerified(
                    f"the module `{name}` this agent imported is not the source proved "
                    f"(`{relative}` beside {self.path.name}): nothing runs that was not proved",
                    report=report,
                )
        stops, unfinished = stopping_findings(report)
        if stops:
            raise NotVerified(
                f"the proof of {self.path.name} found {len(stops)} finding(s) that stop this "
                f"agent: {_listed(stops)}",
                findings=stops,
                report=report,
            )
        if unfinished:
            raise NotVerified(
                f"the proof of {self.path.name} did not finish: {_listed(unfinished)}",
                findings=unfinished,
                report=report,
            )
        return report

    def export(self) -> dict[str, Any]:
        """The agents' graph as a `qls-graph/1` document: what the proof reads, and what
        `Client().verify_graph(...)` sends as a job."""
        from stalwart_agents.cli_verify import build_agent_input

        return build_agent_input(self.path, self._input())

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        *,
        context: Any = None,
        facts: Mapping[str, Any] | None = None,
        colang_version: str | None = None,
        verify: bool = True,
        approver: Callable[[Mapping[str, Any]], bool] | None = None,
        model: Any = None,
        sandbox: Any = None,
    ) -> Agent:
        """Read an agent file. Every path it names (its tools' modules, rulebook, firewall)
        resolves against the file's own folder, wherever the program runs from."""
        path = Path(path).expanduser().resolve()
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
        _check_settings(agent_file, text, path)
        return cls(
            agent_file,
            path=path,
            rules=cls._compile(path, agent_file, colang_version),
            context=context,
            facts=facts,
            approver=approver,
            modules=modules,
            verify=verify,
            source=text,
            firewall=cls._firewall(path, agent_file, text),
            model=model,
            sandbox=sandbox,
        )

    @staticmethod
    def _firewall(path: Path, agent_file: engine.AgentFile, text: str) -> Any:
        """The firewall policy agent.yaml names, compiled (see `open_firewall`)."""
        if not agent_file.firewall:
            return None
        return open_firewall(path, agent_file.firewall, text)

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
        data = copy.deepcopy(dict(self.file.data))  # the caller's to change: never the agent's
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
        """One turn of `user`'s conversation: router, plan, tool check, firewall, executor.

        The turn is read before any model sees it; a call runs only when the tool check (with the
        checks of what was said) and then the firewall allow it, through the executor (a key per
        intent, an in-memory ledger), which calls the tool's function in the module agent.yaml
        names. Each user has a conversation of their own, with its own signed history and ledger.
        Returns the router's `Reply` (`text`, `plan`, `checks`, `ran`, `waiting`, `model_called`);
        raises `SelectorUnavailableError` where the firewall cannot answer (nothing runs).
        With `STALWART_URL`, `STALWART_DECIDE=local` and `STALWART_BUNDLE_KEY` set, a conversation
        decides from the console's signed bundle and writes its decision logs (see the README's
        "Where decisions are made"). With `STALWART_URL` alone, a conversation's first turn takes
        the language, `on_unread` and the modes of the checks of what was said from the console's Settings
        (`stalwart_agents.console_settings`); where the console cannot answer, that raises
        `SelectorUnavailableError` and the turn is not taken.
        """
        return self.conversation(user=user, agent=agent, language=language).say(text)

    def conversation(
        self, *, user: str = "anonymous", agent: str | None = None, language: str | None = None
    ) -> Any:
        """`user`'s conversation, the one `chat` takes its turns in (built at the first, then
        kept): the router, the runtime session with the file's settings (and the console's, when
        connected), the firewall as its gate, the executor over the file's modules."""
        from router import engine as router_engine
        from stalwart_agents import runtime
        from stalwart_agents.chat import ChatExecutor, console_asker, firewall_gate
        from stalwart_agents.client import ConnectedSession
        from stalwart_agents.console_settings import ConsoleSettings, console_settings
        from stalwart_agents.door_firewall import door_firewall

        key = (user, agent, language)
        conversation = self._conversations.get(key)
        if conversation is None:
            settings = dict(self.file.other.get("settings") or {})
            local = self._local_client()
            if local is not None:  # deciding here, from the console's signed bundle
                feed = local.feed(agent or "")
                found = feed.current()  # SelectorUnavailableError: no bundle, no turn
                console = ConsoleSettings(
                    language=found.settings.get("language") or "en",
                    on_unread=found.settings.get("on_unread") or "refuse",
                    said_modes=dict(found.settings.get("said") or {}),
                )
            else:
                # Connected to a console: its Settings, read once at this conversation's first turn.
                console = console_settings()
            chosen = (
                language
                or settings.get("language")
                or (console.language if console else None)
                or "en"
            )
            if console is not None and "said" not in settings and local is None:
                settings["said"] = dict(console.said_modes)
            extras = self.extras.router_options()  # the documents' index brought up to date
            router = self._routers.get((agent, chosen))
            if router is None:  # read once per agent and language; every conversation shares it
                router = router_engine.Router(
                    self.file, rulebook=self._rules.record, agent=agent, language=chosen, **extras
                )
                self._routers[(agent, chosen)] = router
            options = self.extras.conversation_options(self)
            options.setdefault("model", self.models.for_router(router))
            executor = ChatExecutor(self._run_tool, user=user)
            own = {**settings, "language": chosen}
            common = {
                "session": f"{user}-{secrets.token_hex(4)}",
                "approver": self.approver,
                "context": self.context,
                "functions": self._run_tool,
            }
            if local is not None:
                # The bundle's controls and settings (the organisation's, made stricter by the
                # file's), and the decision logs: decided here, recorded in the console's feed.
                if self._sealed is None:  # the agent's content, hashed once for every conversation
                    record = self._rules.record
                    self._sealed = (
                        runtime.seal(self.session_catalogue()),
                        runtime.seal(record) if record is not None else None,
                    )
                catalogue, rulebook = self._sealed
                session = runtime.open_from_bundle(
                    agent or "",
                    feed=feed,
                    catalogue=catalogue,
                    key=self._key,
                    rulebook=rulebook,
                    own=own,
                    sink=local.decision_log(),
                    **common,
                )
                # The organisation's published firewall gates the turn with the file's; a write
                # in a session the console holds is put to its approvers, in its queue.
                connected = ConnectedSession(session, client=local, feed=feed)
                firewall = door_firewall(self.firewall, connected)
                options["ask_console"] = console_asker(connected)
            else:
                session = runtime.RuntimeSession(self._wired(own), agent or "", **common)
                firewall = self.firewall
            conversation = router_engine.Conversation(
                router,
                executor=executor,
                runtime=session,
                context=self.context,
                gate=firewall_gate(firewall, session) if firewall is not None else None,
                gate_name="firewall",
                organisation_on_unread=console.on_unread if console else None,
                **options,
            )
            executor.bind(conversation)
            self._conversations[key] = conversation
        return conversation

    def _local_client(self) -> Any:
        """The client this agent's conversations decide through from a bundle, where the
        environment says so (`STALWART_URL`, `STALWART_DECIDE=local`, `STALWART_BUNDLE_KEY`),
        else None; one per agent, so its conversations share one bundle feed and one spool."""
        from stalwart_agents.client import Client

        if self._client is None:
            client = Client()
            self._client = client if client.remote and client.decide == "local" else False
        return self._client or None

    def session_catalogue(self) -> dict[str, Any]:
        """The catalogue this agent's own sessions run with: the file's, with its facts."""
        data = copy.deepcopy(dict(self.file.data))
        if self._facts:
            data["facts"] = dict(self._facts)
        return data

    def _wired(self, settings: Mapping[str, Any]) -> Any:
        """The runtime's wiring for this agent's catalogue, rulebook and settings (built once)."""
        from stalwart_agents import runtime

        key = runtime.content_digest(dict(settings))
        found = self._wiring.get(key)
        if found is None:
            found = runtime.wiring(
                self.session_catalogue(),
                key=self._key,
                rulebook=self._rules.record,
                settings=dict(settings),
            )
            self._wiring[key] = found
        return found

    def session(
        self,
        agent: str,
        *,
        user: str = "",
        settings: Mapping[str, Any] | None = None,
        **state: Any,
    ) -> Any:
        """A runtime session of one of this agent file's agents, in this process, with the
        file's facts and settings (what `Agent.chat` runs on, for a host driving calls itself);
        `settings` are laid over the file's."""
        from stalwart_agents import runtime
        from stalwart_agents.client import LocalSession

        settings = {**dict(self.file.other.get("settings") or {}), **dict(settings or {})}
        state.setdefault("approver", self.approver)
        state.setdefault("context", self.context)
        state.setdefault("functions", self._run_tool)
        return LocalSession(runtime.RuntimeSession(self._wired(settings), agent, **state))

    def _run_tool(self, tool: str) -> Callable[..., Any]:
        """The function that runs `tool`: the one of that name in the module that declared it."""
        for name in self.modules:
            function = getattr(sys.modules.get(name), tool, None)
            if callable(function):
                return function
        raise AgentFileError(f"no function `{tool}` in {', '.join(self.modules) or 'no module'}")
