"""`stalwart check`: one tool call decided by the runtime, in this process, as JSON.

The call file holds the call (`tool`, `arguments`, `origins`, `labels`, `compensation_of`, `plan`)
and may carry `checks`, `usage`, `token` and `cost` beside it; `--turn` gives the person's turns.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from stalwart_agents.cli import (
    EXIT_FINDINGS,
    EXIT_OK,
    InputError,
    InputTooLarge,
    _write_json,
    read_bounded,
    read_json,
)

NAME = "check"
HELP = "decide one tool call with an agent's catalogue and rulebook"


def _within_bounds(path: Path) -> None:
    """Refuse an agent file past the command's limit before anything reads it whole (a missing
    or unreadable one is named by the agent's own reader)."""
    try:
        read_bounded(path)
    except InputTooLarge as exc:
        raise InputError(f"cannot read `{path}`: {exc}") from None
    except (OSError, UnicodeDecodeError):
        return


def _run(args: argparse.Namespace) -> int:
    import sys

    from guard import engine
    from rulebooks import compiler
    from stalwart_agents import runtime
    from stalwart_agents.agent import Agent, AgentFileError

    _within_bounds(Path(args.agent))
    try:
        # Deciding one call runs nothing of the agent: proving it is `stalwart verify`'s job.
        agent = Agent.from_file(args.agent, verify=False)
    except (AgentFileError, compiler.RulebookError) as exc:
        raise InputError(str(exc)) from exc
    names = agent.agents
    name = args.agent_name or (names[0] if len(names) == 1 else None)
    if name is None:
        raise InputError(
            f"`{args.agent}` has several agents ({', '.join(names)}): name one with --agent-name"
        )
    if name not in names:
        raise InputError(f"`{name}` is not an agent of `{args.agent}` ({', '.join(names)})")
    call = read_json(args.call)
    if not isinstance(call, dict):
        raise InputError(f"`{args.call}` must hold a call: a JSON object with `tool`")
    context = read_json(args.context) if args.context else None
    if context is not None and not isinstance(context, dict):
        raise InputError(f"`{args.context}` must hold the facts: a JSON object of names")
    settings = read_json(args.settings) if args.settings else None
    if settings is not None and not isinstance(settings, dict):
        raise InputError(f"`{args.settings}` must hold settings: a JSON object")
    file_settings = dict(agent.file.other.get("settings") or {})
    key = os.environ.get("STALWART_HISTORY_KEY", "") or "stalwart-cli-" + os.urandom(16).hex()
    try:
        # The runtime every surface runs on, with the file's own catalogue: its `facts:` are read
        # from the history and win over --context, as the spec says.
        wired = runtime.wiring(
            agent.session_catalogue(),
            key=key.encode() if isinstance(key, str) else key,
            rulebook=agent.rules().record,
            settings={**file_settings, **(settings or {})},
        )
    except (engine.GuardError, runtime.SettingsRefused) as exc:
        raise InputError(str(exc)) from exc
    check = wired.check
    history = check.new_history("cli")
    head = None
    if args.history_head and not args.history:
        raise InputError(
            "--history-head names the head of a signed history: give it with --history"
        )
    if args.history:
        past = read_json(args.history)
        if isinstance(past, list):
            # The calls that ran, in order, as the host recorded them: signed here.
            for index, entry in enumerate(past):
                if not isinstance(entry, dict) or "tool" not in entry:
                    raise InputError(
                        f"`{args.history}`[{index}]: an entry is `{{tool, arguments, result}}`"
                    )
                done = {"agent": name, **{k: v for k, v in entry.items() if k != "result"}}
                try:
                    check.record(history, done, entry.get("result"))
                except (engine.GuardError, engine.MalformedCall) as exc:
                    raise InputError(f"`{args.history}`[{index}]: {exc}") from exc
            head = history.head
        elif not args.history_head:
            # A signed history is only ever verified against the head it must end at: without it,
            # one cut short, emptied or taken from another session would pass as this one.
            raise InputError(
                f"`{args.history}` is a signed history: give the head it must end at with "
                "--history-head (`{session, length, mac}`, as the history's keeper holds it)"
            )
        else:
            head = read_json(args.history_head)
            if not isinstance(head, dict):
                raise InputError(
                    f"`{args.history_head}` must hold a head: `{{session, length, mac}}`"
                )
            history = past  # verified with STALWART_HISTORY_KEY against the head, by the check
    else:
        head = history.head
    call.setdefault("agent", name)
    checks = call.pop("checks", None)
    usage = call.pop("usage", None)
    token = call.pop("token", None)
    cost = call.pop("cost", None)
    try:
        decision = wired.decide(
            call,
            history=history,
            head=head,
            turns=list(args.turn or []),
            context=context,
            token=token,
            checks=checks,
            usage=usage,
            cost=cost,
        )
    except engine.UnknownCheck as exc:
        raise InputError(f"`{args.call}`: checks: {exc}") from exc
    _write_json(decision.to_dict(), sys.stdout)
    return EXIT_OK if decision.decision != "refuse" else EXIT_FINDINGS


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", required=True, help="the agent.yaml")
    parser.add_argument("--agent-name", help="the agent of the file that makes the call")
    parser.add_argument("--call", required=True, help="the call's JSON file (`-` for stdin)")
    parser.add_argument(
        "--history",
        help="the calls that ran before, as a JSON list, or a signed "
        "history (verified with STALWART_HISTORY_KEY against --history-head)",
    )
    parser.add_argument(
        "--history-head",
        help="the head a signed --history must end at, as a JSON object "
        "`{session, length, mac}` (a file, or `-` for stdin)",
    )
    parser.add_argument(
        "--context",
        help="the facts your code reports, as a JSON object of names (the file's `facts:`, "
        "read from --history, win over them)",
    )
    parser.add_argument(
        "--turn",
        action="append",
        help="a turn the person said, oldest first (repeat it): S1, S2, the confirmation "
        "reading and the origin of values read them",
    )
    parser.add_argument(
        "--settings",
        help="settings over the file's `settings:` (taint_policy, said, label_trust, checks, ...), "
        "as a JSON object",
    )
    parser.set_defaults(handler=_run)
