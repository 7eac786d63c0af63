"""`stalwart rules compile`: a rulebook compiled into a folder that agents read as it is."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stalwart_agents.cli import EXIT_FINDINGS, EXIT_OK, InputError

NAME = "rules"
HELP = "compile rulebooks (Colang 1.0 / 2.x, rule sheets) into record folders"


def _compile(args: argparse.Namespace) -> int:
    from rulebooks import compiler

    source = Path(args.source)
    if not source.is_file():
        raise InputError(f"cannot read `{source}`: no such file")
    try:
        record = compiler.compile_file_to_folder(
            source, Path(args.output), colang_version=args.colang_version
        )
    except compiler.RulebookUnsupported as exc:
        text = (
            source.read_text(encoding="utf-8", errors="replace")
            if source.suffix in (".co", ".csv")
            else None
        )
        for error in exc.errors:
            sys.stderr.write(error.render(text) + "\n")
        return EXIT_FINDINGS
    except compiler.RulebookError as exc:
        raise InputError(str(exc)) from exc
    except OSError as exc:
        raise InputError(f"cannot write `{args.output}`: {exc.strerror or exc}") from exc
    tools = sorted(record.get("tools", {}))
    sys.stdout.write(
        f"compiled {source.name} ({record['format']}, sha256 "
        f"{record['policy_sha256'][:12]}) into {args.output}: "
        f"{len(tools)} tool(s) governed{': ' + ', '.join(tools) if tools else ''}\n"
    )
    return EXIT_OK


def register(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    compile_ = commands.add_parser("compile", help="compile a rulebook into a record folder")
    compile_.add_argument("source", help="a .co file or a rule sheet (.csv, .xlsx)")
    compile_.add_argument("-o", "--output", required=True, help="the folder to write")
    compile_.add_argument(
        "--colang-version",
        choices=["1.0", "2.x"],
        help="the Colang version, when the file does not say",
    )
    compile_.set_defaults(handler=_compile)
