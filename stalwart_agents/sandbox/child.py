"""The calculation sandbox's child: run one model-written function over JSON data, print JSON.

Run by `stalwart_agents.sandbox` as `python -I -S -c "...; import child; child.main()"` (never
imported by the parent itself); it reads one
request from standard input -- `{"source", "arguments", "modules", "folder", "net"}` -- and
writes one answer to standard output: `{"ok": true, "result": ..., "isolation": {...}}` or
`{"ok": false, "reason": <code>, "message": ..., "isolation": {...}}`.

In order, before any of the model's code runs:

1. the source is compiled, and the modules it may import (already checked against the allow-list
   by the parent) are imported, while the file system is still there to import them from;
2. the process is confined: where it runs as root (the parent gave it its own network namespace),
   it is shut in its private folder (`chroot`) and becomes `nobody`; otherwise it stays in its
   private folder as the user it is;
3. an audit hook is installed (`sys.addaudithook`, which nothing can remove): from then on any
   file opened, socket made, process started, module imported, code compiled or executed, hook
   added, signal or `ctypes` use is refused -- and remembered, so a function that catches the
   error is still refused as a whole;
4. the source is executed with a trimmed set of builtins (no `open`, `eval`, `exec`, `compile`,
   `getattr`, `globals`, `input`, `print`, ...) and an `__import__` that hands out only the
   modules of step 1; its one top-level function is called with one argument per read.

The limits on CPU time, memory, open files, file size and processes were set by the parent
before this interpreter started (`setrlimit`), and it kills the process after its wall-clock
limit. This file imports only what the interpreter has anyway, so it starts fast.
"""

import sys

REFUSED_EVENTS = {
    "open": "file_system",
    "os.listdir": "file_system",
    "os.scandir": "file_system",
    "os.chdir": "file_system",
    "os.remove": "file_system",
    "os.rename": "file_system",
    "os.mkdir": "file_system",
    "os.rmdir": "file_system",
    "os.chmod": "file_system",
    "os.chown": "file_system",
    "os.link": "file_system",
    "os.symlink": "file_system",
    "os.truncate": "file_system",
    "os.utime": "file_system",
    "shutil.copyfile": "file_system",
    "shutil.rmtree": "file_system",
    "glob.glob": "file_system",
    "subprocess.Popen": "process",
    "os.system": "process",
    "os.exec": "process",
    "os.posix_spawn": "process",
    "os.spawn": "process",
    "os.fork": "process",
    "os.forkpty": "process",
    "os.kill": "process",
    "os.killpg": "process",
    "pty.spawn": "process",
    "os.startfile": "process",
    "import": "import",
    "compile": "code",
    "exec": "code",
    "sys.addaudithook": "code",
    "sys._getframe": "code",
    "sys.settrace": "code",
    "sys.setprofile": "code",
    "builtins.input": "file_system",
    "signal.pthread_kill": "process",
    "mmap.__new__": "file_system",
}
PREFIXES = (("socket.", "network"), ("ctypes.", "code"), ("urllib.", "network"),
            ("http.", "network"), ("ftplib.", "network"), ("smtplib.", "network"))  # fmt: skip
SAFE_BUILTINS = (
    "abs all any ascii bin bool bytes callable chr complex dict divmod enumerate filter float "
    "format frozenset hash hex int isinstance issubclass iter len list map max min next object "
    "oct ord pow range repr reversed round set slice sorted str sum tuple zip "
    "ArithmeticError AssertionError AttributeError Exception IndexError KeyError LookupError "
    "OverflowError RuntimeError StopIteration TypeError ValueError ZeroDivisionError "
    "True False None"
).split()
MESSAGES = {
    "file_system": "it tried to reach the file system ({what})",
    "network": "it tried to reach the network ({what})",
    "process": "it tried to start or signal a process ({what})",
    "import": "it tried to import a module that is not on the allow-list ({what})",
    "code": "it tried to run code of its own making ({what})",
}


class _Context:
    """What `_json.make_scanner` reads its settings from (the `json` package's decoder, minus
    the `re` and `enum` imports that would double this process's start-up)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo = None

    @staticmethod
    def parse_constant(name):
        raise ValueError(f"`{name}` is not a number JSON carries")


class _Json:
    """JSON in and out through the interpreter's own `_json` accelerator."""

    def __init__(self):
        import _json

        self._scan = _json.make_scanner(_Context())
        self._encode = _json.encode_basestring_ascii
        self._make = _json.make_encoder

    def loads(self, text):
        text = text.strip(" \t\n\r")
        value, end = self._scan(text, 0)
        if end != len(text):
            raise ValueError("extra data after the JSON value")
        return value

    def dumps(self, value, default=None, allow_nan=False):
        def refuse(other):
            raise TypeError(f"a value of type `{type(other).__name__}` cannot be given back")

        encoder = self._make(
            {}, default or refuse, self._encode, None, ":", ",", False, False, allow_nan
        )
        return "".join(encoder(value, 0))


def main():
    out = sys.stdout
    raw = sys.stdin.read()
    sys.stdin.close()
    json = _Json()
    request = json.loads(raw)
    isolation = {"network": "audit hook", "file system": "audit hook"}

    def answer(body):
        body["isolation"] = isolation
        out.write(json.dumps(body))
        out.flush()

    try:
        code = compile(request["source"], "<calculation>", "exec")
    except (SyntaxError, ValueError) as error:
        answer({"ok": False, "reason": "invalid", "message": f"it does not compile: {error}"})
        return
    for name in request.get("preload") or request["modules"]:
        __import__(name)
    modules = {name: sys.modules[name] for name in request["modules"]}
    # What allowed modules import from C when first used (`datetime` imports `time`): loaded
    # above, and handed out by name alone -- the source itself cannot name them (the parent's
    # checks refuse an import off the allow-list and `__import__`).
    lazy = {name: sys.modules[name] for name in request.get("preload") or () if name in sys.modules}
    import builtins
    import os

    folder = request["folder"]
    os.chdir(folder)
    try:
        if os.readlink("/proc/self/ns/net") != request.get("net"):
            isolation["network"] = "network namespace and audit hook"
    except OSError:
        pass
    if os.geteuid() == 0:
        try:
            os.chroot(folder)
            os.chdir("/")
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            isolation["file system"] = "chroot to its private folder, user nobody, audit hook"
        except OSError:
            pass
    refusals = []

    def hook(event, args):
        kind = REFUSED_EVENTS.get(event)
        if kind is None:
            for prefix, named in PREFIXES:
                if event.startswith(prefix):
                    kind = named
                    break
        if kind is None:
            return
        if event == "exec" and not refusals and state["defining"]:
            state["defining"] = False  # the one exec that defines the function
            return
        what = event
        if args and isinstance(args[0], (str, bytes, int)) and kind != "code":
            what = f"{event} {args[0]!r}"
        refusals.append((kind, what))
        raise PermissionError(MESSAGES[kind].format(what=what))

    state = {"defining": True}
    sys.addaudithook(hook)
    allowed = set(request["allowed"])
    safe = {name: getattr(builtins, name) for name in SAFE_BUILTINS if hasattr(builtins, name)}

    def gated_import(name, globals=None, locals=None, fromlist=(), level=0):
        top = name.split(".")[0]
        if not level and name in lazy and name not in modules:
            return lazy[name] if fromlist or "." not in name else sys.modules[top]
        if level or top not in allowed or name not in modules:
            refusals.append(("import", name))
            raise ImportError(MESSAGES["import"].format(what=name))
        return modules[name] if fromlist else sys.modules[top]

    safe["__import__"] = gated_import
    namespace = {"__builtins__": safe, "__name__": "calculation"}
    try:
        exec(code, namespace)
        functions = [v for k, v in namespace.items() if callable(v) and k in request["defined"]]
        if len(functions) != 1:
            raise ValueError("it must define exactly one function")
        result = functions[0](*request["arguments"])
    except MemoryError:
        answer({"ok": False, "reason": "memory", "message": "it ran out of memory"})
        return
    except RecursionError:
        answer({"ok": False, "reason": "failed", "message": "it recursed too deep"})
        return
    except BaseException as error:  # noqa: BLE001 - whatever it raised, the function failed
        if refusals:
            kind, what = refusals[0]
            answer({"ok": False, "reason": kind, "message": MESSAGES[kind].format(what=what)})
            return
        name = type(error).__name__
        text = str(error)[:300]
        answer({"ok": False, "reason": "failed", "message": f"it raised {name}: {text}"})
        return
    if refusals:
        kind, what = refusals[0]
        answer({"ok": False, "reason": kind, "message": MESSAGES[kind].format(what=what)})
        return
    try:
        text = json.dumps({"ok": True, "result": result}, default=_data)
    except (TypeError, ValueError) as error:
        answer({"ok": False, "reason": "not_data", "message": f"its result is not data: {error}"})
        return
    body = json.loads(text)
    answer(body)


def _data(value):
    """A result's numbers and dates as JSON: Decimal and Fraction as floats, dates as ISO text."""
    kind = type(value).__name__
    if kind in ("Decimal", "Fraction"):
        return float(value)
    if kind in ("date", "datetime", "time"):
        return value.isoformat()
    if kind == "timedelta":
        return value.total_seconds()
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    raise TypeError(f"a value of type `{kind}` cannot be given back")


if __name__ == "__main__":
    main()
