"""The calculation sandbox: a model-written function run over the reads' results, in its own process.

`Sandbox()(source, arguments)` runs the one function `source` defines with one argument per read
the plan drew on (`arguments`, plain JSON data) and returns its result (JSON data), or raises:

- `CalculationRefused` (`reason`, `message`) -- the function was stopped, and the message says why:
  `invalid` (it does not parse, or defines no single function), `import` (a module off the
  allow-list), `forbidden` (a name or attribute a calculation may not use: `open`, `eval`,
  `__class__`, a frame ...), `cpu_time`, `memory`, `wall_clock`, `output` (an answer too large),
  `file_system`, `network`, `process`, `code` (the audit hook caught it), `failed` (it raised),
  `not_data` (its result is not numbers, text, lists and mappings);
- `SandboxUnavailable` -- the sandbox could not start on this machine (the conversation's reply
  is then `compute off: ...`, as with no sandbox at all).

How it is held, in layers (each one holds without the ones before it):

1. **Before it runs** (`check_source`, in this process): the source is parsed, never executed
   here; imports must be on `ALLOWED_MODULES`, and names and attributes that reach the
   interpreter's insides (`open`, `eval`, `exec`, `getattr`, anything starting with `_`, frame
   and code attributes) are refused, each with its line.
2. **A process of its own**: `python -I -S` (isolated: no environment variables, no user or site
   packages, not the caller's folder on the path) runs `child.py` (imported from its folder,
   which then leaves the path), with the inputs and the source
   on standard input as JSON -- data, never code -- and the answer on standard output as JSON.
3. **Kernel limits**, set before the interpreter starts (`setrlimit`): CPU time (`RLIMIT_CPU`),
   address space (`RLIMIT_AS`), open files (`RLIMIT_NOFILE`), file size (`RLIMIT_FSIZE`), no core
   files; the parent kills the process group after the wall-clock limit.
4. **No network**: a network namespace of its own (`unshare(CLONE_NEWNET)`, as root; else a user
   namespace with one, where the kernel lets unprivileged users have them): the process sees no
   interface but a loopback that is down. Where neither is allowed, only the audit hook holds.
5. **No file system** beyond a private temporary folder (its working folder, removed after): as
   root, `chroot` into it and the user `nobody`; in every case, the audit hook.
6. **The audit hook** (`sys.addaudithook`), installed before the function's code runs and never
   removable: opening a file, a socket, a process, an import, `compile`/`exec`, `ctypes` are
   refused and remembered, so a function that catches the error is refused all the same.

`isolation()` says which of 4 and 5 hold on this machine (the README and the benchmark print it).
"""

from __future__ import annotations

import ast
import ctypes
import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHILD = Path(__file__).resolve().parent / "child.py"
# The child is imported, not run as a script, so its compiled form is cached (`__pycache__`)
# and each calculation does not compile it again; its folder leaves the path at once.
BOOT = (
    f"import sys; sys.path.insert(0, {str(CHILD.parent)!r}); import child; del sys.path[0]; "
    "sys.modules.pop('child'); child.main()"
)

#: What a calculation may import: arithmetic, statistics, exact numbers, dates and the standard
#: tools for iterating and grouping. Nothing here reaches a file, the network, a process or the
#: interpreter's insides. `re` is left out: a pattern can take exponential time on a small input.
ALLOWED_MODULES = frozenset(
    {
        "math",
        "cmath",
        "statistics",
        "decimal",
        "fractions",
        "datetime",
        "itertools",
        "functools",
        "operator",
        "collections",
        "heapq",
        "bisect",
    }
)
#: Names a calculation may not use, even where they are not builtins it is given.
FORBIDDEN_NAMES = frozenset(
    {
        "open",
        "eval",
        "exec",
        "compile",
        "__import__",
        "getattr",
        "setattr",
        "delattr",
        "globals",
        "locals",
        "vars",
        "dir",
        "input",
        "print",
        "breakpoint",
        "help",
        "memoryview",
        "type",
        "super",
        "classmethod",
        "staticmethod",
        "property",
    }
)
#: Attributes that lead from a value to frames, code and the interpreter (besides every `_` name).
FORBIDDEN_ATTRIBUTE_PREFIXES = ("_", "gi_", "cr_", "ag_", "f_", "tb_", "co_")
FORBIDDEN_ATTRIBUTES = frozenset({"mro", "format", "format_map"})

#: Modules an allowed module imports only when one of its functions is first called (after the
#: audit hook forbids imports): loaded beforehand with it, and never handed to the function.
LAZY = {"datetime": ("time",), "collections": ("heapq",)}
#: An attribute whose use needs a module of its own loaded beforehand (it costs `re` and `locale`,
#: so it is loaded only for a source that uses it).
LAZY_ATTRIBUTES = {"strptime": "_strptime"}

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
NOBODY = 65534


class CalculationRefused(Exception):
    """The sandbox stopped a calculation: `reason` is a short code, the message says why."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class SandboxUnavailable(Exception):
    """The sandbox cannot start on this machine (the message says why): `compute off`."""

    compute_off = True  # what the conversation reads to say `compute off:` rather than stopped


@dataclass(frozen=True)
class Limits:
    """A calculation's limits: CPU seconds, wall-clock seconds, memory (address space, bytes),
    open files, the size of its source, inputs and answer (bytes)."""

    cpu_seconds: int = 2
    wall_seconds: float = 5.0
    memory_bytes: int = 512 * 1024 * 1024
    open_files: int = 16
    source_bytes: int = 20_000
    input_bytes: int = 8 * 1024 * 1024
    output_bytes: int = 1024 * 1024

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"the sandbox limit `{name}` must be a positive number")


@dataclass(frozen=True)
class Checked:
    """What `check_source` found in a source: its function's name and the modules it imports."""

    function: str
    modules: tuple[str, ...]
    preload: tuple[str, ...] = ()


def check_source(source: Any, allowed: frozenset[str] = ALLOWED_MODULES) -> Checked:
    """Parse (never run) a model-written source; `CalculationRefused` naming the line otherwise.

    It must define exactly one top-level function; at the top level it may also import and
    assign constants. Imports must be on `allowed`; the forbidden names and attributes refused.
    """
    if not isinstance(source, str) or not source.strip():
        raise CalculationRefused("invalid", "the model wrote no function")
    try:
        tree = ast.parse(source, "<calculation>")
    except (SyntaxError, ValueError) as error:
        line = getattr(error, "lineno", None)
        where = f" (line {line})" if line else ""
        raise CalculationRefused(
            "invalid", f"the function does not parse{where}: {getattr(error, 'msg', error)}"
        ) from None
    modules: list[str] = []
    functions: list[str] = []
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef):
            functions.append(statement.name)
        elif not isinstance(statement, (ast.Import, ast.ImportFrom, ast.Assign, ast.Expr)):
            raise CalculationRefused(
                "invalid",
                f"line {statement.lineno}: only imports, constants and one function may stand "
                "at the top of a calculation",
            )
    if len(functions) != 1:
        raise CalculationRefused(
            "invalid", f"a calculation defines exactly one function, not {len(functions)}"
        )
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.ImportFrom) and (node.level or not node.module):
                raise CalculationRefused("import", f"line {line}: a relative import")
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [str(node.module)]
            )
            for name in names:
                if name.split(".")[0] not in allowed:
                    raise CalculationRefused(
                        "import",
                        f"line {line}: it imports `{name}`, which is not on the allow-list "
                        f"({', '.join(sorted(allowed))})",
                    )
                if name not in modules:
                    modules.append(name)
        elif isinstance(node, ast.Name) and (
            node.id in FORBIDDEN_NAMES or node.id.startswith("__")
        ):
            raise CalculationRefused(
                "forbidden", f"line {line}: it uses `{node.id}`, which a calculation may not"
            )
        elif isinstance(node, ast.Attribute) and (
            node.attr.startswith(FORBIDDEN_ATTRIBUTE_PREFIXES) or node.attr in FORBIDDEN_ATTRIBUTES
        ):
            raise CalculationRefused(
                "forbidden", f"line {line}: it reaches `.{node.attr}`, which a calculation may not"
            )
        elif isinstance(node, (ast.Global, ast.Nonlocal, ast.ClassDef, ast.AsyncFunctionDef)):
            raise CalculationRefused(
                "forbidden", f"line {line}: a calculation has no `{type(node).__name__.lower()}`"
            )
        elif isinstance(node, (ast.Await, ast.Yield, ast.YieldFrom)):
            raise CalculationRefused("forbidden", f"line {line}: a calculation is not a generator")
    preload = list(modules)
    for name in modules:
        preload.extend(LAZY.get(name.split(".")[0], ()))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in LAZY_ATTRIBUTES:
            preload.append(LAZY_ATTRIBUTES[node.attr])
    return Checked(functions[0], tuple(modules), tuple(dict.fromkeys(preload)))


def _libc_unshare() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare
    except (OSError, AttributeError):
        return None


_UNSHARE = _libc_unshare()


def _net_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/net")
    except OSError:
        return None


class Sandbox:
    """Runs calculations (see the module docstring); `limits` bound each one."""

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        allowed: Sequence[str] | None = None,
        python: str | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.allowed = frozenset(allowed) if allowed is not None else ALLOWED_MODULES
        self.python = python or sys.executable
        self._off: str | None = None
        self._probed = False
        self._isolation: dict[str, str] = {}

    # -- whether it can run here ---------------------------------------------------------------

    @property
    def compute_off(self) -> str | None:
        """`compute off: ...` with the reason this sandbox cannot start here, or None."""
        if not self._probed:
            self._probed = True
            try:
                if self("def probe():\n    return 1\n", []) != 1:
                    self._off = "the sandbox gave a wrong answer to its probe"
            except SandboxUnavailable as error:
                self._off = str(error)
            except CalculationRefused as error:
                self._off = f"the sandbox refused its probe: {error.message}"
        return f"compute off: {self._off}" if self._off else None

    def __bool__(self) -> bool:
        return self.compute_off is None

    def isolation(self) -> dict[str, str]:
        """How the network and the file system are kept out on this machine (after a run)."""
        if not self._isolation:
            _ = self.compute_off
        return dict(self._isolation)

    # -- one calculation -----------------------------------------------------------------------

    def __call__(self, source: str, arguments: Any) -> Any:
        limits = self.limits
        if isinstance(source, str) and len(source.encode("utf-8")) > limits.source_bytes:
            raise CalculationRefused(
                "invalid", f"the function is longer than {limits.source_bytes} bytes"
            )
        checked = check_source(source, self.allowed)
        if not isinstance(arguments, (list, tuple)):
            arguments = [arguments]
        try:
            folder = tempfile.mkdtemp(prefix="stalwart-calc-")
        except OSError as error:
            raise SandboxUnavailable(f"no private folder: {error.strerror or error}") from None
        try:
            return self._run(checked, source, list(arguments), folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _request(self, checked: Checked, source: str, arguments: list, folder: str) -> bytes:
        try:
            body = json.dumps(
                {
                    "source": source,
                    "arguments": arguments,
                    "modules": list(checked.modules),
                    "preload": list(checked.preload),
                    "allowed": sorted(self.allowed),
                    "defined": [checked.function],
                    "folder": folder,
                    "net": _net_namespace(),
                },
                allow_nan=False,
            ).encode("utf-8")
        except (TypeError, ValueError) as error:
            raise CalculationRefused(
                "not_data", f"the reads' results are not data: {error}"
            ) from None
        if len(body) > self.limits.input_bytes:
            raise CalculationRefused(
                "invalid", f"the reads' results are larger than {self.limits.input_bytes} bytes"
            )
        return body

    def _preexec(self) -> Any:
        limits = self.limits
        cpu = max(1, math.ceil(limits.cpu_seconds))
        root = os.geteuid() == 0

        def confine() -> None:  # runs in the child between fork and exec: no Python allocation
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
            resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
            resource.setrlimit(resource.RLIMIT_FSIZE, (1024 * 1024, 1024 * 1024))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if _UNSHARE is None:
                return
            # As root, a network namespace of its own; else, where the kernel allows it, a user
            # namespace (the child is `nobody` in it) with one. A failure leaves the audit hook.
            _UNSHARE(CLONE_NEWNET if root else CLONE_NEWUSER | CLONE_NEWNET)

        return confine

    def _run(self, checked: Checked, source: str, arguments: list, folder: str) -> Any:
        limits = self.limits
        request = self._request(checked, source, arguments, folder)
        environment = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0"}
        started = time.monotonic()
        try:
            process = subprocess.Popen(  # noqa: S603 - our own interpreter and our own script
                [self.python, "-I", "-S", "-X", "utf8", "-c", BOOT],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=folder,
                env=environment,
                close_fds=True,
                start_new_session=True,
                preexec_fn=self._preexec(),  # noqa: PLW1509 - the limits must be set here
            )
        except OSError as error:
            raise SandboxUnavailable(
                f"the sandbox cannot start on this machine: {error.strerror or error}"
            ) from None
        try:
            out, err = process.communicate(request, timeout=limits.wall_seconds)
        except subprocess.TimeoutExpired:
            _kill(process)
            raise CalculationRefused(
                "wall_clock", f"it ran longer than the limit of {limits.wall_seconds:g} s"
            ) from None
        elapsed = time.monotonic() - started
        code = process.returncode
        if code in (-signal.SIGXCPU, -signal.SIGKILL) and elapsed < limits.wall_seconds:
            if code == -signal.SIGXCPU or _cpu_spent(limits):
                raise CalculationRefused(
                    "cpu_time", f"it used more than the limit of {limits.cpu_seconds} s of CPU time"
                )
        if len(out) > limits.output_bytes:
            raise CalculationRefused(
                "output", f"its answer is larger than {limits.output_bytes} bytes"
            )
        try:
            answer = json.loads(out.decode("utf-8")) if out else None
        except (UnicodeDecodeError, ValueError):
            answer = None
        if not isinstance(answer, dict):
            if b"MemoryError" in err:
                raise CalculationRefused("memory", self._memory_message())
            why = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit {code}"]
            raise SandboxUnavailable(f"the sandbox did not answer: {why[0][:200]}")
        if isinstance(answer.get("isolation"), dict):
            self._isolation = {str(k): str(v) for k, v in answer["isolation"].items()}
        if answer.get("ok") is True:
            return answer.get("result")
        reason = str(answer.get("reason") or "failed")
        message = str(answer.get("message") or "it failed")
        if reason == "memory":
            message = self._memory_message()
        raise CalculationRefused(reason, message)

    def _memory_message(self) -> str:
        megabytes = self.limits.memory_bytes // (1024 * 1024)
        return f"it needed more memory than the limit of {megabytes} MB"


def _cpu_spent(limits: Limits) -> bool:
    """Whether the child killed at its hard CPU limit was this limit's doing."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime >= limits.cpu_seconds


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.communicate()


_DEFAULT: Sandbox | None = None


def default_sandbox() -> Sandbox:
    """The sandbox `Agent.chat` runs calculations in, with the default limits (one per process)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Sandbox()
    return _DEFAULT


__all__ = [
    "ALLOWED_MODULES",
    "CalculationRefused",
    "Limits",
    "Sandbox",
    "SandboxUnavailable",
    "check_source",
    "default_sandbox",
]
