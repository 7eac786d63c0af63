"""Soak of the embedded broker: N writers and remote control against one real worker, for minutes.

    python scripts/soak_broker.py [--writers 4] [--duration 600] [--transport embedded|filesystem]

Each writer is its own process sending numbered tasks as fast as `--interval` lets it; another
process asks every worker for a remote-control ping in a loop (the pidbox fanout); one real
`celery worker` (prefork, two children, gossip and mingle on) takes the tasks and appends each
task's number to a file. At the end every number sent must have arrived exactly once and the
worker must never have died (a death is logged, counted and the worker started again, so the run
goes on). Exit 0 only then. `--transport filesystem` runs kombu's filesystem transport, the
embedded broker before console/broker.py, to show the crash it had. `make soak-broker` runs it.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from celery import Celery

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DIR = Path(os.environ.get("STALWART_SOAK_DIR") or tempfile.gettempdir())
TRANSPORT = os.environ.get("STALWART_SOAK_TRANSPORT", "embedded")


def _app() -> Celery:
    # No Django: the soak measures the broker alone (celery would set Django up if it saw it).
    app = Celery("soak", fixups=[])
    if TRANSPORT == "filesystem":
        for sub in ("queue", "processed", "control"):
            (DIR / "broker" / sub).mkdir(parents=True, exist_ok=True)
        app.conf.broker_url = "filesystem://localhost/"
        app.conf.broker_transport_options = {
            "data_folder_in": str(DIR / "broker" / "queue"),
            "data_folder_out": str(DIR / "broker" / "queue"),
            "processed_folder": str(DIR / "broker" / "processed"),
            "control_folder": str(DIR / "broker" / "control"),
            "store_processed": False,
        }
    else:
        from console.broker import TRANSPORT as EMBEDDED
        from console.broker import broker_url

        app.conf.broker_url = broker_url(DIR)
        app.conf.broker_transport = EMBEDDED
    # The console's own delivery settings (console/settings/base.py).
    app.conf.task_acks_late = True
    app.conf.task_reject_on_worker_lost = True
    app.conf.worker_prefetch_multiplier = 1
    app.conf.task_ignore_result = True
    app.conf.broker_connection_retry_on_startup = True
    return app


app = _app()


@app.task(name="soak.record")
def record(writer: int, number: int) -> None:
    # One write(2) of a short line with O_APPEND: lines from several children never interleave.
    with open(DIR / "received.txt", "a", encoding="ascii") as out:
        out.write(f"{writer} {number}\n")


def _writer(writer: int, until: float, interval: float) -> None:
    sent = 0
    with open(DIR / f"sent-{writer}.txt", "w", encoding="ascii") as log:
        while time.monotonic() < until:
            record.apply_async(args=[writer, sent], retry=True)
            log.write(f"{writer} {sent}\n")
            log.flush()
            sent += 1
            if interval:
                time.sleep(interval)


def _remote_control(until: float) -> None:
    while time.monotonic() < until:
        try:
            app.control.ping(timeout=0.5)
        except Exception as exc:  # noqa: BLE001 - counted by the worker's survival, not here
            print(f"remote control: {type(exc).__name__}: {exc}", flush=True)
            time.sleep(0.5)


def _start_worker(log: Path) -> subprocess.Popen:
    # The folder and the transport are in the environment main() set.
    env = dict(os.environ)
    with open(log, "ab") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "scripts.soak_broker",
                "worker",
                "--loglevel=WARNING",
                "--concurrency=2",
                "--hostname",
                f"soak-{os.getpid()}@%h",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _lines(paths: list[Path]) -> list[tuple[int, int]]:
    rows = []
    for path in paths:
        if path.exists():
            for line in path.read_text(encoding="ascii").splitlines():
                writer, number = line.split()
                rows.append((int(writer), int(number)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=6)
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of writing")
    parser.add_argument(
        "--interval", type=float, default=0.5, help="seconds between a writer's tasks"
    )
    parser.add_argument(
        "--drain", type=float, default=60.0, help="seconds to wait for the worker to make progress"
    )
    parser.add_argument("--transport", choices=("embedded", "filesystem"), default="embedded")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="stalwart-soak-"))
    os.environ["STALWART_SOAK_DIR"] = str(folder)
    os.environ["STALWART_SOAK_TRANSPORT"] = args.transport
    log = folder / "worker.log"
    print(
        f"soak: {args.writers} writers, {args.duration:g} s, {args.transport} broker, in {folder}"
    )
    # Every process of the run starts fresh (spawn) and reads the folder from the environment.
    ctx = multiprocessing.get_context("spawn")
    worker = _start_worker(log)
    deaths: list[str] = []
    started = time.monotonic()
    until = started + args.duration
    procs = [
        ctx.Process(target=_run_writer, args=(w, until, args.interval)) for w in range(args.writers)
    ]
    procs.append(ctx.Process(target=_run_remote_control, args=(until,)))
    for proc in procs:
        proc.start()
    sent: list[tuple[int, int]] = []
    received: list[tuple[int, int]] = []
    drain_until = None
    while True:
        time.sleep(1.0)
        if worker.poll() is not None:
            deaths.append(f"{time.monotonic() - started:.0f} s: exit {worker.returncode}")
            print(f"soak: the worker died ({deaths[-1]}); starting it again", flush=True)
            worker = _start_worker(log)
        if time.monotonic() >= until + 10:
            # A remote-control call the broker never answers must not hold the run open.
            for proc in procs:
                if proc.is_alive():
                    proc.terminate()
        if time.monotonic() >= until and all(not p.is_alive() for p in procs):
            sent = _lines(sorted(folder.glob("sent-*.txt")))
            count = len(received)
            received = _lines([folder / "received.txt"])
            if drain_until is None or len(received) > count:
                # The worker may still be working through a backlog: wait while it progresses.
                drain_until = time.monotonic() + args.drain
            if set(sent) <= set(received) or time.monotonic() > drain_until:
                break
    elapsed = time.monotonic() - started
    os.killpg(worker.pid, signal.SIGTERM)
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
    lost = set(sent) - set(received)
    duplicates = len(received) - len(set(received))
    crashes = [
        line
        for line in log.read_text(errors="replace").splitlines()
        if "Unrecoverable error" in line
    ]
    print(
        f"soak: sent {len(sent)}, received {len(set(received))}, lost {len(lost)}, "
        f"duplicates {duplicates}, worker deaths {len(deaths)} in {elapsed:.0f} s "
        f"({len(sent) / max(args.duration, 1):.0f} tasks/s written)"
    )
    for line in crashes[:5]:
        print(f"soak: worker log: {line.strip()}")
    ok = not lost and not deaths and not duplicates
    print("soak: passed" if ok else "soak: FAILED")
    return 0 if ok else 1


def _run_writer(writer: int, until: float, interval: float) -> None:
    _writer(writer, until, interval)


def _run_remote_control(until: float) -> None:
    _remote_control(until)


if __name__ == "__main__":
    raise SystemExit(main())
