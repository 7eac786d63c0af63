"""The JSONPath subset of argument clauses: `$`, `$.a`, `$.a.b`, `$.a[0]`, `$.arr[1].k`.

A path is parsed once into a tuple of steps, each a key (`str`) or an index (`int`); resolving
walks the arguments step by step and answers `MISSING` as soon as a step does not apply (a key
on a list, an index on an object, an index out of range, a missing key). Wildcards, filters,
slices, negative indices, quoted keys and recursive descent are not part of the language.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

from firewall.engine.errors import OperandInvalid

#: One step: `.key` (letters, digits, `_` and `-`) or `[index]` (a non-negative integer).
_PATH = re2.compile(r"\$(?:\.[A-Za-z0-9_-]+|\[(?:0|[1-9][0-9]{0,8})\])*")
_STEP = re2.compile(r"\.([A-Za-z0-9_-]+)|\[([0-9]+)\]")

#: Longest path the validator accepts.
MAX_PATH_LENGTH = 512


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


#: What `resolve` answers when the path does not lead to a value.
MISSING: Any = _Missing()


def parse_path(text: object) -> tuple[str | int, ...]:
    """Parse a path into its steps, or raise `OperandInvalid` saying why it is not one."""
    if not isinstance(text, str):
        raise OperandInvalid("path", "must be a string")
    return _parse(text)


@lru_cache(maxsize=4096)
def _parse(text: str) -> tuple[str | int, ...]:
    # paths repeat across rules and are read by the validator, the loader and the compiler
    # alike; a parse is a tuple, so a cached one cannot be changed by whoever reads it
    if len(text) > MAX_PATH_LENGTH:
        raise OperandInvalid("path", f"is longer than {MAX_PATH_LENGTH} characters")
    if not text.isascii() or not _PATH.fullmatch(text):
        raise OperandInvalid(
            "path",
            f"`{text}` is not a path of the subset `$`, `$.key`, `$.key[0]` "
            "(no wildcards, filters, slices or recursive descent)",
        )
    steps: list[str | int] = []
    for match in _STEP.finditer(text):
        key, index = match.group(1), match.group(2)
        steps.append(key if key is not None else int(index))
    return tuple(steps)


def resolve(steps: tuple[str | int, ...], value: Any) -> Any:
    """The value the steps lead to inside `value`, or `MISSING`."""
    for step in steps:
        if step.__class__ is str:
            if isinstance(value, dict) and step in value:
                value = value[step]
            else:
                return MISSING
        elif isinstance(value, list) and step < len(value):
            value = value[step]
        else:
            return MISSING
    return value
