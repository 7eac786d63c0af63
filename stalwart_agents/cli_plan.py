"""`stalwart plan`: read one turn into a plan, as the router would, and print it as JSON.

    stalwart plan --agent agent.yaml [--agent-name desk] [--language pt-BR] \\
        [--vocabulary vocabulary.yaml] [--on-unread refuse] [--asked-again] \\
        [--today 2026-03-04] "estorne 40,00 do pedido 4411"

The agent file is read as the SDK reads it: its `tools: - python: <module>` entries are imported
from the file's folder (or its parent), its rulebook compiled (or a compiled folder read as it is),
and its `vocabulary:` file (a path beside it) loaded. The language is `--language`, else the
file's `language:`, else the vocabulary's `settings.language`, else English.

Exit codes: 0 a plan was printed (whatever its kind); 1 invalid input (an unreadable or invalid
agent file, rulebook or vocabulary, a language the router does not read); 2 usage or internal
error. No traceback is shown.

Registered as the `plan` group of `stalwart` (`NAME`, `HELP`, `register(parser)`); `register`
also accepts the `stalwart` sub-parsers object and adds its own parser there.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib
import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

NAME = "plan"
HELP = "read a turn into a plan, as the router would, and print it as JSON"


def _errors() -> tuple[type[Exception], type[Exception]]:
    from stalwart_agents.cli import InputError, UsageError

    return InputError, UsageError


def _read_text(path: Path, what: str) -> str:
    from stalwart_agents.cli import InputTooLarge, read_bounded

    input_error, _ = _errors()
    try:
        return read_bounded(path)
    except InputTooLarge as error:
        raise input_error(f"cannot read the {what} `{path}`: {error}") from None
    except FileNotFoundError:
        raise input_error(f"cannot read the {what} `{path}`: no such file") from None
    except IsADirectoryError:
        raise input_error(f"cannot read the {what} `{path}`: it is a folder") from None
    except UnicodeDecodeError:
        raise input_error(f"cannot read the {what} `{path}`: it is not UTF-8 text") from None
    except OSError as error:
        reason = (error.strerror or "input/output error").lower()
        raise input_error(f"cannot read the {what} `{path}`: {reason}") from None


@contextlib.contextmanager
def _import_path(folders: list[Path]) -> Iterator[None]:
    added = [str(folder) for folder in folders if str(folder) not in sys.path]
    sys.path[:0] = added
    try:
        yield
    finally:
        for folder in added:
            with contextlib.suppress(ValueError):
                sys.path.remove(folder)


def _modules(data: Any, folder: Path) -> dict[str, list[Mapping[str, Any]]]:
    """The tool lists of the modules an agent file names (`tools: - python: shop.tools`)."""
    input_error, _ = _errors()
    out: dict[str, list[Mapping[str, Any]]] = {}
    entries = data.get("tools") if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        return out
    with _import_path([folder, folder.parent]):
        for entry in entries:
            if not (isinstance(entry, Mapping) and isinstance(entry.get("python"), str)):
                continue
            dotted = entry["python"]
            try:
                module = importlib.import_module(dotted)
            except Exception as error:  # noqa: BLE001 - the user's module: report, do not crash
                raise input_error(f"cannot import the tools module `{dotted}`: {error}") from None
            tools = getattr(module, "TOOLS", None)
            if not isinstance(tools, list):
                raise input_error(f"the module `{dotted}` has no `TOOLS` list")
            out[dotted] = tools
    return out


def _rulebook(reference: str, folder: Path) -> dict[str, Any]:
    input_error, _ = _errors()
    from rulebooks.compiler import (
        RulebookError,
        compile_source,
        read_record_folder,
    )

    path = (folder / reference).resolve()
    try:
        if path.is_dir():
            return read_record_folder(path)
        data = path.read_bytes()
    except FileNotFoundError:
        raise input_error(f"cannot read the rulebook `{reference}`: no such file") from None
    except RulebookError as error:
        raise input_error(f"the rulebook `{reference}` cannot be held: {error}") from None
    except OSError as error:
        reason = (error.strerror or "input/output error").lower()
        raise input_error(f"cannot read the rulebook `{reference}`: {reason}") from None
    try:
        return compile_source(data, filename=path.name)
    except RulebookError as error:
        for problem in getattr(error, "errors", ()) or ():
            sys.stderr.write(f"{path.name}: {problem}\n")
        raise input_error(f"the rulebook `{reference}` does not compile") from None


def _plan(args: argparse.Namespace) -> int:
    input_error, usage_error = _errors()
    from guard.engine import CatalogueInvalid, load_agent_yaml
    from guard.engine.agent_yaml import parse_yaml
    from router.engine import Router, RouterError, VocabularyInvalid

    agent_path = Path(args.agent)
    folder = agent_path.resolve().parent
    text = _read_text(agent_path, "agent file")
    try:
        data = parse_yaml(text, filename=agent_path.name)
        agent_file = load_agent_yaml(text, modules=_modules(data, folder), filename=agent_path.name)
    except CatalogueInvalid as error:
        for issue in error.issues:
            sys.stderr.write(f"{agent_path.name}: {issue}\n")
        raise input_error(f"`{args.agent}` is not a valid agent file") from None
    rulebook = _rulebook(agent_file.rulebook, folder) if agent_file.rulebook else None
    other = agent_file.other
    vocabulary_text = None
    if args.vocabulary:
        vocabulary_text = _read_text(Path(args.vocabulary), "vocabulary")
    elif isinstance(other.get("vocabulary"), str):
        vocabulary_text = _read_text(folder / other["vocabulary"], "vocabulary")
    language = args.language or (other.get("language") if isinstance(other.get("language"), str)
                                 else None)  # fmt: skip
    today = None
    if args.today:
        try:
            today = dt.date.fromisoformat(args.today)
        except ValueError:
            raise usage_error(f"--today must be a date (YYYY-MM-DD), not `{args.today}`") from None
    try:
        router = Router(
            agent_file,
            rulebook=rulebook,
            vocabulary=vocabulary_text,
            language=language,
            on_unread=args.on_unread,
            agent=args.agent_name,
            today=today,
        )
        plan = router.plan(args.turn, asked_again=args.asked_again)
    except VocabularyInvalid as error:
        for issue in error.issues:
            sys.stderr.write(f"vocabulary: {issue}\n")
        raise input_error("the vocabulary is not valid") from None
    except RouterError as error:
        raise input_error(str(error)) from None
    sys.stdout.write(json.dumps(plan.to_dict(), indent=2, ensure_ascii=False) + "\n")
    return 0


def register(parser: Any) -> None:
    """Add `plan`'s arguments to its parser (or add the `plan` parser to `stalwart`'s)."""
    if isinstance(parser, argparse._SubParsersAction):
        parser = parser.add_parser(NAME, help=HELP, description=HELP)
    parser.description = (
        "Read one turn into a plan against an agent file's tools, rulebook and vocabulary, and "
        "print the plan as JSON. Exits 0 when a plan was printed, 1 when an input is invalid."
    )
    parser.add_argument("turn", help="the person's turn, as typed")
    parser.add_argument("--agent", required=True, help="the agent file (agent.yaml)")
    parser.add_argument("--agent-name", help="the agent whose turn it is (default: every agent)")
    parser.add_argument("--language", help="en or pt-BR (default: the file's, else English)")
    parser.add_argument("--vocabulary", help="a vocabulary file (default: the agent file's)")
    parser.add_argument(
        "--on-unread",
        choices=("refuse", "model", "ask", "answer"),
        help="the organisation's setting, for an agent that says nothing",
    )
    parser.add_argument(
        "--asked-again",
        action="store_true",
        help="the person was already asked to say it again (on_unread decides)",
    )
    parser.add_argument("--today", help="the date relative days count from (YYYY-MM-DD)")
    parser.set_defaults(handler=_plan)
