"""Tool and skill globs: the four shapes of the glob grammar and how each matches a name.

The grammar is deliberately tiny and case-sensitive:

- `""` or `*` match every name;
- `foo.*` is a prefix: `foo.bar`, `foo.bar.baz`, never the bare `foo` (nor `foo.`);
- `*.exec` is a suffix: `shell.exec`, never the bare `exec` (nor `.exec`);
- `*.shell.*` is an infix: `local.shell.exec`, with at least one character on each side;
- anything else is an exact string, including `foo.*.bar`, `*.*`, `foo*` and `**`.

Classification keeps the dots as part of the key (`foo.`, `.exec`, `.shell.`) so that the
compiled index can look keys up from the dot positions of a tool name.
"""

from __future__ import annotations

from collections.abc import Callable

ANY = "any"
EXACT = "exact"
PREFIX = "prefix"
SUFFIX = "suffix"
INFIX = "infix"

#: Longest glob the validator accepts; tool names are identifiers, not prose.
MAX_GLOB_LENGTH = 256


def classify(glob: str) -> tuple[str, str]:
    """Return the glob's shape and its key (the exact name, `foo.`, `.exec` or `.shell.`)."""
    if glob == "" or glob == "*":
        return ANY, ""
    starts = glob.startswith("*.")
    ends = glob.endswith(".*")
    if starts and ends and len(glob) >= 5 and "*" not in glob[2:-2]:
        return INFIX, glob[1:-1]
    if ends and len(glob) >= 3 and "*" not in glob[:-2]:
        return PREFIX, glob[:-1]
    if starts and len(glob) >= 3 and "*" not in glob[2:]:
        return SUFFIX, glob[1:]
    return EXACT, glob


def glob_matches(glob: str, name: str) -> bool:
    """Whether `name` matches `glob`; the plain definition the compiled index must agree with."""
    kind, key = classify(glob)
    if kind == ANY:
        return True
    if kind == EXACT:
        return name == key
    if kind == PREFIX:
        return name.startswith(key) and len(name) > len(key)
    if kind == SUFFIX:
        return name.endswith(key) and len(name) > len(key)
    # infix: the key must sit strictly inside the name, one character at least on each side
    return name.find(key, 1, len(name) - 1) != -1


def compile_glob(glob: str) -> Callable[[str], bool]:
    """A matcher for `glob`, specialised to its shape."""
    kind, key = classify(glob)
    size = len(key)
    if kind == ANY:
        return lambda name: True
    if kind == EXACT:
        return key.__eq__
    if kind == PREFIX:
        return lambda name: len(name) > size and name.startswith(key)
    if kind == SUFFIX:
        return lambda name: len(name) > size and name.endswith(key)
    return lambda name: name.find(key, 1, len(name) - 1) != -1


def glob_problem(glob: object, *, allow_empty: bool = True) -> str | None:
    """Why `glob` is not a glob, or None when it is one."""
    if not isinstance(glob, str):
        return "must be a string"
    if not glob and not allow_empty:
        return "must not be empty (use `*` to match every tool)"
    if len(glob) > MAX_GLOB_LENGTH:
        return f"is longer than {MAX_GLOB_LENGTH} characters"
    # the only printable whitespace is U+0020: every other space is not printable
    if not glob.isprintable() or " " in glob:
        return f"`{glob}` contains whitespace or control characters"
    return None
