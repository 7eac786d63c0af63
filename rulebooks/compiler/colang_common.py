"""What the Colang 1.0 and 2.x parsers share: the parse result, error collection, arguments.

Both parsers produce the same intermediate form, `Parsed`: flows whose steps are plain dicts
(the record keeps them, minus the keys that start with `_`, which carry parsed condition trees
for the later passes). The step kinds:

    user, bot              a dialogue step: `intent` / `message`, or `text`, or `any`
    tool                   a tool call: `tool`, `form` (execute, bot execute, action, send),
                           `arguments` (source text by name), `result` (the `$var` it sets)
    call                   a call of another flow: `flow`, `op`
    event                  an event matched or sent: `event`, `op`
    group                  specs joined by `and` / `or`: `mode`, `items`
    set                    `$variable = expression` (`generated` when the model writes it)
    if, when, while        `branches` (each with `steps`), `else`
    stop, abort, return, break, continue, pass, priority, global, log, print
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .errors import UNSUPPORTED, CompileError
from .expressions import ExpressionError, Parser, Token, tokenize
from .text import Line

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def action_tool_name(action: str) -> str:
    """`RefundCardAction` -> `refund_card`: the tool a Colang 2.x action governs."""
    stem = action[: -len("Action")] if action.endswith("Action") else action
    return _CAMEL_BOUNDARY.sub("_", stem).lower()


def is_action_name(name: str) -> bool:
    """A Colang 2.x action: CamelCase ending in `Action`, not a Start/Stop/Change event."""
    return (
        not name.islower()
        and " " not in name
        and name.endswith("Action")
        and len(name) > len("Action")
        and not name.startswith(("Start", "Stop", "Change"))
    )


@dataclass
class FlowDef:
    name: str
    line: int
    kind: str
    steps: list[dict[str, Any]]
    modifiers: list[str] = field(default_factory=list)
    decorators: list[dict[str, Any]] = field(default_factory=list)
    parameters: list[dict[str, Any]] = field(default_factory=list)
    returns: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Parsed:
    format: str
    flows: list[FlowDef] = field(default_factory=list)
    user_intents: dict[str, dict[str, Any]] = field(default_factory=dict)
    bot_messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    imports: list[dict[str, Any]] = field(default_factory=list)


class ParseContext:
    """Collects located errors while a parser walks the file."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.errors: list[CompileError] = []

    def error(
        self, line_no: int, column: int | None, message: str, construct: str | None = None
    ) -> None:
        self.errors.append(
            CompileError(UNSUPPORTED, message, self.filename, line_no, column, construct=construct)
        )

    def error_at(self, line: Line, offset: int, message: str, construct: str | None = None) -> None:
        ln, col = line.pos(offset)
        self.error(ln, col, message, construct)

    def sink(self, line_no: int, column: int, message: str, construct: str) -> None:
        self.error(line_no, column, message, construct)


class Refused(Exception):
    """A statement the parser refuses; caught per statement so the parse goes on."""

    def __init__(self, offset: int, message: str, construct: str | None = None) -> None:
        super().__init__(message)
        self.offset = offset
        self.message = message
        self.construct = construct

    @classmethod
    def from_expression(cls, exc: ExpressionError) -> Refused:
        return cls(exc.offset, exc.message, exc.construct)


def source_text(line: Line, start: int, end: int) -> str:
    return line.text[start:end].strip()


def token_end(tok: Token) -> int:
    return tok.start + len(tok.text)


@dataclass
class Arguments:
    """Arguments of a call: named ones by name, positional ones by `$0`, `$1`, ..."""

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    positional: int = 0

    def add(self, name: str | None, node: dict[str, Any], text: str, at: int) -> None:
        if name is None:
            name = f"${self.positional}"
            self.positional += 1
        if name in self.nodes:
            raise Refused(at, f"the argument `{name}` is given twice")
        self.nodes[name] = node
        self.texts[name] = text


def classic_arguments(parser: Parser, line: Line, *, named_with_dollar: bool = False) -> Arguments:
    """`( name=test, test, ... )` from the parser's position (which is at `(`)."""
    args = Arguments()
    parser.expect_op("(")
    while not parser.at_op(")"):
        tok = parser.tok
        name: str | None = None
        if tok.kind == "name" and parser.peek().text == "=" and parser.peek().kind == "op":
            name = tok.text
            parser.advance()
            parser.advance()
        elif named_with_dollar and tok.kind == "var" and parser.peek().text == "=":
            name = tok.value
            parser.advance()
            parser.advance()
        start = parser.tok.start
        node = parser.test()
        end = token_end(parser.tokens[parser.i - 1])
        args.add(name, node, source_text(line, start, end), tok.start)
        if not parser.at_op(","):
            break
        parser.advance()
    parser.expect_op(")")
    return args


def tokens_from(line: Line, offset: int) -> list[Token]:
    try:
        return tokenize(line.text, offset)
    except ExpressionError as exc:
        raise Refused.from_expression(exc) from exc


def strip_colon(line: Line) -> int:
    """The end of a line's text without a trailing `:` (Colang tolerates `if $x:`)."""
    text = line.text.rstrip()
    return len(text) - 1 if text.endswith(":") else len(text)


def parse_condition(line: Line, start: int) -> tuple[dict[str, Any], str]:
    """A condition from `start` to the end of the line (minus a trailing `:`)."""
    end = strip_colon(line)
    try:
        tokens = tokenize(line.text, start, end)
    except ExpressionError as exc:
        raise Refused.from_expression(exc) from exc
    parser = Parser(tokens)
    if parser.at("end"):
        raise Refused(start, "a condition is missing")
    try:
        node = parser.test()
        parser.expect_end()
    except ExpressionError as exc:
        raise Refused.from_expression(exc) from exc
    return node, source_text(line, start, end)


def tool_step(
    line: Line,
    tool: str,
    form: str,
    args: Arguments,
    at: int,
    *,
    result: str | None = None,
    op: str | None = None,
    action: str | None = None,
) -> dict[str, Any]:
    if args.positional:
        raise Refused(
            at,
            f"the tool call `{tool}` has a positional argument: name every argument",
            "positional argument",
        )
    step: dict[str, Any] = {
        "step": "tool",
        "line": line.pos(at)[0],
        "tool": tool,
        "form": form,
        "arguments": dict(sorted(args.texts.items())),
        "_args": args.nodes,
    }
    if op is not None:
        step["op"] = op
    if action is not None:
        step["action"] = action
    if result is not None:
        step["result"] = result
    return step
