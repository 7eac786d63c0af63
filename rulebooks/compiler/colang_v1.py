"""The Colang 1.0 parser: `define` blocks and flow statements into the shared step form.

How it works. `text.blocks` has already nested the file's logical lines by indentation. Each
top-level node must be a `define user`, `define bot`, `define [modifiers] flow` / `define
subflow`, or an `import`; anything else is refused with its line (NeMo Guardrails silently turns
stray top-level lines into a nameless flow; we do not). A flow body is parsed statement by
statement: the first word picks the form (`STATEMENTS`), and the rest of the line is read with
a small word scanner for names (intent and message names are free words: `ask for refund`) and
with the expression parser for arguments and conditions. `if` / `else if` / `else` and `when` /
`else when` are chained from consecutive siblings.

Supported forms (everything else is refused, naming the construct)::

    user <intent> [(k=v, ..) | with|for k=v, ..] [or user ...]   user "text"   user ...
    bot <message> ["text"] [(k=v) | with|for k=v]                  bot "text"    bot ...
    bot execute_<tool> [with k=v, ..]                              (a tool call)
    execute|exec|run <tool>[(k=v, ..)]        $r = execute <tool>(..)
    $v = <expr>   set $v = <expr>   $v += <expr>   $v -= <expr>   $v = ...  (model writes it)
    if / else if / else     when / else when (user ... | bot ...)     while <expr>
    event <Name>(k=v)       create|new|infer event <Name>(k=v)   (`Start<Tool>Action`: a tool)
    do <flow>   stop   abort   return [<expr>]   done   break   continue   pass   priority <n>
    define flow             (no name: an anonymous flow, `anonymous-<line>`)

Trade-offs: a statement that fails is reported and skipped, so one file yields all its errors;
an unknown word is an error, not an intent reference (NeMo accepts `frobnicate 3 ++ 4` in a
`define user` body as one).
"""

from __future__ import annotations

import re
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
from .expressions import ExpressionError, Parser, tokenize
from .text import Line, Node, blocks, logical_lines

FORMAT = "colang-1.0"
FLOW_MODIFIERS = frozenset(
    {
        "interruption",
        "repair",
        "test",
        "non-interruptable",
        "noninterruptable",
        "continuous",
        "recursive",
        "parallel",
        "extension",
        "sample",
        "response",
    }
)
#: Forms NeMo Guardrails knows that a rulebook does not support, each with its refusal.
REFUSED_STATEMENTS = {
    "any": "an `any` block is not supported in a rulebook",
    "label": "a `label` is not supported in a rulebook",
    "checkpoint": "a `checkpoint` is not supported in a rulebook",
    "goto": "`goto` is not supported in a rulebook",
    "go": "`go to` is not supported in a rulebook",
    "meta": "a `meta` block is not supported in a rulebook",
    "check": "`check` is not supported in a rulebook",
    "expect": "`expect` is not supported in a rulebook",
    "use": "`use` is not supported in a rulebook",
    "allow": "`allow` is not supported in a rulebook",
    "deny": "`deny` is not supported in a rulebook",
    "log": "`log` is not supported in a Colang 1.0 rulebook",
    "for": "a `for` loop is not supported in a rulebook",
    "foreach": "a `foreach` loop is not supported in a rulebook",
    "context": "`context` is not supported in a rulebook",
    "match": "`match` is Colang 2.x, but this file is read as Colang 1.0",
    "flow": "`flow` is Colang 2.x, but this file is read as Colang 1.0",
    "await": "`await` is Colang 2.x, but this file is read as Colang 1.0",
    "elif": "`elif` is Colang 2.x: Colang 1.0 writes `else if`",
}
_WORD = re.compile(r"\w[\w'.\-]*")
_NAME_EQ = re.compile(r"\s*[^\W\d]\w*\s*=(?!=)")
_EXECUTE = ("execute", "exec", "run")


class _Scanner:
    """A position in one line's text, for the free-word names of Colang 1.0."""

    def __init__(self, line: Line, pos: int) -> None:
        self.line = line
        self.text = line.text
        self.pos = pos

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text) or self.text[self.pos :].strip() == ":"

    def startswith(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.pos)

    def peek_word(self) -> str | None:
        self.skip()
        m = _WORD.match(self.text, self.pos)
        return m.group() if m else None

    def keyword_follows(self, word: str) -> bool:
        """`word` is the next word, followed by whitespace (not part of a longer name)."""
        self.skip()
        end = self.pos + len(word)
        return self.text.startswith(word, self.pos) and (
            end >= len(self.text) or self.text[end] in " \t"
        )

    def is_param_keyword(self) -> bool:
        for kw in ("with", "for"):
            if self.keyword_follows(kw):
                after = self.pos + len(kw)
                rest = self.text[after:]
                return rest.lstrip().startswith("$") or bool(_NAME_EQ.match(rest))
        return False

    def is_alternative(self, who: str) -> bool:
        if not self.keyword_follows("or"):
            return False
        rest = self.text[self.pos + 2 :].lstrip()
        return rest.startswith(who + " ") or rest == who

    def name(self, what: str) -> str:
        """Free words up to a parameter keyword, an `or user`, an `as $x`, `(` or a text."""
        words: list[str] = []
        while True:
            self.skip()
            if self.pos >= len(self.text) or self.text[self.pos] in "(\"'$:":
                break
            if self.is_param_keyword() or self.is_alternative("user") or self.is_alternative("bot"):
                break
            if self.keyword_follows("as") and self.text[self.pos + 2 :].lstrip().startswith("$"):
                break
            m = _WORD.match(self.text, self.pos)
            if m is None:
                raise Refused(self.pos, f"unexpected `{self.text[self.pos]}` in a {what} name")
            words.append(m.group())
            self.pos = m.end()
        if not words:
            raise Refused(self.pos, f"a {what} name is missing")
        return " ".join(words)

    def string(self) -> str:
        self.skip()
        tokens = tokens_from(self.line, self.pos)
        tok = tokens[0]
        if tok.kind != "string":
            raise Refused(self.pos, "expected a quoted text")
        self.pos = token_end(tok)
        return tok.value

    def parameters(self) -> Arguments:
        """`(k=v, ..)` or `with|for k=v, $x, ..` -- values stop before `or user`/`or bot`."""
        self.skip()
        try:
            tokens = tokenize(self.text, self.pos)
        except ExpressionError as exc:
            raise Refused.from_expression(exc) from exc
        parser = Parser(tokens)
        try:
            if parser.at_op("("):
                args = classic_arguments(parser, self.line)
            else:
                parser.advance()  # with / for
                args = Arguments()
                while True:
                    tok = parser.tok
                    if tok.kind == "var" and parser.peek().text != "=":
                        parser.advance()
                        args.add(tok.value, {"var": tok.value}, tok.text, tok.start)
                    elif tok.kind == "name" and parser.peek().text == "=":
                        parser.advance()
                        parser.advance()
                        start = parser.tok.start
                        node = parser.comparison()
                        end = token_end(parser.tokens[parser.i - 1])
                        args.add(tok.text, node, source_text(self.line, start, end), tok.start)
                    else:
                        raise parser.unexpected("a parameter `name=value`")
                    if not parser.at_op(","):
                        break
                    parser.advance()
        except ExpressionError as exc:
            raise Refused.from_expression(exc) from exc
        self.pos = parser.tok.start if parser.tok.kind != "end" else len(self.text)
        return args


def parse(text: str, ctx: ParseContext) -> Parsed:
    """Parse a Colang 1.0 file; errors go to `ctx`."""
    parsed = Parsed(FORMAT)
    lines = logical_lines(text, ctx.sink)
    defined: dict[str, int] = {}
    for node in blocks(lines, ctx.sink):
        line = node.line
        if line.broken:
            continue
        first = line.text.split(None, 1)[0]
        try:
            if first == "define":
                _define(node, ctx, parsed, defined)
            elif first in ("import", "include"):
                _import(node, parsed)
            elif first == "flow" or first.startswith("@"):
                raise Refused(
                    0, f"`{first}` is Colang 2.x, but this file is read as Colang 1.0", first
                )
            else:
                raise Refused(
                    0,
                    f"`{first}` outside any `define` block is not supported",
                    "top-level statement",
                )
        except Refused as exc:
            ctx.error_at(line, exc.offset, exc.message, exc.construct)
    return parsed


def _import(node: Node, parsed: Parsed) -> None:
    line = node.line
    parts = line.text.split(None, 1)
    if len(parts) != 2:
        raise Refused(0, f"`{parts[0]}` needs a name")
    if node.children:
        raise Refused(0, f"`{parts[0]}` takes no indented block")
    parsed.imports.append({"path": parts[1].strip().strip("\"'"), "line": line.number})


def _define(node: Node, ctx: ParseContext, parsed: Parsed, defined: dict[str, int]) -> None:
    line = node.line
    scan = _Scanner(line, len("define"))
    words: list[str] = []
    while True:
        word = scan.peek_word()
        if word is None or word in ("user", "bot", "flow", "subflow"):
            break
        if word not in FLOW_MODIFIERS:
            raise Refused(scan.pos, f"`define {word}` is not supported", f"define {word}")
        words.append(word)
        scan.pos += len(word)
    kind = scan.peek_word()
    if kind is None:
        raise Refused(scan.pos, "`define` needs `user`, `bot`, `flow` or `subflow`", "define")
    if words and kind not in ("flow", "subflow"):
        raise Refused(0, f"`{words[0]}` only modifies a flow", "define")
    scan.pos += len(kind)
    if scan.at_end() and kind in ("flow", "subflow"):
        name = f"anonymous-{line.number}"  # NeMo Guardrails names these from a hash
    elif scan.at_end():
        raise Refused(scan.pos, f"`define {kind}` needs a name", f"define {kind}")
    else:
        name = scan.name("flow" if kind in ("flow", "subflow") else "message")
    if not scan.at_end():
        raise Refused(scan.pos, f"unexpected text after the name `{name}`")
    if not node.children:
        raise Refused(
            0, f"`define {kind} {name}` needs an indented block", f"define {kind} without body"
        )
    if kind == "user":
        _examples(node, ctx, parsed.user_intents, name, "examples", "user")
    elif kind == "bot":
        _examples(node, ctx, parsed.bot_messages, name, "texts", "bot")
    else:
        if name in defined:
            raise Refused(
                scan.pos - len(name),
                f"the flow `{name}` is already defined on line {defined[name]}",
                "duplicate flow",
            )
        defined[name] = line.number
        steps = _block(node.children, ctx, loop=False)
        parsed.flows.append(FlowDef(name, line.number, kind, steps, modifiers=words))


def _examples(
    node: Node,
    ctx: ParseContext,
    into: dict[str, dict[str, Any]],
    name: str,
    key: str,
    who: str,
) -> None:
    entry = into.setdefault(name, {"name": name, key: [], "line": node.line.number})
    for child in node.children:
        line = child.line
        if line.broken:
            continue
        try:
            scan = _Scanner(line, 0)
            if not scan.startswith('"') and not scan.startswith("'"):
                raise Refused(
                    0,
                    f"each line of `define {who}` must be a quoted text",
                    f"define {who} body",
                )
            if child.children:
                raise Refused(0, "a quoted text takes no indented block")
            text = scan.string()
            if not scan.at_end():
                raise Refused(scan.pos, "unexpected text after the quoted text")
            entry[key].append(text)
        except Refused as exc:
            ctx.error_at(line, exc.offset, exc.message, exc.construct)


def _block(nodes: list[Node], ctx: ParseContext, *, loop: bool) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    i = 0
    failed_head = False  # an `if` / `when` that failed: its `else` branches are not orphans
    while i < len(nodes):
        node = nodes[i]
        line = node.line
        i += 1
        if line.broken:
            continue
        head = failed_head
        failed_head = False
        try:
            word = _first_word(line)
            failed_head = head and word == "else"
            if word == "if":
                step, i = _if_chain(nodes, i - 1, ctx, loop)
                steps.append(step)
            elif word == "when":
                step, i = _when_chain(nodes, i - 1, ctx, loop)
                steps.append(step)
            elif word == "else" and failed_head:
                continue
            elif word == "else":
                raise Refused(0, "`else` without an `if` or `when` before it", "else")
            elif word == "while":
                node_, text = parse_condition(line, len("while"))
                _need_block(node, "while")
                body = _block(node.children, ctx, loop=True)
                steps.append(
                    {
                        "step": "while",
                        "line": line.number,
                        "test": text,
                        "_node": node_,
                        "steps": body,
                    }
                )
            else:
                if word in REFUSED_STATEMENTS:
                    raise Refused(0, REFUSED_STATEMENTS[word], word)
                if node.children:
                    raise Refused(
                        0, f"`{word}` takes no indented block", f"{word} with indented block"
                    )
                steps.append(_simple(line, word, loop))
        except Refused as exc:
            ctx.error_at(line, exc.offset, exc.message, exc.construct)
            failed_head = line.text.split(None, 1)[0] in ("if", "when") or failed_head
    return steps


def _first_word(line: Line) -> str:
    text = line.text
    if text.startswith("$"):
        return "$"
    m = _WORD.match(text)
    if m is None:
        raise Refused(0, f"unexpected `{text[0]}` at the start of a statement")
    word = m.group()
    if word == "else":
        return "else"
    return word


def _need_block(node: Node, what: str) -> None:
    if not node.children:
        raise Refused(len(node.line.text), f"`{what}` needs an indented block", what)


def _if_chain(
    nodes: list[Node], i: int, ctx: ParseContext, loop: bool
) -> tuple[dict[str, Any], int]:
    head = nodes[i]
    node_, text = parse_condition(head.line, len("if"))
    _need_block(head, "if")
    branches = [
        {
            "line": head.line.number,
            "test": text,
            "_node": node_,
            "steps": _block(head.children, ctx, loop=loop),
        }
    ]
    otherwise = None
    i += 1
    while i < len(nodes) and not nodes[i].line.broken:
        line = nodes[i].line
        words = line.text.split(None, 2)
        if words[0] != "else" and words[0] != "else:":
            break
        if len(words) >= 2 and words[1] == "if":
            start = line.text.index("if", 4) + 2
            try:
                node_, text = parse_condition(line, start)
                _need_block(nodes[i], "else if")
            except Refused as exc:
                ctx.error_at(line, exc.offset, exc.message, exc.construct)
                i += 1
                continue
            branches.append(
                {
                    "line": line.number,
                    "test": text,
                    "_node": node_,
                    "steps": _block(nodes[i].children, ctx, loop=loop),
                }
            )
            i += 1
            continue
        if line.text.rstrip(":").strip() != "else":
            break
        try:
            _need_block(nodes[i], "else")
        except Refused as exc:
            ctx.error_at(line, exc.offset, exc.message, exc.construct)
        otherwise = {"line": line.number, "steps": _block(nodes[i].children, ctx, loop=loop)}
        i += 1
        break
    step = {"step": "if", "line": head.line.number, "branches": branches, "else": otherwise}
    return step, i


def _when_chain(
    nodes: list[Node], i: int, ctx: ParseContext, loop: bool
) -> tuple[dict[str, Any], int]:
    head = nodes[i]
    branches = [_when_branch(head, len("when"), ctx, loop)]
    i += 1
    while i < len(nodes) and not nodes[i].line.broken:
        line = nodes[i].line
        words = line.text.split(None, 2)
        if words[0] not in ("else", "else:"):
            break
        if len(words) >= 2 and words[1] == "when":
            start = line.text.index("when", 4) + 4
            try:
                branches.append(_when_branch(nodes[i], start, ctx, loop))
            except Refused as exc:
                ctx.error_at(line, exc.offset, exc.message, exc.construct)
            i += 1
            continue
        ctx.error_at(
            line,
            0,
            "`else` after `when` is not supported in Colang 1.0: write `else when ...`",
            "when else",
        )
        i += 1
        break
    return {"step": "when", "line": head.line.number, "branches": branches, "else": None}, i


def _when_branch(node: Node, start: int, ctx: ParseContext, loop: bool) -> dict[str, Any]:
    line = node.line
    scan = _Scanner(line, start)
    word = scan.peek_word()
    if word not in ("user", "bot"):
        raise Refused(
            scan.pos,
            "`when` supports `user ...` and `bot ...` only",
            f"when {word}" if word else "when",
        )
    head = scan.pos
    scan.pos += len(word)
    event = _message(scan, word)
    if not scan.at_end():
        raise Refused(scan.pos, "unexpected text after the `when` event")
    _need_block(node, "when")
    return {
        "line": line.number,
        "text": source_text(line, head, strip_colon(line)),
        "event": event,
        "steps": _block(node.children, ctx, loop=loop),
    }


def _simple(line: Line, word: str, loop: bool) -> dict[str, Any]:
    text = line.text.rstrip(":").rstrip()
    n = line.number
    if word in ("user", "bot"):
        scan = _Scanner(line, len(word))
        step = _message(scan, word)
        if not scan.at_end():
            raise Refused(scan.pos, f"unexpected text after the `{word}` step")
        return step
    if word in _EXECUTE:
        return _execute(line, len(word), result=None)
    if word == "$" or word == "set":
        return _assignment(line, 3 if word == "set" else 0)
    if word == "do":
        scan = _Scanner(line, 2)
        if scan.startswith("$"):
            raise Refused(
                scan.pos,
                "`do` with a flow a variable chooses is not supported: name the flow",
                "dynamic flow",
            )
        name = scan.name("flow")
        step: dict[str, Any] = {"step": "call", "line": n, "flow": name, "op": "do"}
        if not scan.at_end():
            if not scan.startswith("("):
                raise Refused(scan.pos, "unexpected text after the flow name")
            args = scan.parameters()
            step["arguments"] = dict(sorted(args.texts.items()))
            if not scan.at_end():
                raise Refused(scan.pos, "unexpected text after the arguments")
        return step
    if word in ("stop", "abort", "done", "break", "continue", "pass"):
        if text != word:
            raise Refused(len(word), f"`{word}` takes nothing after it")
        if word in ("break", "continue") and not loop:
            raise Refused(0, f"`{word}` outside a `while` loop", word)
        kind = "return" if word == "done" else word
        return {"step": kind, "line": n}
    if word == "return":
        rest = text[len("return") :].strip()
        step = {"step": "return", "line": n, "value": rest or None}
        if rest:
            parse_condition(line, len("return"))
        return step
    if word == "event":
        return _event(line, len("event"), "match")
    if word in ("create", "new", "infer"):
        rest = text[len(word) :].split(None, 1)
        if not rest or rest[0] != "event":
            raise Refused(0, f"`{word}` needs `event`: `{word} event <Name>`", word)
        return _event(line, text.index("event", len(word)) + len("event"), "create")
    if word == "priority":
        node, value = parse_condition(line, len("priority"))
        if "value" not in node or isinstance(node["value"], bool | str) or node["value"] is None:
            raise Refused(len("priority") + 1, "`priority` takes a number")
        return {"step": "priority", "line": n, "value": node["value"]}
    raise Refused(0, f"`{word}` is not a Colang 1.0 statement", word)


def _event(line: Line, start: int, op: str) -> dict[str, Any]:
    """`event Name(k=v)` (wait for it) or `create event Name(k=v)` (send it).

    Creating `Start<Tool>Action` starts that action, so it is a tool call, as in Colang 2.x.
    """
    tokens = tokens_from(line, start)
    parser = Parser(tokens)
    tok = parser.tok
    if tok.kind != "name":
        raise Refused(tok.start, "an event needs a name, like `UserSilent`")
    parser.advance()
    args = Arguments()
    try:
        if parser.at_op("("):
            args = classic_arguments(parser, line)
        if parser.at_op(":") and parser.peek().kind == "end":
            parser.advance()
        parser.expect_end()
    except ExpressionError as exc:
        raise Refused.from_expression(exc) from exc
    name = tok.text
    if op == "create" and name.startswith("Start") and is_action_name(name[len("Start") :]):
        action = name[len("Start") :]
        return tool_step(line, action_tool_name(action), "send", args, tok.start, action=action)
    step: dict[str, Any] = {"step": "event", "line": line.number, "op": op, "event": name}
    if args.texts:
        step["arguments"] = dict(sorted(args.texts.items()))
    return step


def _message(scan: _Scanner, who: str) -> dict[str, Any]:
    """`user ...` / `bot ...` after the keyword, with `or` alternatives."""
    items = [_one_message(scan, who)]
    while scan.is_alternative(who):
        scan.skip()
        scan.pos += 2
        scan.skip()
        scan.pos += len(who)
        items.append(_one_message(scan, who))
    if len(items) == 1:
        return items[0]
    return {"step": "group", "line": items[0]["line"], "mode": "or", "items": items}


def _one_message(scan: _Scanner, who: str) -> dict[str, Any]:
    line = scan.line
    scan.skip()
    at = scan.pos
    n = line.pos(at)[0]
    if scan.at_end():
        raise Refused(at, f"`{who}` needs an intent or a message")
    if scan.startswith("..."):
        scan.pos += 3
        return {"step": who, "line": n, "any": True}
    step: dict[str, Any] = {"step": who, "line": n}
    if scan.startswith("$"):
        if who == "user":
            raise Refused(at, "`user $variable` is not supported", "user $variable")
        tokens = tokens_from(line, at)
        parser = Parser(tokens)
        try:
            parser.postfix()
        except ExpressionError as exc:
            raise Refused.from_expression(exc) from exc
        end = token_end(parser.tokens[parser.i - 1])
        step["expression"] = source_text(line, at, end)
        scan.pos = end
        return step
    if scan.startswith('"') or scan.startswith("'"):
        step["text"] = scan.string()
    else:
        name = scan.name("intent" if who == "user" else "message")
        if who == "bot" and name.startswith("execute_") and " " not in name:
            tool = name[len("execute_") :]
            if not tool:
                raise Refused(at, "`bot execute_` needs a tool name")
            args = Arguments()
            if scan.startswith("(") or scan.is_param_keyword():
                args = scan.parameters()
            return tool_step(line, tool, "bot execute", args, at)
        step["intent" if who == "user" else "message"] = name
        if who == "bot" and (scan.startswith('"') or scan.startswith("'")):
            step["text"] = scan.string()
    if scan.keyword_follows("as"):
        raise Refused(scan.pos, f"capturing a {who} step with `as` is not supported", "as")
    if scan.startswith("(") or scan.is_param_keyword():
        args = scan.parameters()
        step["arguments"] = dict(sorted(args.texts.items()))
    return step


def _execute(line: Line, start: int, *, result: str | None) -> dict[str, Any]:
    tokens = tokens_from(line, start)
    parser = Parser(tokens)
    tok = parser.tok
    if tok.kind != "name":
        raise Refused(tok.start, "`execute` needs a tool name")
    name_start = tok.start
    parts = [parser.advance().text]
    while parser.at_op(".") and parser.peek().kind == "name":
        parser.advance()
        parts.append(parser.advance().text)
    tool = ".".join(parts)
    args = Arguments()
    try:
        if parser.at_op("("):
            args = classic_arguments(parser, line)
        if parser.at_op(":") and parser.peek().kind == "end":
            parser.advance()
        parser.expect_end()
    except ExpressionError as exc:
        raise Refused.from_expression(exc) from exc
    return tool_step(line, tool, "execute", args, name_start, result=result)


def _assignment(line: Line, start: int) -> dict[str, Any]:
    tokens = tokens_from(line, start)
    parser = Parser(tokens)
    var = parser.tok
    if var.kind != "var":
        raise Refused(var.start, "expected a `$variable`")
    parser.advance()
    op = parser.tok
    if not (op.kind == "op" and op.text in ("=", "+=", "-=")):
        raise Refused(op.start, "expected `=` after the variable")
    parser.advance()
    rhs = parser.tok
    n = line.number
    if rhs.kind == "op" and rhs.text == "..." and op.text == "=":
        if parser.peek().kind != "end":
            raise Refused(token_end(rhs), "unexpected text after `...`")
        return {
            "step": "set",
            "line": n,
            "variable": var.value,
            "operator": "=",
            "expression": None,
            "generated": True,
        }
    if rhs.kind == "name" and rhs.text in _EXECUTE and op.text == "=":
        return _execute(line, token_end(rhs), result=var.value)
    if rhs.kind == "name" and rhs.text == "do":
        raise Refused(rhs.start, "assigning the result of `do` is not supported", "$v = do")
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
