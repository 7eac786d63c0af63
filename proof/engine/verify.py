"""`stalwart verify` as a function: an agent file and the files it names, to a report.

`verify_agent_file(text, files=..., depth=60, turns=3, strict=False)` reads agent.yaml's text; the files it
names come in `files`, as text, keyed by their path relative to agent.yaml (the CLI reads them):
the rulebook (`policy.co`, a rule sheet, or an already compiled record as a mapping, e.g. read
from a `stalwart rules compile` folder) and each tools module (`python: shop.tools`), found by
`modules={"shop.tools": "tools.py"}` when given, else by `module_candidates`. Nothing is run: a
module's `TOOLS` is read from its source (`pysource`).

It lints the catalogue (the runtime's own lints), runs the code checks over every file given,
compiles the rulebook (a rulebook that does not compile is a QG005 finding, not an error),
builds the graph (`build`), merges the overlay of the team's own steps and declarations when one
is given, proves it (`prove`, cached by digest), hunts (`hunt`) and returns the `Report`. The report names the run's step limit -- `budget.run`,
else the framework's recursion limit -- so that a depth below it is told, and, when `strict`,
fails the gate.

An agent file that cannot be read -- malformed YAML, a catalogue that does not load, a file it
names that was not given, a module whose `TOOLS` cannot be read without running it -- raises
`ConfigInvalid` with every problem, each naming the file, line and field.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from guard.engine import CatalogueInvalid, lint_catalogue, load_agent_yaml, load_settings, safe_yaml
from guard.engine.agent_yaml import parse_yaml
from guard.engine.checks import NAMES, switched_on
from guard.engine.errors import SettingsInvalid
from rulebooks.compiler import RulebookUnsupported, compile_source, record_problems

from .advisories import ADVISORY_KEYS, SHIPPED, Advisory, read_advisories
from .build import AgentSources, build_graph, merge_overlay, merge_team, read_budget, read_team
from .codechecks import check_files
from .errors import ConfigInvalid, GraphInvalid, Problem, SourceUnreadable
from .graphdoc import Graph, load_graph, remember_catalogue
from .hunt import hunt
from .locations import Location, yaml_lines
from .prove import (
    DEFAULT_CACHE,
    DEFAULT_DEPTH,
    DEFAULT_MAX_STATES,
    DEFAULT_TURNS,
    RECURSION_LIMIT,
    Progress,
    ProofCache,
    prove,
)
from .pysource import read_tools
from .report import Report, RulebookState

FileContent = str | bytes | Mapping[str, Any]


def module_candidates(module: str, *, levels: int = 3) -> list[str]:
    """Where a `python: <module>` may be, relative to agent.yaml, in the order tried."""
    parts = module.split(".")
    relative = "/".join(parts)
    out: list[str] = []
    for up in range(levels + 1):
        prefix = "../" * up
        out.append(f"{prefix}{relative}.py")
        out.append(f"{prefix}{relative}/__init__.py")
    out.append(f"{parts[-1]}.py")
    return out


def _normal(path: str) -> str:
    return posixpath.normpath(path.replace("\\", "/"))


def _lookup(files: Mapping[str, FileContent], path: str) -> tuple[str, FileContent] | None:
    if path in files:
        return _normal(path), files[path]
    normal = _normal(path)
    for key, value in files.items():
        if _normal(key) == normal:
            return normal, value
    return None


def _text(content: FileContent) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, bytes):
        try:
            return content.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def _sha(content: FileContent) -> str | None:
    if isinstance(content, str):
        return hashlib.sha256(content.encode("utf-8")).hexdigest()
    if isinstance(content, bytes):
        return hashlib.sha256(content).hexdigest()
    return None


class _Reader:
    """Reads an agent file and what it names into `AgentSources`, collecting every problem."""

    def __init__(self, text: str, files: Mapping[str, FileContent], filename: str, modules):
        self.text = text
        self.files = files
        self.filename = filename
        self.modules = dict(modules or {})
        self.problems: list[Problem] = []
        self.lines: dict[str, int] = {}
        self.used: dict[str, FileContent] = {}

    def problem(self, field: str, message: str) -> None:
        if field.startswith(f"{self.filename}:"):  # already placed (the YAML reader's own line)
            self.problems.append(Problem(field, message))
            return
        line = self.lines.get(field)
        where = f"{self.filename}:{line}" if line else self.filename
        self.problems.append(Problem(f"{where}: {field}" if field else where, message))

    def read(self) -> tuple[AgentSources, dict[str, FileContent]]:
        try:
            # A fast first read for the settings and the modules; `load_agent_yaml` reads the file
            # again strictly (a key written twice is refused there, with its line).
            data = safe_yaml.load(self.text)
        except yaml.YAMLError:
            try:
                parse_yaml(self.text, filename=self.filename)
            except CatalogueInvalid as error:
                raise ConfigInvalid([Problem(i.path, i.message) for i in error.issues]) from None
            raise ConfigInvalid([Problem(self.filename, "is not valid YAML")]) from None
        self.lines = yaml_lines(self.text)
        if not isinstance(data, Mapping):
            raise ConfigInvalid(
                [Problem(self.filename, "must be a mapping with `agents` and `tools`")]
            )
        settings_raw = data.get("settings")
        try:
            settings = load_settings(settings_raw, known_checks=NAMES)
        except SettingsInvalid as error:
            for issue in error.issues:
                self.problem(f"settings.{issue.path}" if issue.path else "settings", issue.message)
            settings = load_settings(None, known_checks=NAMES)
        given, defined = self._modules(data)
        try:
            agent_file = load_agent_yaml(
                self.text,
                modules=given,
                tool_kinds=settings.tool_kinds,
                infer=settings.infer,
                filename=self.filename,
            )
        except CatalogueInvalid as error:
            for issue in error.issues:
                self.problem(issue.path, issue.message)
            raise ConfigInvalid(self.problems) from None
        for index, entry in enumerate(data.get("tools") or []):
            if isinstance(entry, Mapping) and "name" in entry:
                line = self.lines.get(f"tools[{index}]")
                if line is not None:
                    defined.setdefault(str(entry["name"]), Location(self.filename, line))
        if not agent_file.catalogue.agents:
            self.problem("agents", "an agent file names at least one agent")
        rulebook = self._rulebook(agent_file.rulebook)
        budget, problems = read_budget(agent_file.other.get("budget"))
        for problem in problems:
            self.problem(problem.path, problem.message)
        team, problems = read_team(
            agent_file.other.get("steps"), agent_file.other.get("edges"), self.where
        )
        for problem in problems:
            self.problem(problem.path, problem.message)
        advisories = self._advisories(agent_file.other.get("advisories"))
        if self.problems:
            raise ConfigInvalid(self.problems)
        sources = [{"file": self.filename, "sha256": _sha(self.text) or ""}]
        for path, content in sorted(self.used.items()):
            digest = _sha(content)
            if digest is not None:
                sources.append({"file": path, "sha256": digest})
        return (
            AgentSources(
                filename=self.filename,
                agent_file=agent_file,
                lines=self.lines,
                settings=settings,
                settings_raw=settings_raw if isinstance(settings_raw, Mapping) else None,
                tool_defined=defined,
                rulebook=rulebook,
                budget=budget,
                sources=sources,
                team=team,
                advisories=tuple(advisories),
            ),
            self.used,
        )

    def where(self, path: str) -> Location | None:
        line = self.lines.get(path)
        return Location(self.filename, line) if line is not None else None

    def _advisories(self, raw: Any) -> list[Advisory]:
        """agent.yaml's `advisories:`: rails of your own to report (QG022), as the shipped ones."""
        if raw is None:
            return []
        if not isinstance(raw, list):
            self.problem("advisories", "must be a list of `{id, rails, imports, summary, instead}`")
            return []
        found, problems = read_advisories(raw)
        for index, item in enumerate(raw):
            if isinstance(item, Mapping):
                for key in sorted(set(item) - ADVISORY_KEYS, key=str):
                    self.problem(f"advisories[{index}].{key}", "is not a field of an advisory")
                if not item.get("rails") and not item.get("imports"):
                    self.problem(f"advisories[{index}]", "names no `rails` and no `imports`")
        for problem in problems:
            self.problem(problem.path, problem.message)
        return found

    def _modules(self, data: Mapping[str, Any]):
        given: dict[str, list[Any]] = {}
        defined: dict[str, Location] = {}
        raw_tools = data.get("tools") or []
        if not isinstance(raw_tools, list):
            return given, defined
        for index, entry in enumerate(raw_tools):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("python"), str):
                continue
            module = entry["python"]
            found = None
            if module in self.modules:
                found = _lookup(self.files, self.modules[module])
            else:
                for candidate in module_candidates(module):
                    found = _lookup(self.files, candidate)
                    if found is not None:
                        break
            if found is None:
                self.problem(
                    f"tools[{index}].python",
                    f"the source of the module `{module}` was not given (looked for "
                    f"`{module_candidates(module)[0]}` and beside agent.yaml)",
                )
                continue
            path, content = found
            text = _text(content)
            if text is None:
                self.problem(f"tools[{index}].python", f"`{path}` is not UTF-8 text")
                continue
            try:
                read = read_tools(text, path=path)
            except SourceUnreadable as error:
                self.problem(f"tools[{index}].python", str(error))
                continue
            self.used[path] = content
            given[module] = list(read.tools)
            for tool, line in zip(read.tools, read.lines, strict=True):
                if isinstance(tool, Mapping) and isinstance(tool.get("name"), str):
                    defined.setdefault(tool["name"], Location(path, line))
        return given, defined

    def _rulebook(self, declared: str | None) -> dict[str, Any] | None:
        if declared is None:
            return None
        found = _lookup(self.files, declared)
        if found is None:
            self.problem("rulebook", f"the rulebook `{declared}` was not given")
            return None
        path, content = found
        if not isinstance(content, (str, bytes, Mapping)):
            self.problem("rulebook", f"the rulebook `{declared}` must be given as text or a record")
            return None
        self.used[path] = content
        if isinstance(content, Mapping):
            problems = record_problems(content)
            if problems:
                return {
                    "file": path,
                    "record": None,
                    "errors": [{"line": None, "message": p} for p in problems],
                }
            return {"file": path, "record": dict(content), "errors": []}
        try:
            record = compile_source(content, filename=path)
        except RulebookUnsupported as error:
            return {
                "file": path,
                "record": None,
                "errors": [{"line": e.line, "message": e.message} for e in error.errors],
            }
        return {"file": path, "record": record, "errors": []}


def load_agent_sources(
    agent_yaml_text: str,
    *,
    files: Mapping[str, FileContent],
    filename: str = "agent.yaml",
    modules: Mapping[str, str] | None = None,
) -> tuple[AgentSources, dict[str, FileContent]]:
    """Read an agent file and the files it names; raise `ConfigInvalid` with every problem."""
    return _Reader(agent_yaml_text, files, filename, modules).read()


def build_agent_graph(
    agent_yaml_text: str,
    *,
    files: Mapping[str, FileContent],
    filename: str = "agent.yaml",
    modules: Mapping[str, str] | None = None,
    overlay: Any = None,
) -> dict[str, Any]:
    """The `qls-graph/1` document of an agent file (with the overlay merged, if given)."""
    sources, _ = load_agent_sources(
        agent_yaml_text, files=files, filename=filename, modules=modules
    )
    doc = _with_team(build_graph(sources), sources)
    return merge_overlay(doc, overlay) if overlay is not None else doc


def _with_team(doc: dict[str, Any], sources: AgentSources) -> dict[str, Any]:
    """The built graph with agent.yaml's `steps:` and `edges:` in it, checked as the graph is:
    a problem names the file's field and line (`ConfigInvalid`), never the document's path."""
    if sources.team is None:
        return doc
    lines = sources.lines

    def where(path: str) -> Location | None:
        line = lines.get(path)
        return Location(sources.filename, line) if line is not None else None

    merged = merge_team(doc, sources.team, where)
    try:
        load_graph(merged)
    except GraphInvalid as error:
        raise ConfigInvalid([_team_problem(p, merged, sources) for p in error.problems]) from None
    return merged


#: The agent.yaml fields that become an edge of the graph: a step's route or `from`, an `edges:` item.
_TEAM_EDGE = re.compile(r"^(steps\.[^.]+\.(routes|from)\[\d+\]|edges\[\d+\]|steps\.[^.]+)$")


def _team_problem(problem: Problem, doc: Mapping[str, Any], sources: AgentSources) -> Problem:
    """A problem the graph's check found in what agent.yaml's `steps:`/`edges:` added, named by
    the line it was written on (each added step and edge carries its `at`)."""
    match = re.match(r"^\$\.(nodes|edges)\[(\d+)\](.*)$", problem.path)
    if match is None:
        return Problem(f"{sources.filename}: {problem.path}", problem.message)
    items = doc.get(match.group(1)) or []
    index = int(match.group(2))
    at = (
        items[index].get("at") if index < len(items) and isinstance(items[index], Mapping) else None
    )
    line = at[0]["line"] if at else None
    paths = [p for p, n in sources.lines.items() if n == line and _TEAM_EDGE.match(p)]
    field = min(paths, key=len) if paths else match.group(1)
    where = f"{sources.filename}:{line}" if line else sources.filename
    return Problem(f"{where}: {field}{match.group(3)}", problem.message)


def _advisories(extra: Iterable[Any] | None) -> list[Advisory]:
    if not extra:
        return list(SHIPPED)
    found, problems = read_advisories(extra)
    if problems:
        raise ConfigInvalid(problems)
    return [*SHIPPED, *found]


def _report(
    graph: Graph,
    *,
    file: str,
    lints: Sequence[Any],
    code_files: Mapping[str, FileContent],
    depth: int,
    turns: int,
    advisories: Sequence[Advisory],
    max_states: int,
    cache: ProofCache | None,
    progress: Progress | None = None,
    strict: bool = False,
) -> Report:
    result = prove(
        graph, depth=depth, turns=turns, max_states=max_states, cache=cache, progress=progress
    )
    hunted = hunt(result, advisories)
    rulebook = None
    if graph.rulebook is not None:
        record = graph.rulebook.record
        rulebook = RulebookState(
            file=graph.rulebook.file,
            compiled=record is not None,
            enforced="your_rules" in switched_on(graph.settings.checks),
            format=record.get("format") if record else None,
        )
    texts = {path: c for path, c in code_files.items() if isinstance(c, (str, bytes))}
    return Report(
        file=file,
        rulebook=rulebook,
        lints=list(lints),
        code=check_files(texts),
        findings=hunted.findings,
        nothing_to_read=hunted.nothing_to_read,
        depth=result.depth,
        turns=result.turns,
        graph_digest=graph.digest,
        nodes=len(graph.nodes),
        edges=len(graph.edges),
        answers=result.counts(),
        engines={**result.stats, "agree": not result.disagreements},
        step_limit=graph.budget_run if graph.budget_run is not None else RECURSION_LIMIT,
        strict=strict,
    )


def verify_agent_file(
    agent_yaml_text: str,
    *,
    files: Mapping[str, FileContent],
    depth: int = DEFAULT_DEPTH,
    turns: int = DEFAULT_TURNS,
    filename: str = "agent.yaml",
    modules: Mapping[str, str] | None = None,
    overlay: Any = None,
    advisories: Iterable[Any] | None = None,
    max_states: int = DEFAULT_MAX_STATES,
    cache: ProofCache | None = DEFAULT_CACHE,
    progress: Progress | None = None,
    strict: bool = False,
) -> Report:
    """Lint, compile, build, prove and hunt an agent file (see the module docstring)."""
    sources, used = load_agent_sources(
        agent_yaml_text, files=files, filename=filename, modules=modules
    )
    known = [*_advisories(advisories), *sources.advisories]
    doc = _with_team(build_graph(sources), sources)
    if overlay is not None:
        doc = merge_overlay(doc, overlay)
    remember_catalogue(doc["catalogue"], sources.settings, sources.catalogue)
    graph = load_graph(doc)
    return _report(
        graph,
        file=filename,
        lints=lint_catalogue(sources.catalogue),
        code_files={filename: agent_yaml_text, **used},
        depth=depth,
        turns=turns,
        advisories=known,
        max_states=max_states,
        cache=cache,
        progress=progress,
        strict=strict,
    )


def verify_graph(
    doc: Any,
    *,
    depth: int = DEFAULT_DEPTH,
    turns: int = DEFAULT_TURNS,
    files: Mapping[str, FileContent] | None = None,
    file: str | None = None,
    advisories: Iterable[Any] | None = None,
    max_states: int = DEFAULT_MAX_STATES,
    cache: ProofCache | None = DEFAULT_CACHE,
    progress: Progress | None = None,
    strict: bool = False,
) -> Report:
    """Prove and hunt a `qls-graph/1` document given whole (`GraphInvalid` when it is not one).

    `files` are the tools' sources and other files for the code checks, when the caller has them;
    `progress` is told how many questions are answered (see `prove`).
    """
    graph = load_graph(doc)
    return _report(
        graph,
        file=file or graph.name,
        lints=lint_catalogue(graph.catalogue),
        code_files=dict(files or {}),
        depth=depth,
        turns=turns,
        advisories=_advisories(advisories),
        max_states=max_states,
        cache=cache,
        progress=progress,
        strict=strict,
    )
