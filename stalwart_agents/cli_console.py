"""`stalwart console`: run the console from an installed package (needs `stalwart[console]`).

    stalwart console manage migrate            # any Django management command
    stalwart console serve [gunicorn options]  # the web server, gunicorn with console.gunicorn
    stalwart console worker [celery options]   # a Celery worker
    stalwart console beat [celery options]     # the beat: outbox, reconciliation and proof sweeps

Each subcommand is the command the Procfile, the Dockerfile and the CI's fresh-environment test
run, so that what is documented is what is tested. Django, Celery and gunicorn are imported only
here, and only once a subcommand runs: without the extra, the command says which to install in
one line and exits 2. `DJANGO_SETTINGS_MODULE` defaults to the production settings, as for WSGI.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

NAME = "console"
HELP = "run the console: management commands, the web server, a worker, the beat"

PRODUCTION_SETTINGS = "console.settings.production"
#: The modules each subcommand needs, all from the `console` extra.
NEEDS = ("django", "rest_framework", "celery", "gunicorn")


def require_console_extra() -> None:
    """Raise `MissingExtra` unless the console's dependencies are installed."""
    from stalwart_agents.cli import MissingExtra

    for module in NEEDS:
        if importlib.util.find_spec(module) is None:
            raise MissingExtra("console", module)


def _environment() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", PRODUCTION_SETTINGS)


def _exec(argv: list[str]) -> int:
    """Replace this process with `python -m ...`, so signals reach the server itself."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *argv])
    return 2  # not reached: execv replaces the process or raises OSError


def _manage(arguments: list[str]) -> int:
    require_console_extra()
    _environment()
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(["stalwart console manage", *arguments])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def _serve(arguments: list[str]) -> int:
    require_console_extra()
    _environment()
    return _exec(
        [
            "-m",
            "gunicorn",
            "--config",
            "python:console.gunicorn",
            *arguments,
            "console.wsgi:application",
        ]
    )


def _worker(arguments: list[str]) -> int:
    require_console_extra()
    _environment()
    return _exec(["-m", "celery", "-A", "console", "worker", "--loglevel=INFO", *arguments])


def _beat(arguments: list[str]) -> int:
    require_console_extra()
    _environment()
    return _exec(["-m", "celery", "-A", "console", "beat", "--loglevel=INFO", *arguments])


#: Each subcommand hands the rest of the command line on untouched (argparse would read
#: `--bind` as its own option), so `stalwart.cli.main` runs these before parsing.
SUBCOMMANDS = {
    "manage": (_manage, "a Django management command (migrate, collectstatic, ...)"),
    "serve": (_serve, "serve the console under gunicorn (console/gunicorn.py's defaults)"),
    "worker": (_worker, "run a Celery worker"),
    "beat": (_beat, "run the Celery beat (the sweeps of the outbox, writes and proofs)"),
}


def passthrough(argv: list[str]) -> int | None:
    """Run `console <subcommand> ...` with its arguments as given; None when argv is not one."""
    if len(argv) < 2 or argv[0] != NAME or argv[1] not in SUBCOMMANDS:
        return None
    if argv[2:3] in (["-h"], ["--help"]):
        return None  # argparse prints the subcommand's help
    handler, _ = SUBCOMMANDS[argv[1]]
    return handler(argv[2:])


def register(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    for name, (handler, help_) in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=help_, description=help_)
        sub.add_argument("arguments", nargs=argparse.REMAINDER, help="passed on as they are")
        sub.set_defaults(handler=lambda args, run=handler: run(args.arguments))
