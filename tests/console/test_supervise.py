"""The supervisor of `make run`: a process that dies is logged and started again, with a growing delay."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from console import supervise

ROOT = Path(__file__).resolve().parent.parent.parent


def test_a_procfile_is_read_line_by_line_and_a_bad_line_is_named(tmp_path):
    procfile = tmp_path / "Procfile"
    procfile.write_text("# the demo\nweb: python -m http.server 0\nworker: celery -A x worker\n")
    assert [(p.name, p.argv[0]) for p in supervise.read_procfile(procfile)] == [
        ("web", "python"),
        ("worker", "celery"),
    ]
    procfile.write_text("web: one\nno colon here\n")
    with pytest.raises(supervise.ProcfileError, match=r"Procfile:2: expected `name: command`"):
        supervise.read_procfile(procfile)


def test_the_delay_doubles_while_a_process_keeps_dying(monkeypatch):
    program = supervise.Program("crash", [sys.executable, "-c", "raise SystemExit(3)"])
    supervisor = supervise.Supervisor([program])
    delays = []
    for _ in range(4):
        supervisor.start(program)
        program.process.wait()
        delays.append(program.delay)
        supervisor.check()
    assert delays == [1.0, 2.0, 4.0, 8.0]
    assert program.history[0].startswith("crash (pid ") and "exit status 3" in program.history[0]


def test_a_killed_worker_is_started_again_within_seconds_and_its_death_logged(tmp_path):
    procfile = tmp_path / "Procfile"
    procfile.write_text(f"sleeper: {sys.executable} -c 'import time; time.sleep(300)'\n")
    log = tmp_path / "supervise.log"
    with open(log, "wb") as out:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "console.supervise", str(procfile)],
            cwd=ROOT,
            stderr=out,
            start_new_session=True,
        )
    try:
        first = _wait_for_pid(log, 0)
        os.kill(first, signal.SIGKILL)
        second = _wait_for_pid(log, 1)
        assert second != first
        text = log.read_text()
        assert f"sleeper (pid {first}) died: killed by SIGKILL" in text
        assert "restarting sleeper in 1 s (restart 1)" in text
    finally:
        os.killpg(supervisor.pid, signal.SIGTERM)
        supervisor.wait(timeout=20)
    assert "stopping sleeper" in log.read_text()


def _wait_for_pid(log: Path, index: int, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = re.findall(r"started sleeper \(pid (\d+)\)", log.read_text())
        if len(pids) > index:
            return int(pids[index])
        time.sleep(0.1)
    raise AssertionError(f"no start number {index + 1} in:\n{log.read_text()}")
