"""A small supervisor for a Procfile: start every process, restart the ones that die, log each death.

    python -m console.supervise Procfile [--only web,worker]

`make run` runs the console this way (`scripts/Procfile.dev`: the web server, a worker, the beat),
and so can a host without systemd or a container runtime (the top-level `Procfile`). A Procfile
line is `name: command`, the command split as a shell would (no shell runs it) and `$VARIABLE`s
in it replaced from the environment, as other Procfile runners do (`$PORT`). A process that
exits is logged with its exit status and how long it ran, and started again after a delay that
doubles from `FIRST_DELAY` up to `MAX_DELAY`, back to the first once a run lasted `STEADY`
seconds. SIGINT or SIGTERM stops every process (SIGTERM to its group, SIGKILL after `GRACE`).
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

FIRST_DELAY = 1.0
MAX_DELAY = 30.0
STEADY = 60.0
GRACE = 10.0


class ProcfileError(ValueError):
    """A Procfile that cannot be run; the message names the line."""


@dataclass
class Program:
    name: str
    argv: list[str]
    process: subprocess.Popen | None = None
    started: float = 0.0
    delay: float = FIRST_DELAY
    restart_at: float | None = None
    restarts: int = 0
    history: list[str] = field(default_factory=list)


def read_procfile(path: Path) -> list[Program]:
    """The programs of a Procfile, in order; `ProcfileError` names the first bad line."""
    programs: list[Program] = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, command = line.partition(":")
        name = name.strip()
        if not sep or not name.replace("-", "").replace("_", "").isalnum():
            raise ProcfileError(f"{path}:{number}: expected `name: command`")
        try:
            argv = [os.path.expandvars(word) for word in shlex.split(command)]
        except ValueError as exc:
            raise ProcfileError(f"{path}:{number}: {exc}") from None
        if not argv:
            raise ProcfileError(f"{path}:{number}: `{name}` has no command")
        if any(p.name == name for p in programs):
            raise ProcfileError(f"{path}:{number}: `{name}` is named twice")
        programs.append(Program(name, argv))
    if not programs:
        raise ProcfileError(f"{path}: no process to run")
    return programs


def _log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    sys.stderr.write(f"[{stamp} supervise] {message}\n")
    sys.stderr.flush()


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _status(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


class Supervisor:
    def __init__(self, programs: list[Program]) -> None:
        self.programs = programs
        self.stopping = False

    def start(self, program: Program) -> None:
        try:
            program.process = subprocess.Popen(program.argv, start_new_session=True)
        except OSError as exc:
            program.process = None
            _log(f"{program.name} could not start: {exc.strerror or exc}")
            self._schedule(program)
            return
        program.started = time.monotonic()
        program.restart_at = None
        _log(f"started {program.name} (pid {program.process.pid}): {shlex.join(program.argv)}")

    def _schedule(self, program: Program) -> None:
        program.restart_at = time.monotonic() + program.delay
        program.restarts += 1
        _log(f"restarting {program.name} in {program.delay:g} s (restart {program.restarts})")
        program.delay = min(program.delay * 2, MAX_DELAY)

    def check(self) -> None:
        """Notice deaths and start what is due; called about every tenth of a second."""
        now = time.monotonic()
        for program in self.programs:
            if program.process is not None:
                code = program.process.poll()
                if code is None:
                    continue
                ran = now - program.started
                death = f"{program.name} (pid {program.process.pid}) died: {_status(code)} after {_duration(ran)}"
                program.history.append(death)
                _log(death)
                program.process = None
                if ran >= STEADY:
                    program.delay = FIRST_DELAY
                self._schedule(program)
            elif program.restart_at is not None and now >= program.restart_at:
                self.start(program)

    def stop(self) -> None:
        self.stopping = True
        running = [p for p in self.programs if p.process is not None and p.process.poll() is None]
        for program in running:
            _log(f"stopping {program.name} (pid {program.process.pid})")
            try:
                os.killpg(program.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + GRACE
        for program in running:
            try:
                program.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _log(f"{program.name} did not stop within {GRACE:g} s: killing it")
                try:
                    os.killpg(program.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                program.process.wait()

    def run(self) -> int:
        def _stop(signum: int, _frame: object) -> None:
            self.stopping = True

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        for program in self.programs:
            self.start(program)
        while not self.stopping:
            self.check()
            time.sleep(0.1)
        self.stop()
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m console.supervise", description=__doc__.splitlines()[0]
    )
    parser.add_argument("procfile", type=Path)
    parser.add_argument("--only", default="", help="comma-separated names of the processes to run")
    args = parser.parse_args(argv)
    try:
        programs = read_procfile(args.procfile)
    except (OSError, ProcfileError) as exc:
        sys.stderr.write(f"supervise: error: {exc}\n")
        return 2
    if args.only:
        wanted = {name.strip() for name in args.only.split(",") if name.strip()}
        unknown = wanted - {p.name for p in programs}
        if unknown:
            sys.stderr.write(f"supervise: error: no process named `{sorted(unknown)[0]}`\n")
            return 2
        programs = [p for p in programs if p.name in wanted]
    return Supervisor(programs).run()


if __name__ == "__main__":
    raise SystemExit(main())
