"""`stalwart init`: write a commented agent.yaml and a starter rulebook that `stalwart verify` passes.

    stalwart init --kind support-desk|erp-work-orders DIR

The starters are files of the package (`stalwart_agents/starters/<kind>/`): agent.yaml, with a
comment on each key and, on its last line, the `yaml-language-server` modeline naming the JSON
Schema the package publishes (so an editor completes and checks the file), and `policy.co`. DIR is
made if it does not exist; a file already there is never overwritten (exit 1, naming it).

Exit codes: 0 written, 1 a file is in the way or cannot be written, 2 a usage error.

Plugged into `stalwart` as a command group: `NAME`, `HELP`, `register(parser)`.
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path

NAME = "init"
HELP = "write a commented agent.yaml and a starter rulebook that `stalwart verify` passes"
KINDS = ("support-desk", "erp-work-orders")
FILES = ("agent.yaml", "policy.co")


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", required=True, choices=KINDS, help="which starter to write")
    parser.add_argument("dir", help="the folder to write agent.yaml and policy.co into")
    parser.set_defaults(handler=handle)


def schema_path() -> Path:
    """The installed JSON Schema of agent.yaml, which the written file names for editors."""
    return Path(str(resources.files("stalwart_agents").joinpath("schemas/agent.schema.json")))


def starter(kind: str) -> dict[str, str]:
    """The starter's files, by name, as written (agent.yaml ends with the schema's modeline)."""
    folder = resources.files("stalwart_agents").joinpath("starters", kind)
    out = {name: folder.joinpath(name).read_text(encoding="utf-8") for name in FILES}
    modeline = f"# yaml-language-server: $schema={schema_path().resolve().as_uri()}\n"
    out["agent.yaml"] = out["agent.yaml"].rstrip("\n") + "\n" + modeline
    return out


def handle(args: argparse.Namespace) -> int:
    target = Path(args.dir)
    files = starter(args.kind)
    in_the_way = [name for name in FILES if (target / name).exists()]
    if in_the_way:
        for name in in_the_way:
            sys.stderr.write(
                f"stalwart init: error: `{target / name}` already exists; nothing was written\n"
            )
        return 1
    try:
        target.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (target / name).write_text(text, encoding="utf-8")
    except OSError as error:
        reason = (error.strerror or "input/output error").lower()
        sys.stderr.write(f"stalwart init: error: cannot write into `{target}`: {reason}\n")
        return 1
    for name in FILES:
        sys.stdout.write(f"wrote {target / name}\n")
    sys.stdout.write(f"next: stalwart verify {target / 'agent.yaml'}\n")
    return 0
