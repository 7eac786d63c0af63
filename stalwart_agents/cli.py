"""The `stalwart` command: one parser, command groups registered as modules, closed exit codes.

Exit codes are a closed set: 0 pass, 1 findings or invalid input (an invalid policy, a refused
call, an unreadable or malformed file), 2 usage error or internal error. No traceback reaches the
user: an unexpected exception is reported in one line and exits 2.

A command group is a module with `NAME`, `HELP` and `register(parser)`, where `register` adds
the group's subcommands to its `argparse` parser and sets `handler(args) -> int` on each. The
groups are listed in `GROUPS` (built-in) and `GROUP_MODULES` (dotted module paths imported on
start); adding `rules`, `verify`, `check` or `plan` later is one module and one line here.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

PROG = "stalwart"


class InputError(Exception):
    """Input the command cannot use (unreadable, not JSON, invalid); exits 1 with its message."""


class UsageError(Exception):
    """Arguments argparse accepts but that cannot be used together; exits 2 with its message."""


#: The most a command reads of one file it is given (a call, a policy, an agent file and the
#: files it names that the commands read themselves): a larger file, or a device that never ends,
#: is refused, never read into memory whole.
MAX_INPUT_BYTES = 16 * 1024 * 1024


class InputTooLarge(ValueError):
    """A file past `MAX_INPUT_BYTES`; its message says so, for the caller to name the file."""


def read_bounded(source: Path | TextIO) -> str:
    """The UTF-8 text of a file (or of a text stream such as stdin), read at most
    `MAX_INPUT_BYTES` in: `InputTooLarge` past it; `OSError` and `UnicodeDecodeError` as
    reading raises them."""
    limit = MAX_INPUT_BYTES
    if isinstance(source, Path):
        with source.open("rb") as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise InputTooLarge(f"it is larger than {limit:,} bytes")
        return data.decode("utf-8")
    text = source.read(limit + 1)
    if len(text) > limit:
        raise InputTooLarge(f"it is larger than {limit:,} bytes")
    return text


#: Modules that come with one of the package's extras, by top-level name.
EXTRA_OF_MODULE = {
    "django": "console",
    "rest_framework": "console",
    "drf_spectacular": "console",
    "celery": "console",
    "kombu": "console",
    "redis": "console",
    "psycopg": "console",
    "gunicorn": "console",
    "opentelemetry": "otel",
    "mcp": "gateway",
    "mcp_types": "gateway",
    "uvicorn": "gateway",
}


class MissingExtra(UsageError):
    """A command needs an extra that is not installed; exits 2 naming what to install."""

    def __init__(self, extra: str, module: str) -> None:
        self.extra = extra
        super().__init__(
            f"this command needs the `{extra}` extra (`{module}` is not installed): "
            f"pip install 'stalwart[{extra}]'"
        )


def missing_module_error(exc: ModuleNotFoundError) -> UsageError:
    """The one-line error for a module that is not installed: which extra, or a broken install."""
    module = (exc.name or "").partition(".")[0]
    extra = EXTRA_OF_MODULE.get(module)
    if extra is not None:
        return MissingExtra(extra, module)
    return UsageError(
        f"`{module or exc}` is not installed, though stalwart needs it: reinstall stalwart "
        f"(pip install --force-reinstall stalwart)"
    )


@dataclass(frozen=True)
class CommandGroup:
    """A group of subcommands (`stalwart <name> ...`)."""

    name: str
    help: str
    register: Callable[[argparse.ArgumentParser], None]


# --- reading input -----------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"`{name}` is not a JSON number")


def read_json(source: str, *, stdin: TextIO | None = None) -> Any:
    """The JSON in a file (or stdin for `-`); raise `InputError` naming the file and the place."""
    label = "<stdin>" if source == "-" else source
    try:
        text = read_bounded((stdin or sys.stdin) if source == "-" else Path(source))
    except InputTooLarge as exc:
        raise InputError(f"cannot read `{label}`: {exc}") from None
    except FileNotFoundError:
        raise InputError(f"cannot read `{label}`: no such file") from None
    except IsADirectoryError:
        raise InputError(f"cannot read `{label}`: it is a directory") from None
    except UnicodeDecodeError:
        raise InputError(f"cannot read `{label}`: it is not UTF-8 text") from None
    except OSError as exc:
        reason = (exc.strerror or "input/output error").lower()
        raise InputError(f"cannot read `{label}`: {reason}") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        message = exc.msg[:1].lower() + exc.msg[1:]
        raise InputError(
            f"`{label}` is not valid JSON: {message} at line {exc.lineno} column {exc.colno}"
        ) from None
    except ValueError as exc:
        raise InputError(f"`{label}` is not valid JSON: {exc}") from None
    except RecursionError:
        raise InputError(f"`{label}` is not usable JSON: it nests too deeply") from None


def _write_json(data: Any, out: TextIO) -> None:
    out.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


# --- the firewall group ------------------------------------------------------------------------


def _no_resolver(host: str) -> list[str]:
    raise OSError("resolution switched off")


def _firewall_validate(args: argparse.Namespace) -> int:
    from firewall.engine import validate_policy

    data = read_json(args.policy)
    issues = validate_policy(data)
    label = "<stdin>" if args.policy == "-" else args.policy
    if args.format == "json":
        _write_json(
            {"file": label, "valid": not issues, "issues": [i.to_dict() for i in issues]},
            sys.stdout,
        )
    elif issues:
        for issue in issues:
            sys.stdout.write(f"{label}: {issue}\n")
        count = len(issues)
        sys.stdout.write(f"{count} problem{'s' if count != 1 else ''} found\n")
    else:
        rules = data.get("rules") or []
        sys.stdout.write(f"{label}: valid ({len(rules)} rule{'s' if len(rules) != 1 else ''})\n")
    return EXIT_FINDINGS if issues else EXIT_OK


def _firewall_check(args: argparse.Namespace) -> int:
    from firewall.engine import PolicyInvalid, compile_policy

    if args.policy == "-" and args.call == "-":
        raise UsageError("only one of `--policy` and `--call` can read stdin")
    policy = read_json(args.policy)
    call = read_json(args.call)
    resolver = _no_resolver if args.no_resolve else None
    try:
        compiled = compile_policy(policy, resolver=resolver)
    except PolicyInvalid as exc:
        label = "<stdin>" if args.policy == "-" else args.policy
        for issue in exc.issues:
            sys.stderr.write(f"{label}: {issue}\n")
        raise InputError(f"`{label}` is not a valid policy") from None
    decision = compiled.evaluate(call)
    _write_json(decision.to_dict(), sys.stdout)
    return EXIT_OK if decision.decision == "allow" else EXIT_FINDINGS


def _register_firewall(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    validate = commands.add_parser(
        "validate",
        help="check a policy file and print every problem with its path",
        description="Check a policy and print every problem with its field path. "
        "Exits 0 when the policy is valid, 1 when it is not or cannot be read.",
    )
    validate.add_argument("policy", help="the policy JSON file (`-` reads stdin)")
    validate.add_argument("--format", choices=("text", "json"), default="text")
    validate.set_defaults(handler=_firewall_validate)
    check = commands.add_parser(
        "check",
        help="decide one call against a policy and print the decision as JSON",
        description="Decide a call against a policy and print the decision as JSON. "
        "Exits 0 when the call is allowed, 1 when it is refused or held for approval "
        "(or when an input is invalid).",
    )
    check.add_argument("--policy", required=True, help="the policy JSON file (`-` reads stdin)")
    check.add_argument("--call", required=True, help="the call JSON file (`-` reads stdin)")
    check.add_argument(
        "--no-resolve",
        action="store_true",
        help="do not resolve hostnames for egress lists (offline, deterministic)",
    )
    check.set_defaults(handler=_firewall_check)


#: Groups built into this module.
GROUPS: tuple[CommandGroup, ...] = (
    CommandGroup("firewall", "validate firewall policies and check calls", _register_firewall),
)

#: Modules that each define `NAME`, `HELP` and `register(parser)`: one line per new group.
GROUP_MODULES: tuple[str, ...] = (
    "stalwart_agents.cli_rules",
    "stalwart_agents.cli_check",
    "stalwart_agents.cli_plan",
    "stalwart_agents.cli_verify",
    "stalwart_agents.cli_console",
    "stalwart_agents.cli_init",
    "stalwart_agents.cli_gateway",
    "stalwart_agents.cli_spool",
)


def _groups() -> list[CommandGroup]:
    groups = list(GROUPS)
    for dotted in GROUP_MODULES:
        module = importlib.import_module(dotted)
        groups.append(CommandGroup(module.NAME, module.HELP, module.register))
    return groups


def build_parser() -> argparse.ArgumentParser:
    """The `stalwart` parser with every registered group."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Stalwart: guard LLM agents while they run and prove them before they run.",
    )
    groups = parser.add_subparsers(dest="group", metavar="<group>", required=True)
    for group in _groups():
        sub = groups.add_parser(group.name, help=group.help, description=group.help)
        group.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `stalwart` with `argv` (default: the process arguments); return the exit code."""
    try:
        from stalwart_agents import cli_console

        passed = cli_console.passthrough(list(sys.argv[1:] if argv is None else argv))
        if passed is not None:
            return passed
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse exits 2 on usage errors and 0 for --help
            return exc.code if isinstance(exc.code, int) else EXIT_USAGE
        return int(args.handler(args))
    except InputError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return EXIT_FINDINGS
    except UsageError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return EXIT_USAGE
    except ModuleNotFoundError as exc:
        sys.stderr.write(f"{PROG}: error: {missing_module_error(exc)}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return EXIT_USAGE
    except Exception as exc:  # the last line of defence: report, never show a traceback
        detail = str(exc).splitlines()[0] if str(exc) else "no detail"
        sys.stderr.write(f"{PROG}: internal error: {detail} (please report this)\n")
        return EXIT_USAGE
