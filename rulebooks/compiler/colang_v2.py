"""The Colang 2.x parser: flows, decorators and spec statements into the shared step form.

How it works. After `text.blocks` nests the lines (a line that starts with `and` / `or`
continues the one before, as in NeMo Guardrails' grammar), each top-level node must be an
`import`, a decorator (`@active`, `@meta(...)`, `@loop(...)`, `@override`) or a `flow`
definition; NeMo silently drops any other top-level statement, we refuse it. A flow body is
tokenized line by line and dispatched on its first token (`if`, `elif`, `else`, `when`,
`or when`, `while`, `return`, `$var =`, a spec operator, ...). A *spec* is a flow, action or
event with its arguments, read by `_SpecParser`::

    spec_expr := spec_and ("or" spec_and)*        spec_and := atom ("and" atom)*
    atom      := "(" spec_expr ")" | spec
    spec      := NAME+ ["(" args ")" | simple_arg+] ("." NAME ["(" args ")"])* ["as" $ref]
               | $ref ("." NAME ["(" args ")"])* ["as" $ref]

A spec name in lower case is a flow; one CamelCase word ending in `Action` (not `Start...`,
`Stop...`, `Change...`) is an action; any other CamelCase word is an event -- the rule NeMo
uses. Our tool-call conventions on top: an action awaited or started is a tool call
(`RefundCardAction` -> `refund_card`), as are `execute <tool>(...)`, `bot execute_<tool>` and
`send Start<Tool>Action(...)`; `user ...` / `bot ...` flows are dialogue steps.

Trade-offs: `...` (flows the model writes), labels, method calls and slices are refused with
their line and column, as is a spec name mixing words and capitals, which NeMo would read as an
event nobody sends.
"""

from __future__ import annotations

from typing import Any

from .colang_common import (
    Arguments,
    FlowDef,
    ParseContext,
    Parsed,
    Refused,
    action_tool_name,
    classic_arguments,
    is_action_name,
    parse_condition,
    source_text,
    strip_colon,
    token_end,
    tokens_from,
    tool_step,
)
from .expressions import ExpressionError, Parser, Token
from .text import Line, Node, blocks, logical_lines

FORMAT = "colang-2.x"
SPEC_OPERATORS = ("await", "match", "start", "stop", "activate", "send")
DECORATORS = frozenset({"active", "meta", "loop", "override"})
_EXPR_START = frozenset({"string", "number", "var"})
_NO_OP = ("pass", "log", "print", "priority")
#: The most parentheses specs may nest in.
MAX_SPEC_DEPTH = 16


def parse(text: str, ctx: ParseContext) -> Parsed:
    """Parse a Colang 2.x file; errors go to `ctx`."""
    parsed = Parsed(FORMAT)
    lines = logical_lines(text, ctx.sink, leading_joiners=True)
    defined: dict[str, int] = {}
    pending: list[dict[str, Any]] = []
    pending_line: Line | None = None
    for node in blocks(lines, ctx.sink):
        line = node.line
        if line.broken:
            continue
        try:
            tokens = tokens_from(line, 0)
            first = tokens[0]
            if first.kind == "op" and first.text == "@":
                if node.children:
                    raise Refused(0, "a decorator takes no indented block")
                pending.append(_decorator(line, tokens))
                pending_line = pending_line or line
                continue
            if first.kind == "name" and first.text == "flow":
                flow = _flow(node, tokens, ctx, pending)
                pending, pending_line = [], None
                if flow.name in defined:
                    raise Refused(
                        tokens[1].start,
                        f"the flow `{flow.name}` is already defined on line {defined[flow.name]}",
                        "duplicate flow",
                    )
                defined[flow.name] = flow.line
                parsed.flows.append(flow)
                continue
            if pending_line is not None:
                ctx.error_at(pending_line, 0, "a decorator must come right before a `flow`")
                pending, pending_line = [], None
            if first.kind == "name" and first.text == "import":
                parsed.imports.append(_import(node, tokens))
                continue
            if first.kind == "name" and first.text == "define":
                raise Refused(
                    0, "`define` is Colang 1.0, but this file is read as Colang 2.x", "define"
                )
            raise Refused(
                0,
                "a statement outside any `flow` is not supported (NeMo Guardrails ignores it)",
                "top-level statement",
            )
        except Refused as exc:
            ctx.error_at(line, exc.offset, exc.message, exc.construct)
    if pending_line is not None:
        ctx.error_at(pending_line, 0, "a decorator must come right before a `flow`")
    _messages(parsed)
    return parsed


def _messages(parsed: Parsed) -> None:
    """`flow user <intent>` made of `user said "..."` alternatives is a user intent with those
    examples; `flow bot <message>` made of `bot say "..."` is a bot message with those texts."""
    for flow in parsed.flows:
        who, _, rest = flow.name.partition(" ")
        if who not in ("user", "bot") or not rest:
            continue
        texts: list[str] = []
        for step in flow.steps:
            items = step["items"] if step["step"] == "group" and step["mode"] == "or" else [step]
            for item in items:
                if item["step"] == who and "text" in item:
                    texts.append(item["text"])
        if not texts:
            continue
        if who == "user":
            parsed.user_intents[rest] = {"name": rest, "examples": texts, "line": flow.line}
        else:
            parsed.bot_messages[rest] = {"name": rest, "texts": texts, "line": flow.line}


def _import(node: Node, tokens: list[Token]) -> dict[str, Any]:
    if node.children:
        raise Refused(0, "`import` takes no indented block")
    parts: list[str] = []
    i = 1
    if tokens[i].kind == "string":
        parts.append(tokens[i].value)
        i += 1
    else:
        while tokens[i].kind == "name":
            parts.append(tokens[i].text)
            i += 1
            if tokens[i].kind == "op" and tokens[i].text == ".":
                i += 1
                continue
            break
    if not parts or tokens[i].kind != "end":
        raise Refused(tokens[i].start, "`import` needs a module name like `core` or `a.b`")
    return {"path": ".".join(parts), "line": node.line.number}


def _decorator(line: Line, tokens: list[Token]) -> dict[str, Any]:
    parser = Parser(tokens)
    parser.advance()
    if not parser.at("name"):
        raise parser_error(parser, "a decorator name")
    name_tok = parser.advance()
    if name_tok.text not in DECORATORS:
        raise Refused(name_tok.start, f"the decorator `@{name_tok.text}` is not supported", "@")
    args = Arguments()
    try:
        if parser.at_op("("):
            args = classic_arguments(parser, line)
        parser.expect_end()
    except ExpressionError as exc:
        raise Refused.from_expression(exc) from exc
    return {"name": name_tok.text, "arguments": dict(sorted(args.texts.items()))}


def parser_error(parser: Parser, wanted: str) -> Refused:
    exc = parser.unexpected(wanted)
    return Refused(exc.offset, exc.message)


def _flow(node: Node, tokens: list[Token], ctx: ParseContext, decorators: list) -> FlowDef:
    line = node.line
    parser = Parser(tokens)
    parser.advance()
    words: list[str] = []
    while parser.at("name"):
        words.append(parser.advance().text)
    if not words:
        raise parser_error(parser, "a flow name")
    name = " ".join(words)
    parameters: list[dict[str, Any]] = []
    returns: list[dict[str, Any]] = []
    try:
        if parser.at_op("("):
            parser.advance()
            while not parser.at_op(")"):
                parameters.append(_param(parser, line))
                if not parser.at_op(","):
                    break
                parser.advance()
            parser.expect_op(")")
        else:
            while parser.at("var"):
                parameters.append(_param(parser, line))
        if parser.at_op("->"):
            parser.advance()
            returns.append(_param(parser, line))
            while parser.at_op(","):
                parser.advance()
                returns.append(_param(parser, line))
        if parser.at_op(":") and parser.peek().kind == "end":
            parser.advance()
        parser.expect_end()
    except ExpressionError as exc:
        raise Refused.from_expression(exc) from exc
    if not node.children:
        raise Refused(len(line.text), f"the flow `{name}` needs an indented block", "flow")
    steps = _block(node.children, ctx, loop=False)
    return FlowDef(
        name,
        line.number,
        "flow",
        steps,
        decorators=decorators,
        parameters=parameters,
        returns=returns,
    )


def _param(parser: Parser, line: Line) -> dict[str, Any]:
    tok = parser.tok
    if tok.kind != "var":
        raise parser.unexpected("a `$parameter`")
    parser.advance()
    default = None
    if parser.at_op("="):
        parser.advance()
        start = parser.tok.start
        parser.test()
        default = source_text(line, start, token_end(parser.tokens[parser.i - 1]))
    return {"name": tok.value, "default": default}


def _block(nodes: list[Node], ctx: ParseContext, *, loop: bool) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    i = 0
    failed_head = False  # an `if` / `when` that failed: its branches are not orphans
    while i < len(nodes):
        node = nodes[i]
        line = node.line
        i += 1
        if line.broken:
            continue
        head, failed_head = failed_head, False
        try:
            tokens = tokens_from(line, 0)
            first = tokens[0]
            word = first.text if first.kind == "name" else None
            is_branch = word in ("elif", "else") or (word == "or" and tokens[1].text == "when")
            if head and is_branch:
                failed_head = True
                continue
            if word == "if":
                step, i = _if_chain(nodes, i - 1, ctx, loop)
            elif word == "when":
                step, i = _when_chain(nodes, i - 1, ctx, loop)
            elif is_branch:
                raise Refused(0, f"`{first.text}` without an `if` or `when` before it", word)
            elif word == "while":
                test, text = parse_condition(line, token_end(first))
                _need_block(node, "while")
                step = {
                    "step": "while",
                    "line": line.number,
                    "test": text,
                    "_node": test,
                    "steps": _block(node.children, ctx, loop=True),
                }
            else:
                if node.children:
                    raise Refused(0, "this statement takes no indented block")
                step = _simple(line, tokens, loop)
            steps.append(step)
        except Refused as exc:
            ctx.error_at(line, exc.offset, exc.message, exc.construct)
            failed_head = line.text.split(None, 1)[0] in ("if", "when")
    return steps


def _need_block(node: Node, what: str) -> None:
    if not node.children:
        raise Refused(len(node.line.text), f"`{what}` needs an indented block", what)


def _keyword_line(node: Node) -> list[Token]:
    return tokens_from(node.line, 0)


def _if_chain(
    nodes: list[Node], i: int, ctx: ParseContext, loop: bool
) -> tuple[dict[str, Any], int]:
    head = nodes[i]
    first = _keyword_line(head)[0]
    test, text = parse_condition(head.line, token_end(first))
    _need_block(head, "if")
    branches = [
        {
            "line": head.line.number,
            "test": text,
            "_node": test,
            "steps": _block(head.children, ctx, loop=loop),
        }
    ]
    otherwise = None
    i += 1
    while i < len(nodes) and not nodes[i].line.broken:
        node = nodes[i]
        try:
            tokens = _keyword_line(node)
        except Refused:
            break
        if tokens[0].text == "elif" or (tokens[0].text == "else" and tokens[1].text == "if"):
            start = token_end(tokens[0] if tokens[0].text == "elif" else tokens[1])
            try:
                test, text = parse_condition(node.line, start)
                _need_block(node, "elif")
                branches.append(
                    {
                        "line": node.line.number,
                        "test": text,
                        "_node": test,
                        "steps": _block(node.children, ctx, loop=loop),
                    }
                )
            except Refused as exc:
                ctx.error_at(node.line, exc.offset, exc.message, exc.construct)
            i += 1
            continue
        if tokens[0].text == "else":
            otherwise = _else(node, tokens, ctx, loop)
            i += 1
        break
    return {"step": "if", "line": head.line.number, "branches": branches, "else": otherwise}, i


def _else(node: Node, tokens: list[Token], ctx: ParseContext, loop: bool) -> dict[str, Any] | None:
    rest = tokens[1]
    if rest.kind == "op" and rest.text == ":":
        rest = tokens[2]
    if rest.kind != "end":
        ctx.error_at(node.line, rest.start, f"unexpected `{rest.text}` after `else`")
        return None
    if not node.children:
        ctx.error_at(node.line, len(node.line.text), "`else` needs an indented block", "else")
        return None
    return {"line": node.line.number, "steps": _block(node.children, ctx, loop=loop)}


def _when_chain(
    nodes: list[Node], i: int, ctx: ParseContext, loop: bool
) -> tuple[dict[str, Any], int]:
    head = nodes[i]
    tokens = _keyword_line(head)
    branches = [_when_branch(head, tokens, 1, ctx, loop)]
    otherwise = None
    i += 1
    while i < len(nodes) and not nodes[i].line.broken:
        node = nodes[i]
        try:
            tokens = _keyword_line(node)
        except Refused:
            break
        if tokens[0].text == "or" and tokens[1].text == "when":
            try:
                branches.append(_when_branch(node, tokens, 2, ctx, loop))
            except Refused as exc:
                ctx.error_at(node.line, exc.offset, exc.message, exc.construct)
            i += 1
            continue
        if tokens[0].text == "else" and tokens[1].text == "when":
            ctx.error_at(
                node.line, 0, "`else when` is Colang 1.0: Colang 2.x writes `or when`", "else when"
            )
            i += 1
            continue
        if tokens[0].text == "else":
            otherwise = _else(node, tokens, ctx, loop)
            i += 1
        break
    step = {"step": "when", "line": head.line.number, "branches": branches, "else": otherwise}
    return step, i


def _when_branch(
    node: Node, tokens: list[Token], skip: int, ctx: ParseContext, loop: bool
) -> dict[str, Any]:
    line = node.line
    parser = _SpecParser(Parser(tokens), line)
    parser.p.i = skip
    if parser.p.at_op(":"):
        raise parser_error(parser.p, "an event")
    start = parser.p.tok.start
    event = parser.statement("when")
    _need_block(node, "when")
    return {
        "line": line.number,
        "text": source_text(line, start, strip_colon(line)),
        "event": event,
        "steps": _block(node.children, ctx, loop=loop),
    }


def _simple(line: Line, tokens: list[Token], loop: bool) -> dict[str, Any]:
    first = tokens[0]
    n = line.number
    word = first.text if first.kind == "name" else None
    nxt = tokens[1]
    if first.kind == "op" and first.text == "...":
        raise Refused(0, "`...` (flows the model writes) is not supported in a rulebook", "...")
    if first.kind == "string":
        raise Refused(0, "a text alone is not a statement")
    if word is not None and nxt.kind == "op" and nxt.text == ":" and tokens[2].kind == "end":
        raise Refused(0, "labels are not supported", "label")
    if word in ("abort", "break", "continue", "pass") and nxt.kind == "end":
        if word in ("break", "continue") and not loop:
            raise Refused(0, f"`{word}` outside a `while` loop", word)
        return {"step": word, "line": n}
    if word == "return":
        value = None
        if nxt.kind != "end":
            parse_condition(line, nxt.start)
            value = source_text(line, nxt.start, len(line.text))
        return {"step": "return", "line": n, "value": value}
    if word == "global" and nxt.kind == "var" and tokens[2].kind == "end":
        return {"step": "global", "line": n, "variable": nxt.value}
    if word in _NO_OP[1:] and nxt.kind != "end":
        parse_condition(line, nxt.start)
        return {"step": word, "line": n, "value": source_text(line, nxt.start, len(line.text))}
    if first.kind == "var" and nxt.kind == "op" and nxt.text in ("=", "+=", "-="):
        return _assignment(line, tokens)
    parser = _SpecParser(Parser(tokens), line)
    return parser.statement(None)


def _assignment(line: Line, tokens: list[Token]) -> dict[str, Any]:
    var, op, rhs = tokens[0], tokens[1], tokens[2]
    n = line.number
    if rhs.kind == "end":
        raise Refused(op.start + len(op.text), "a value is missing after the `=`")
    if rhs.kind == "op" and rhs.text == "...":
        raise Refused(rhs.start, "`...` (a value the model writes) is not supported", "...")
    is_spec = rhs.kind == "name" and (
        rhs.text in SPEC_OPERATORS or not (tokens[3].kind == "op" and tokens[3].text == "(")
    )
    if rhs.kind == "name" and rhs.text in ("True", "False", "None", "not"):
        is_spec = False
    if is_spec:
        if op.text != "=":
            raise Refused(op.start, f"`{op.text}` with a flow or an action is not supported")
        parser = _SpecParser(Parser(tokens), line)
        parser.p.i = 2
        step = parser.statement(None)
        return _bind_result(step, var, line)
    node, text = parse_condition(line, rhs.start)
    return {
        "step": "set",
        "line": n,
        "variable": var.value,
        "operator": op.text,
        "expression": text,
        "_node": node,
        "generated": False,
    }


def _bind_result(step: dict[str, Any], var: Token, line: Line) -> dict[str, Any]:
    if step["step"] == "group":
        raise Refused(var.start, "assigning the result of `and` / `or` specs is not supported")
    step["result"] = var.value
    return step


class _SpecParser:
    """Specs (flows, actions, events) and their operators, over one line's tokens."""

    def __init__(self, parser: Parser, line: Line) -> None:
        self.p = parser
        self.line = line
        self.depth = 0

    def statement(self, context: str | None) -> dict[str, Any]:
        p = self.p
        op = "await"
        if context == "when":
            op = "when"
        elif p.at("name") and p.tok.text in SPEC_OPERATORS and p.peek().kind != "end":
            nxt = p.peek()
            if not (nxt.kind == "op" and nxt.text in ("(", ".", "=")):
                op = p.advance().text
        try:
            step = self.expr(op)
            if p.at_op(":") and p.peek().kind == "end":
                p.advance()
            p.expect_end()
        except ExpressionError as exc:
            raise Refused.from_expression(exc) from exc
        return step

    def expr(self, op: str) -> dict[str, Any]:
        items = [self.conj(op)]
        while self.p.at_word("or"):
            self.p.advance()
            items.append(self.conj(op))
        return items[0] if len(items) == 1 else self._group("or", op, items)

    def conj(self, op: str) -> dict[str, Any]:
        items = [self.atom(op)]
        while self.p.at_word("and"):
            self.p.advance()
            items.append(self.atom(op))
        return items[0] if len(items) == 1 else self._group("and", op, items)

    def _group(self, mode: str, op: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        return {"step": "group", "line": items[0]["line"], "op": op, "mode": mode, "items": items}

    def atom(self, op: str) -> dict[str, Any]:
        p = self.p
        if p.at_op("("):
            self.depth += 1
            if self.depth > MAX_SPEC_DEPTH:
                raise ExpressionError(p.tok.start, "the specs nest too deeply")
            p.advance()
            inner = self.expr(op)
            p.expect_op(")")
            self.depth -= 1
            return inner
        return self.spec(op)

    def _name_word(self) -> bool:
        p = self.p
        tok = p.tok
        if tok.kind != "name":
            return False
        if tok.text in ("and", "or"):
            return False
        return not (tok.text == "as" and p.peek().kind == "var")

    def spec(self, op: str) -> dict[str, Any]:
        p = self.p
        start = p.tok
        n = self.line.pos(start.start)[0]
        if start.kind == "var":
            p.advance()
            members = self._members()
            step: dict[str, Any] = {
                "step": "event",
                "line": n,
                "op": op,
                "event": "$" + start.value + "".join("." + m for m in members),
            }
            self._capture(step)
            return step
        words: list[str] = []
        while self._name_word():
            words.append(p.advance().text)
        if not words:
            raise p.unexpected("a flow, action or event name")
        name = " ".join(words)
        args = Arguments()
        if p.at_op("("):
            args = classic_arguments(p, self.line)
        else:
            self._simple_arguments(args)
        members = self._members()
        step = self._classify(op, name, args, members, start.start, n)
        self._capture(step)
        return step

    def _simple_arguments(self, args: Arguments) -> None:
        p = self.p
        while p.tok.kind in _EXPR_START or p.at_op("[", "{", "-"):
            tok = p.tok
            name = None
            if tok.kind == "var" and p.peek().kind == "op" and p.peek().text == "=":
                name = tok.value
                p.advance()
                p.advance()
            begin = p.tok.start
            node = p.arith()
            end = token_end(p.tokens[p.i - 1])
            args.add(name, node, source_text(self.line, begin, end), tok.start)

    def _members(self) -> list[str]:
        p = self.p
        members: list[str] = []
        while p.at_op(".") and p.peek().kind == "name":
            p.advance()
            member = p.advance().text
            if p.at_op("("):
                margs = classic_arguments(p, self.line)
                inner = ", ".join(f"{k}={t}" for k, t in margs.texts.items())
                member += f"({inner})"
            members.append(member)
        return members

    def _capture(self, step: dict[str, Any]) -> None:
        p = self.p
        if p.at_word("as") and p.peek().kind == "var":
            p.advance()
            step["capture"] = p.advance().value

    def _classify(
        self,
        op: str,
        name: str,
        args: Arguments,
        members: list[str],
        at: int,
        n: int,
    ) -> dict[str, Any]:
        words = name.split(" ")
        calls = op in ("await", "start", "activate", "when")
        texts = dict(sorted(args.texts.items()))
        if name.islower():
            if words[0] == "execute" and len(words) == 2:
                return tool_step(self.line, words[1], "execute", args, at, op=op)
            if words[0] == "bot" and len(words) == 2 and words[1].startswith("execute_"):
                tool = words[1][len("execute_") :]
                if not tool:
                    raise Refused(at, "`bot execute_` needs a tool name")
                return tool_step(self.line, tool, "bot execute", args, at, op=op)
            step: dict[str, Any] = {"line": n, "op": op}
            if words[0] in ("user", "bot") and len(words) > 1:
                who = words[0]
                step["step"] = who
                rest = " ".join(words[1:])
                said = "said" if who == "user" else "say"
                if rest == said and "$0" in args.nodes and len(args.nodes) == 1:
                    node = args.nodes["$0"]
                    if isinstance(node.get("value"), str):
                        step["text"] = node["value"]
                    else:
                        step["expression"] = args.texts["$0"]
                elif who == "user" and rest == "said something":
                    step["any"] = True
                else:
                    step["intent" if who == "user" else "message"] = rest
                    if texts:
                        step["arguments"] = texts
            else:
                step["step"] = "call" if calls else "event"
                step["flow" if calls else "event"] = name
                if texts:
                    step["arguments"] = texts
            if members:
                step["members"] = members
            if calls and not members:
                step["_calls"] = name
            return step
        if " " in name:
            raise Refused(
                at,
                f"`{name}` is neither a flow (words in lower case) nor an action or an event "
                "(one CamelCase word)",
                "spec name",
            )
        if is_action_name(name) and op in ("await", "start", "activate", "when"):
            return tool_step(
                self.line, action_tool_name(name), "action", args, at, op=op, action=name
            )
        if op == "send" and name.startswith("Start") and is_action_name(name[len("Start") :]):
            action = name[len("Start") :]
            return tool_step(
                self.line, action_tool_name(action), "send", args, at, op=op, action=action
            )
        step = {"step": "event", "line": n, "op": op, "event": name}
        if texts:
            step["arguments"] = texts
        if members:
            step["members"] = members
        return step
