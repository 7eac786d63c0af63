"""`stalwart verify`: prove an agent before it runs, and gate a build on the result.

    stalwart verify agent.yaml [--format text|json|sarif] [--depth N] [--turns N] [--strict]
                               [--overlay steps.json] [--output FILE]
    stalwart verify --explain QG011

The command reads agent.yaml and the files it names, relative to it -- the rulebook (a Colang
file, a rule sheet, or a folder `stalwart rules compile` wrote) and the source of each tools
module (`python: shop.tools`, looked for as `shop/tools.py` beside agent.yaml or above it, then
as `tools.py` beside it) -- and hands them, as text, to `proof.engine.verify_agent_file`. It never
imports or runs the tools' code. A `.json` argument is read as a whole `qls-graph/1` document
(what an SDK's `export()` writes). `--overlay` merges the team's own steps and declarations.
Every report names the depth and turns it proved to; a `--depth` below the run's own step limit
(`budget.run`, else the framework's recursion limit of 60) is a warning, and under `--strict` it
fails the gate. agent.yaml is first validated against the published JSON Schema
(`stalwart_agents/schemas/agent.schema.json`): every error, with its line, exit 1. A `firewall:` file that is missing or not a valid policy is invalid input (exit 1,
naming the key and its line), as `Agent.from_file` finds it.

Exit codes: 0 the gate passes, 1 the gate fails or the agent file is invalid input (it breaks the
schema, or does not load: a tool, agent, store or step it names does not exist, a key is written
twice, ...; each problem with its field and line), 2 a usage, configuration or internal error (a
file that cannot be read, an invalid graph document or overlay). No traceback is ever shown.

Plugged into `stalwart` as a command group: `NAME`, `HELP`, `register(parser)`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

NAME = "verify"
HELP = "prove an agent's graph, catalogue and rulebook, and gate a build on the findings"

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_ERROR = 2
FORMATS = ("text", "json", "sarif")


class VerifyError(Exception):
    """A problem that stops `stalwart verify` before it can report: exit 2, or 1 (`code`) where
    the agent file or what it names is invalid input."""

    def __init__(self, lines: Sequence[str], code: int = EXIT_ERROR) -> None:
        self.lines = list(lines)
        self.code = code
        super().__init__("; ".join(self.lines))


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{text}` is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"`{text}` must be 1 or more")
    return value


def register(parser: argparse.ArgumentParser) -> None:
    """Add `stalwart verify`'s arguments to its parser (the group's own parser)."""
    parser.description = (
        "Lint, compile, build and prove an agent, and print the report. Exits 0 when the gate "
        "passes, 1 when it fails, 2 on a usage, configuration or internal error."
    )
    parser.add_argument(
        "agent", nargs="?", help="agent.yaml (or a qls-graph/1 document ending in .json)"
    )
    parser.add_argument(
        "--explain",
        metavar="RULE",
        help="print a rule's page (what it proves, what it does not, what it reads) and exit",
    )
    parser.add_argument("--format", choices=FORMATS, default="text", help="how to print the report")
    parser.add_argument(
        "--depth", type=_positive, default=60, help="the run's step limit to prove to (default 60)"
    )
    parser.add_argument(
        "--turns", type=_positive, default=3, help="how many turns to prove over (default 3)"
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail the gate when --depth is below the run's own step limit",
    )
    parser.add_argument(
        "--overlay", help="a qls-graph/1 fragment: the team's own steps and declarations"
    )
    parser.add_argument("--output", help="write the report to this file instead of stdout")
    parser.set_defaults(handler=handle)


def _read_text(path: Path, label: str) -> str:
    from stalwart_agents.cli import InputTooLarge, read_bounded

    try:
        return read_bounded(path)
    except InputTooLarge as error:
        raise VerifyError([f"cannot read `{label}`: {error}"]) from None
    except FileNotFoundError:
        raise VerifyError([f"cannot read `{label}`: no such file"]) from None
    except IsADirectoryError:
        raise VerifyError([f"cannot read `{label}`: it is a directory"]) from None
    except UnicodeDecodeError:
        raise VerifyError([f"cannot read `{label}`: it is not UTF-8 text"]) from None
    except OSError as error:
        reason = (error.strerror or "input/output error").lower()
        raise VerifyError([f"cannot read `{label}`: {reason}"]) from None


def _read_json(path: Path, label: str) -> Any:
    text = _read_text(path, label)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        message = error.msg[:1].lower() + error.msg[1:]
        raise VerifyError(
            [f"`{label}` is not valid JSON: {message} at line {error.lineno} column {error.colno}"]
        ) from None
    except RecursionError:
        raise VerifyError([f"`{label}` is not usable JSON: it nests too deeply"]) from None


def _relative(path: Path, base: Path) -> str:
    return Path(os.path.relpath(path.resolve(), base.resolve())).as_posix()


def collect_files(
    agent_path: Path, text: str, *, record: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The files agent.yaml names, read relative to it: (files by relative path, modules).

    `record`, when given, is the record the caller already holds for the file's rulebook (an
    `Agent` proves the record it runs under); it stands for the file, which is not read.
    """
    from guard.engine import safe_yaml
    from proof.engine import module_candidates

    base = agent_path.parent
    files: dict[str, Any] = {}
    modules: dict[str, str] = {}
    try:
        data = safe_yaml.load(text)
    except yaml.YAMLError:
        return files, modules  # the engine reports the YAML problem with its line
    if not isinstance(data, dict):
        return files, modules
    rulebook = data.get("rulebook")
    if isinstance(rulebook, str) and record is not None:
        files[Path(os.path.normpath(rulebook)).as_posix()] = dict(record)
    elif isinstance(rulebook, str):
        target = base / rulebook
        key = Path(os.path.normpath(rulebook)).as_posix()
        if target.is_dir():
            from rulebooks.compiler import RulebookError, read_record_folder

            try:
                files[key] = read_record_folder(target)
            except RulebookError as error:
                raise VerifyError(
                    [f"cannot read the rulebook folder `{rulebook}`: {error}"]
                ) from None
        elif target.suffix.lower() == ".xlsx":
            try:
                files[key] = target.read_bytes()
            except OSError as error:
                reason = (error.strerror or "input/output error").lower()
                raise VerifyError([f"cannot read `{rulebook}`: {reason}"]) from None
        elif target.exists():
            files[key] = _read_text(target, rulebook)
    for entry in data.get("tools") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("python"), str):
            continue
        module = entry["python"]
        for candidate in module_candidates(module):
            found = base / candidate
            if found.is_file():
                key = _relative(found, base)
                files[key] = _read_text(found, key)
                modules[module] = key
                break
    return files, modules


@dataclass(frozen=True)
class AgentInput:
    """agent.yaml's text and the files it names, as the engine takes them."""

    text: str
    files: dict[str, Any]
    modules: dict[str, str]


def read_agent(
    path: Path, *, text: str | None = None, rulebook: Mapping[str, Any] | None = None
) -> AgentInput:
    """Read agent.yaml (unless its `text` is given) and the files it names, relative to it."""
    if text is None:
        text = _read_text(path, str(path))
    files, modules = collect_files(path, text, record=rulebook)
    return AgentInput(text, files, modules)


def agent_schema() -> dict[str, Any]:
    """The JSON Schema of agent.yaml the package publishes (`stalwart_agents/schemas/`)."""
    from importlib import resources

    source = resources.files("stalwart_agents").joinpath("schemas/agent.schema.json")
    return json.loads(source.read_text(encoding="utf-8"))


def _schema_path(parts: Sequence[Any]) -> str:
    """A JSON Schema error's path written the way the loader names fields (`tools[0].kind`)."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def schema_problems(text: str, filename: str) -> list[str]:
    """Every way agent.yaml's text breaks the published schema, each with its line; [] when it
    keeps to it, or when the text is not YAML (the engine names that problem with its line)."""
    import jsonschema

    from guard.engine import safe_yaml
    from proof.engine.locations import yaml_lines

    try:
        data = safe_yaml.load(text)
    except yaml.YAMLError:
        return []
    validator = jsonschema.Draft202012Validator(agent_schema())
    lines = yaml_lines(text)
    problems = []
    for error in sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.path]):
        field = _schema_path(error.path)
        if error.validator == "additionalProperties":
            known = set((error.schema or {}).get("properties", {}))
            for key in sorted(set(error.instance) - known, key=str):
                child = f"{field}.{key}" if field else str(key)
                line = lines.get(child)
                said = "is not a key the agent file reads"
                if key is True:  # YAML 1.1 reads a bare `on` (and `yes`) as true
                    said += " (YAML reads a bare `on` as true: an edge's `on` is `taken_on`)"
                    line = line or lines.get(f"{field}.on" if field else "on")
                where = f"{filename}:{line}" if line else filename
                problems.append(f"{where}: {child}: {said}")
            continue
        line = lines.get(field)
        where = f"{filename}:{line}" if line else filename
        message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
        problems.append(f"{where}: {field or '(the file)'}: {message}")
    return problems


def check_firewall(path: Path, text: str) -> None:
    """`firewall: <file>` must name a policy that exists and compiles: `VerifyError` (exit 1)
    naming the key and its line otherwise -- the same check `Agent.from_file` makes."""
    from guard.engine import safe_yaml
    from stalwart_agents.agent import AgentFileError, open_firewall

    try:
        data = safe_yaml.load(text)
    except yaml.YAMLError:
        return  # the engine reports the YAML problem with its line
    name = data.get("firewall") if isinstance(data, dict) else None
    if not isinstance(name, str) or not name.strip():
        return  # absent, or not a path: the agent file's own check names it
    try:
        open_firewall(path, name, text)
    except AgentFileError as error:
        raise VerifyError([str(error)], EXIT_FAILED) from None


def verify_agent_input(
    path: Path,
    given: AgentInput,
    *,
    depth: int = 60,
    turns: int = 3,
    overlay: Any = None,
    progress: Any = None,
    strict: bool = False,
) -> Any:
    """The proof's `Report` of an agent file: what `stalwart verify agent.yaml` prints and what
    `Agent(..., verify=True)` decides on. Raises the engine's `ConfigInvalid`/`GraphInvalid` for
    a file that cannot be proved."""
    from proof.engine import verify_agent_file

    return verify_agent_file(
        given.text,
        files=given.files,
        modules=given.modules,
        depth=depth,
        turns=turns,
        filename=path.name,
        overlay=overlay,
        progress=progress,
        strict=strict,
    )


def build_agent_input(path: Path, given: AgentInput) -> dict[str, Any]:
    """The `qls-graph/1` document of an agent file: the graph `verify_agent_input` proves."""
    from proof.engine import build_agent_graph

    return build_agent_graph(
        given.text, files=given.files, modules=given.modules, filename=path.name
    )


def _render(report: Any, fmt: str) -> str:
    from proof.engine import render_json, render_sarif, render_text

    if fmt == "sarif":  # each rule's helpUri is its console page, on the console when named
        return render_sarif(report, console=os.environ.get("STALWART_URL") or None)
    return {"text": render_text, "json": render_json}[fmt](report)


def explain(rule_id: str) -> int:
    """`--explain QG011`: the rule's page from the registry, as text."""
    from proof.engine import BY_ID, render_rule_text

    info = BY_ID.get(rule_id.strip().upper())
    if info is None:
        raise VerifyError([f"no rule `{rule_id}`: the rules are {', '.join(BY_ID)}"], EXIT_ERROR)
    sys.stdout.write(render_rule_text(info))
    return EXIT_PASSED


def run(args: argparse.Namespace) -> int:
    """Verify and print; raise `VerifyError` for what stops it (see `handle`)."""
    from proof.engine import ConfigInvalid, GraphInvalid, verify_graph

    if args.explain is not None:
        return explain(args.explain)
    if not args.agent:
        raise VerifyError(["name the agent file to verify (or `--explain RULE`)"])
    path = Path(args.agent)
    overlay = _read_json(Path(args.overlay), args.overlay) if args.overlay else None
    try:
        if path.suffix.lower() == ".json":
            doc = _read_json(path, args.agent)
            if overlay is not None:
                from proof.engine import merge_overlay

                doc = merge_overlay(doc, overlay)
            report = verify_graph(
                doc, depth=args.depth, turns=args.turns, file=path.name, strict=args.strict
            )
        else:
            text = _read_text(path, args.agent)
            problems = schema_problems(text, path.name)
            if problems:
                raise VerifyError(problems, EXIT_FAILED)
            given = read_agent(path, text=text)
            check_firewall(path, given.text)
            report = verify_agent_input(
                path,
                given,
                depth=args.depth,
                turns=args.turns,
                overlay=overlay,
                strict=args.strict,
            )
    except ConfigInvalid as error:
        raise VerifyError([str(p) for p in error.problems], EXIT_FAILED) from None

    except GraphInvalid as error:
        label = args.overlay if overlay is not None and path.suffix != ".json" else args.agent
        raise VerifyError([f"{label}: {p}" for p in error.problems]) from None
    output = _render(report, args.format)
    if args.output:
        try:
            Path(args.output).write_text(output, encoding="utf-8")
        except OSError as error:
            reason = (error.strerror or "input/output error").lower()
            raise VerifyError([f"cannot write `{args.output}`: {reason}"]) from None
    else:
        sys.stdout.write(output)
    return report.exit_code


def handle(args: argparse.Namespace) -> int:
    """The command's handler: its exit code, and never a traceback."""
    try:
        return run(args)
    except VerifyError as error:
        for line in error.lines:
            sys.stderr.write(f"stalwart verify: error: {line}\n")
        return error.code
    except KeyboardInterrupt:
        sys.stderr.write("stalwart verify: interrupted\n")
        return EXIT_ERROR
    except Exception as error:  # the last line of defence: report, never show a traceback
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        sys.stderr.write(f"stalwart verify: internal error: {detail} (please report this)\n")
        return EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m stalwart_agents.cli_verify agent.yaml ...`: the command on its own."""
    parser = argparse.ArgumentParser(prog="stalwart verify")
    register(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    return int(args.handler(args))


if __name__ == "__main__":
    raise SystemExit(main())
