"""`stalwart spool`: the decision-log spools an agent's process leaves on its machine.

    stalwart spool adopt PATH          # say what the spool holds; send nothing
    stalwart spool adopt PATH --yes    # ship its records with this key (STALWART_API_KEY)

A client's shipper adopts on its own the spools another key of the same console and organisation
left (a key rotated; see `stalwart_agents.spool.Shipper`). A spool written before spools recorded
their organisation says only which key wrote it, as a digest, so whose records they are is the
operator's word: `adopt` says what it holds and ships it, with the key of `STALWART_API_KEY` to
the console at `STALWART_URL` (or `--url`), only when told `--yes`. A spool that names another
organisation or console is refused, as is one another process ships now. The key is read from
the environment only, never from the command line (where other users' `ps` would show it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from stalwart_agents.cli import EXIT_OK, InputError, UsageError

NAME = "spool"
HELP = "decision-log spools: ship one another API key left"


def register(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    adopt = commands.add_parser(
        "adopt",
        help="say what a spool holds and, with --yes, ship its records with this key",
        description="Say what a decision-log spool holds; with --yes, ship its records to the "
        "console at STALWART_URL with the key in STALWART_API_KEY. Exits 0 when nothing is left "
        "to send (or nothing was asked), 1 when the file is not a spool, is another "
        "organisation's, is shipped by another process or still holds records, 2 without a url "
        "or a key.",
    )
    adopt.add_argument("path", help="the spool's SQLite file")
    adopt.add_argument("--yes", action="store_true", help="ship its records (else only say)")
    adopt.add_argument("--url", help="the console's url (default: STALWART_URL)")
    adopt.add_argument(
        "--timeout",
        type=_seconds,
        default=60.0,
        help="how long to keep sending while the console does not take them (default 60 s)",
    )
    adopt.set_defaults(handler=_adopt)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{text}` is not a number of seconds") from None
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError("seconds: more than 0 and at most a day")
    return value


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


def _describe(path: Path, held: dict, owner: str) -> str:
    if held["digest"] == owner:
        whose = "this console and API key's"
    elif held["tenant"] is None:
        whose = (
            "another API key's, or none yet; no organisation recorded (written before spools "
            "recorded it, or its console never answered)"
        )
    else:
        whose = "another API key's; its console and organisation recorded"
    sessions = held["sessions"]
    return (
        f"{path}: {held['waiting']} records waiting, of {sessions} "
        f"session{'s' if sessions != 1 else ''}, written {_when(held['oldest'])} to "
        f"{_when(held['newest'])}; {held['parked']} parked (kept, never sent)\n"
        f"owner: {whose}\n"
    )


def _adopt(args: argparse.Namespace) -> int:
    from stalwart_agents.spool import ShipFailed, Shipper, Spool, owner_of, survey, tenant_of

    path = Path(args.path)
    if not path.exists():
        raise InputError(f"cannot read `{path}`: no such file")
    held = survey(path) if path.is_file() else None
    if held is None:
        raise InputError(f"`{path}` is not a decision-log spool")
    url = (args.url or os.environ.get("STALWART_URL", "")).rstrip("/")
    key = os.environ.get("STALWART_API_KEY", "")
    if not url or not key:
        raise UsageError(
            "needs the console's url and an API key: set STALWART_URL (or --url) and STALWART_API_KEY"
        )
    sys.stdout.write(_describe(path, held, owner_of(url, key)))
    if not args.yes:
        sys.stdout.write(
            f"nothing sent: run again with --yes to ship these {held['waiting']} records to "
            f"{url} with this key\n"
        )
        return EXIT_OK
    spool = Spool(path)
    shipper = Shipper(spool, url=url, api_key=key, lanes=1)
    try:
        try:
            answer = shipper.whoami()
        except ShipFailed as exc:
            raise UsageError(f"cannot ask the console who this key is: {exc}") from None
        organisation = answer.get("organisation", "")
        theirs = held["tenant"]
        if theirs is not None and theirs != tenant_of(url, str(answer.get("organisation_id"))):
            raise InputError(
                f"`{path}` holds the records of another organisation or console: not sent"
            )
        if not shipper.hold():
            raise InputError(f"another process ships `{path}` now: try again once it has stopped")
        sys.stdout.write(f"shipping to {url} as organisation `{organisation}`\n")
        shipper.start()
        shipper.flush(args.timeout)
    finally:
        shipper.stop()
        if not shipper.running:
            spool.close()
    left = survey(path)
    waiting = left["waiting"] if left else 0
    sent = shipper.shipped + shipper.duplicates + shipper.unreadable
    sys.stdout.write(
        f"{sent} records sent ({shipper.shipped} stored, {shipper.duplicates} already stored, "
        f"{shipper.unreadable} unreadable, kept as such)\n"
    )
    if waiting:
        reason = f": {shipper.last_error}" if shipper.last_error else ""
        raise InputError(f"{waiting} records still wait in `{path}`{reason}")
    return EXIT_OK
