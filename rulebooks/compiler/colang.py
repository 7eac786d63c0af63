"""Compiling Colang: choose the version, parse, analyse routes, lower into the record.

The passes, in order (each needs what the ones before it produced):

1. `decode` -- bytes to text (`text.decode`); a file that is not UTF-8 is refused; then
   `limits.colang_problems` refuses a file too large to parse (bytes, lines, a line's length,
   the number of blocks) before any parser runs.
2. `choose_version` -- from the explicit `colang_version`, else from the content: a top-level
   `define` is Colang 1.0, a top-level `flow` or decorator is Colang 2.x. A file with both, or
   with neither, is refused unless the version is given: the version is never guessed.
3. `parse` -- `colang_v1.parse` or `colang_v2.parse` into the shared step form; every refused
   construct is collected with its line and column.
4. `analyse` -- `routes.Analyzer`: the conditions under which each flow reaches each tool.
5. `lower` -- `lower.Lowerer`: variables resolved to arguments, results and facts; the record.
"""

from __future__ import annotations

import hashlib
from typing import Any

from . import colang_v1, colang_v2
from .colang_common import ParseContext, Parsed
from .errors import UNSUPPORTED, CompileError, RulebookUnsupported
from .limits import colang_problems
from .lower import Lowerer, flow_record, public, roots
from .record import new_record
from .routes import Analyzer, TooComplex
from .text import decode

VERSIONS = {"1.0": "1.0", "2.x": "2.x"}


def _markers(text: str) -> tuple[int | None, int | None]:
    """The first line that marks the file as Colang 1.0, and the first that marks it 2.x."""
    v1: int | None = None
    v2: int | None = None
    in_doc: str | None = None
    for number, raw in enumerate(text.split("\n"), start=1):
        stripped = raw.strip()
        if in_doc is not None:
            if in_doc in stripped:
                in_doc = None
            continue
        if stripped.startswith(('"""', "'''")):
            mark = stripped[:3]
            if stripped.find(mark, 3) == -1:
                in_doc = mark
            continue
        if not stripped or raw[0] in " \t" or stripped.startswith("#"):
            continue
        word = stripped.split(None, 1)[0]
        if word == "define" and v1 is None:
            v1 = number
        elif (word == "flow" or stripped.startswith("@")) and v2 is None:
            v2 = number
    return v1, v2


def choose_version(text: str, colang_version: str | None, filename: str) -> str:
    if colang_version is not None:
        if colang_version not in VERSIONS:
            raise RulebookUnsupported(
                [
                    CompileError(
                        UNSUPPORTED,
                        f"`colang_version` must be `1.0` or `2.x`, not `{colang_version}`",
                        filename,
                        construct="colang_version",
                    )
                ]
            )
        return VERSIONS[colang_version]
    v1, v2 = _markers(text)
    if v1 is not None and v2 is not None:
        raise RulebookUnsupported(
            [
                CompileError(
                    UNSUPPORTED,
                    f"the file mixes Colang 1.0 (`define` on line {v1}) and Colang 2.x "
                    f"(`flow` on line {v2}): split it or pass `colang_version`",
                    filename,
                    max(v1, v2),
                    1,
                    construct="mixed versions",
                )
            ]
        )
    if v1 is not None:
        return "1.0"
    if v2 is not None:
        return "2.x"
    raise RulebookUnsupported(
        [
            CompileError(
                UNSUPPORTED,
                "cannot tell whether the file is Colang 1.0 or 2.x (no `define` and no `flow`): "
                "pass `colang_version`",
                filename,
                construct="colang version",
            )
        ]
    )


def parse_colang(text: str, version: str, filename: str) -> Parsed:
    ctx = ParseContext(filename)
    parsed = (colang_v1 if version == "1.0" else colang_v2).parse(text, ctx)
    if ctx.errors:
        raise RulebookUnsupported(ctx.errors)
    return parsed


def compile_colang(
    source: bytes | str,
    *,
    filename: str = "policy.co",
    colang_version: str | None = None,
) -> dict[str, Any]:
    """Compile a Colang 1.0 or 2.x rulebook into its record.

    Raises `RulebookUnsupported` with every error (each located) when the file cannot be
    compiled, including when its version cannot be told and `colang_version` is not given.
    """
    data = source.encode("utf-8") if isinstance(source, str) else bytes(source)
    text, errors = decode(data, filename)
    errors = errors or colang_problems(data, text, filename)
    if errors:
        raise RulebookUnsupported(errors)
    version = choose_version(text, colang_version, filename)
    parsed = parse_colang(text, version, filename)
    analyzer = Analyzer(parsed)
    lowerer = Lowerer(parsed, analyzer)
    try:
        root_flows = roots(parsed, analyzer)
        tools = lowerer.tools(root_flows)
    except TooComplex as exc:
        raise RulebookUnsupported(
            [CompileError(UNSUPPORTED, exc.what, filename, exc.line, construct="complexity")]
        ) from None
    root_set = set(root_flows)
    return new_record(
        parsed.format,
        filename=filename,
        policy_sha256=hashlib.sha256(data).hexdigest(),
        tools=tools,
        facts=sorted(lowerer.facts),
        flows=[flow_record(f, f.name in root_set) for f in parsed.flows],
        user_intents=public(list(parsed.user_intents.values())),
        bot_messages=public(list(parsed.bot_messages.values())),
        imports=parsed.imports,
    )
