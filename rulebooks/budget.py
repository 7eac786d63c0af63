"""Compiling an upload on the server inside a budget of time and memory, in a child process.

The compiler's own limits (`rulebooks.compiler.limits`) bound what it reads; this bounds what
reading costs, whatever is left: an upload is compiled in a forked child whose address space may
grow by at most `COMPILE_MEMORY_BYTES` (`RLIMIT_AS`) and whose CPU time is at most
`COMPILE_CPU_SECONDS` (`RLIMIT_CPU`), and which the parent stops after `COMPILE_WALL_SECONDS`.
A child over its budget dies or is killed; the request gets a `rulebook_too_large` refusal and
the web worker that asked carries on. A fork is used rather than a fresh interpreter because the
child needs the modules already loaded and nothing else: it touches no database connection, runs
no exit handler (`os._exit`), and hands back the record or the compile errors as JSON on a pipe.

Where `fork` does not exist the compile runs in this process, bounded by the compiler's limits.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import time
from typing import Any

import openpyxl  # noqa: F401 - loaded before any fork, so the child never takes the import lock

from rulebooks import compiler

COMPILE_MEMORY_BYTES = 512 * 1024 * 1024
COMPILE_CPU_SECONDS = 10
COMPILE_WALL_SECONDS = 15

_EXIT_MEMORY = 3


class BudgetExceeded(compiler.RulebookError):
    """The compile went over its time or memory budget; the message says which."""

    code = compiler.TOO_LARGE


def _address_space() -> int:
    """This process's virtual size in bytes (what `RLIMIT_AS` counts)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def _child(write: int, data: bytes, filename: str, colang_version: str | None) -> None:
    try:
        try:
            limit = _address_space() + COMPILE_MEMORY_BYTES
        except OSError:
            limit = resource.RLIM_INFINITY
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CPU, (COMPILE_CPU_SECONDS, COMPILE_CPU_SECONDS + 1))
        try:
            answer: dict[str, Any] = {
                "record": compiler.compile_source(
                    data, filename=filename, colang_version=colang_version
                )
            }
        except compiler.RulebookUnsupported as exc:
            answer = {"errors": exc.to_list()}
        except compiler.RulebookError as exc:
            answer = {"error": str(exc), "code": getattr(exc, "code", compiler.UNSUPPORTED)}
        payload = json.dumps(answer).encode("utf-8")
        with os.fdopen(write, "wb") as pipe:
            pipe.write(payload)
    except MemoryError:
        os._exit(_EXIT_MEMORY)
    except BaseException:  # noqa: BLE001 - the child reports by its exit code, never a traceback
        os._exit(1)
    os._exit(0)


def _read_all(read: int, pid: int, deadline: float) -> bytes | None:
    """What the child wrote, or None when it was still writing at the deadline."""
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([read], [], [], left)
        if not ready:
            return None
        chunk = os.read(read, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _outcome(status: int) -> str:
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == _EXIT_MEMORY:
        return f"it needed more than {COMPILE_MEMORY_BYTES // (1024 * 1024)} MB of memory"
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
        return f"it needed more than {COMPILE_CPU_SECONDS} seconds of CPU"
    return f"it stopped with status {status}"


def compile_within_budget(
    data: bytes, *, filename: str, colang_version: str | None = None
) -> dict[str, Any]:
    """The record of `data`, or the compiler's `RulebookUnsupported`; `BudgetExceeded` when
    compiling went over its time or memory budget."""
    if not hasattr(os, "fork"):
        return compiler.compile_source(data, filename=filename, colang_version=colang_version)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compile, answer, exit
        os.close(read)
        _child(write, data, filename, colang_version)
    os.close(write)
    try:
        payload = _read_all(read, pid, time.monotonic() + COMPILE_WALL_SECONDS)
    finally:
        os.close(read)
    if payload is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise BudgetExceeded(
            f"compiling `{filename}` took longer than {COMPILE_WALL_SECONDS} seconds"
        )
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1:
        raise compiler.RulebookError(f"the compiler stopped before it answered on `{filename}`")
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0) or not payload:
        raise BudgetExceeded(f"compiling `{filename}` went over its budget: {_outcome(status)}")
    answer = json.loads(payload)
    if "errors" in answer:
        raise compiler.RulebookUnsupported(
            compiler.CompileError(
                error["code"],
                error["message"],
                error["file"],
                error["line"],
                error["column"],
                error["construct"],
                error["field"],
            )
            for error in answer["errors"]
        )
    if "error" in answer:
        raise compiler.RulebookError(answer["error"])
    return answer["record"]
