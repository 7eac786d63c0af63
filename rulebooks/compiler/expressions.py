"""The condition language: a tokenizer and a precedence-climbing parser, with no `eval`.

How it works. `tokenize` turns a line (or a cell of a rule sheet) into tokens with their
offsets. `Parser` reads them with one function per precedence level, lowest first (the table
below), and builds a plain-JSON tree, so a compiled record can carry it and the gate can
evaluate it without parsing anything at decision time.

Grammar (lowest binding first)::

    test       := or_test
    or_test    := and_test ("or" and_test)*
    and_test   := not_test ("and" not_test)*
    not_test   := "not" not_test | comparison
    comparison := arith [COMPARE arith]          # one comparison; chains are refused
    arith      := term (("+" | "-") term)*
    term       := factor (("*" | "/" | "//" | "%") factor)*
    factor     := ("-" | "+") factor | postfix
    postfix    := atom ("." NAME | "." METHOD "(" args ")" | "[" test "]")*
    atom       := NUMBER | STRING | True | False | None | $name | FUNCTION "(" args ")"
                | "(" test ")" | "[" items "]" | "{" key ":" value, ... "}"
                | NAME                            # rule sheets only: an argument, `results.x`

The two dialects differ only in what a bare name means: in Colang a bare name is an error
(variables are `$name`), in a rule sheet it is an argument of the call (`amount`), or
`results.<tool>.<field>` / `arguments.<name>`. `$name` in a rule sheet is a fact.

Nodes::

    {"value": v}  {"list": [n]}  {"dict": [[k, v]]}  {"var": name}  {"get": [base, key]}
    {"op": o, "args": [...]}   {"call": name, "args": [...]}   {"method": name, "args": [self, ...]}
    {"fact": name}  {"arg": name}  {"result": tool, "same": {..}, "match": {..}}
    {"unknown": name, "why": text}

Trade-offs: no slices, no lambdas, no comprehensions, no attribute access on anything but
data; only the few pure functions in `FUNCTIONS` and methods in `METHODS` (`$r.get("k")`). What is not here is refused
with its offset, never guessed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

#: Binary operators by precedence level.
COMPARE_OPS = ("==", "!=", "<", "<=", ">", ">=", "in", "not in", "is", "is not")
ADD_OPS = ("+", "-")
MUL_OPS = ("*", "/", "//", "%")
#: Python operators the condition language leaves out on purpose.
UNSUPPORTED_OPS = ("**", "~", "|", "&", "^", "@", "<<", ">>", "!")
#: Pure functions a condition may call, with how many arguments each takes (min, max).
FUNCTIONS: dict[str, tuple[int, int]] = {
    "len": (1, 1),
    "abs": (1, 1),
    "min": (1, 8),
    "max": (1, 8),
    "str": (1, 1),
    "int": (1, 1),
    "float": (1, 1),
    "bool": (1, 1),
}
#: Pure methods a condition may call on a value, with how many arguments each takes.
METHODS: dict[str, tuple[int, int]] = {
    "get": (1, 2),
    "join": (1, 1),
    "lower": (0, 0),
    "upper": (0, 0),
    "strip": (0, 0),
    "startswith": (1, 1),
    "endswith": (1, 1),
}
CONSTANTS = {"True": True, "False": False, "None": None}
KEYWORDS = frozenset({"and", "or", "not", "in", "is"})
#: The most nodes one expression may have (keeps a pathological cell from costing much).
MAX_NODES = 2000
#: The deepest a tree may nest (parentheses, `not`, operator chains, field access).
MAX_DEPTH = 40

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<var>\$[^\W\d]\w*)
  | (?P<string>[rR]?(?:\"\"\"(?:[^\\]|\\.)*?\"\"\"|'''(?:[^\\]|\\.)*?'''
        |\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'))
  | (?P<number>(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][+-]?\d+)?)
  | (?P<name>[^\W\d]\w*)
  | (?P<op>\.\.\.|//|==|!=|<=|>=|<<|>>|->|\+=|-=|\*\*|[-+*/%<>()\[\]{},:.=@~|&^!])
    """,
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"'}


class ExpressionError(Exception):
    """A syntax error at an offset of the text being parsed."""

    def __init__(self, offset: int, message: str, construct: str | None = None) -> None:
        super().__init__(message)
        self.offset = offset
        self.message = message
        self.construct = construct


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # name, var, number, string, op, end
    text: str
    value: Any
    start: int


def _decode_string(body: str, raw: bool, offset: int) -> str:
    if raw or "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 >= len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            digits = body[i + 2 : i + 2 + width]
            if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ExpressionError(offset + i, f"`\\{nxt}` needs {width} hex digits")
            code = int(digits, 16)
            if code > 0x10FFFF:
                raise ExpressionError(offset + i, "the escape is not a character")
            out.append(chr(code))
            i += 2 + width
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)


def tokenize(text: str, start: int = 0, end: int | None = None) -> list[Token]:
    """Tokens of `text[start:end]`, offsets relative to `text`; an `end` token closes the list."""
    stop = len(text) if end is None else end
    pos = start
    out: list[Token] = []
    while pos < stop:
        match = _TOKEN.match(text, pos, stop)
        if match is None:
            ch = text[pos]
            if ch in "\"'":
                raise ExpressionError(pos, "the text is not closed")
            raise ExpressionError(pos, f"unexpected character `{ch}`")
        kind = match.lastgroup or ""
        raw = match.group()
        if kind == "ws":
            pos = match.end()
            continue
        if kind == "string":
            is_raw = raw[0] in "rR"
            body_text = raw[1:] if is_raw else raw
            quote = 3 if body_text[:3] in ('"""', "'''") else 1
            value: Any = _decode_string(body_text[quote:-quote], is_raw, pos + quote)
        elif kind == "number":
            clean = raw.replace("_", "")
            try:
                is_float = any(c in clean for c in ".eE")
                value = float(clean) if is_float else int(clean)
            except ValueError as exc:
                raise ExpressionError(pos, f"`{raw}` is not a number") from exc
            if isinstance(value, float) and not math.isfinite(value):
                raise ExpressionError(pos, f"`{raw}` is too large a number")
            if match.end() < stop and (text[match.end()].isalnum() or text[match.end()] == "_"):
                raise ExpressionError(pos, f"`{raw}{text[match.end()]}` is not a number")
        elif kind == "var":
            value = raw[1:]
        else:
            value = raw
        out.append(Token(kind, raw, value, pos))
        pos = match.end()
    out.append(Token("end", "", None, stop))
    return out


def literal(value: Any) -> dict[str, Any]:
    return {"value": value}


class Parser:
    """A cursor over tokens with one method per precedence level.

    `dialect` is `"colang"` or `"sheet"`; it decides what a bare name means.
    """

    def __init__(self, tokens: list[Token], dialect: str = "colang") -> None:
        self.tokens = tokens
        self.i = 0
        self.dialect = dialect
        self.nodes = 0
        self.depth = 0
        self.depths: dict[int, int] = {}
        self.keep: list[dict[str, Any]] = []  # keeps ids in `depths` unique while parsing

    # -- cursor -----------------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, ahead: int = 1) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != "end":
            self.i += 1
        return tok

    def at(self, kind: str, text: str | None = None) -> bool:
        tok = self.tok
        return tok.kind == kind and (text is None or tok.text == text)

    def at_op(self, *ops: str) -> bool:
        return self.tok.kind == "op" and self.tok.text in ops

    def at_word(self, *words: str) -> bool:
        return self.tok.kind == "name" and self.tok.text in words

    def expect_op(self, op: str) -> Token:
        if not self.at_op(op):
            raise self.unexpected(f"`{op}`")
        return self.advance()

    def unexpected(self, wanted: str | None = None) -> ExpressionError:
        tok = self.tok
        if tok.kind == "op" and tok.text in UNSUPPORTED_OPS:
            return ExpressionError(
                tok.start, f"the operator `{tok.text}` is not supported", "operator"
            )
        found = "the end of the line" if tok.kind == "end" else f"`{tok.text}`"
        if wanted:
            return ExpressionError(tok.start, f"expected {wanted} but found {found}")
        return ExpressionError(tok.start, f"unexpected {found}")

    def expect_end(self) -> None:
        if not self.at("end"):
            raise self.unexpected("the end of the expression")

    def _node(self, node: dict[str, Any]) -> dict[str, Any]:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ExpressionError(self.tok.start, "the expression is too long")
        children = node.get("args") or node.get("get") or node.get("list") or []
        if "dict" in node:
            children = [n for pair in node["dict"] for n in pair]
        depth = 1 + max((self.depths.get(id(c), 1) for c in children), default=0)
        if depth > MAX_DEPTH:
            raise ExpressionError(self.tok.start, "the expression nests too deeply")
        self.depths[id(node)] = depth
        self.keep.append(node)
        return node

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(self.tok.start, "the expression nests too deeply")

    # -- grammar ----------------------------------------------------------------------------
    def test(self) -> dict[str, Any]:
        self._enter()
        try:
            return self.or_test()
        finally:
            self.depth -= 1

    def or_test(self) -> dict[str, Any]:
        args = [self.and_test()]
        while self.at_word("or"):
            self.advance()
            args.append(self.and_test())
        return args[0] if len(args) == 1 else self._node({"op": "or", "args": args})

    def and_test(self) -> dict[str, Any]:
        args = [self.not_test()]
        while self.at_word("and"):
            self.advance()
            args.append(self.not_test())
        return args[0] if len(args) == 1 else self._node({"op": "and", "args": args})

    def not_test(self) -> dict[str, Any]:
        if self.at_word("not"):
            self.advance()
            self._enter()
            try:
                return self._node({"op": "not", "args": [self.not_test()]})
            finally:
                self.depth -= 1
        return self.comparison()

    def _compare_op(self) -> str | None:
        tok = self.tok
        if tok.kind == "op" and tok.text in ("==", "!=", "<", "<=", ">", ">="):
            return tok.text
        if tok.kind == "name" and tok.text == "in":
            return "in"
        if tok.kind == "name" and tok.text == "not" and self.peek().text == "in":
            return "not in"
        if tok.kind == "name" and tok.text == "is":
            return "is not" if self.peek().text == "not" else "is"
        return None

    def comparison(self) -> dict[str, Any]:
        left = self.arith()
        op = self._compare_op()
        if op is None:
            return left
        for _ in op.split():
            self.advance()
        right = self.arith()
        if self._compare_op() is not None:
            raise ExpressionError(
                self.tok.start,
                "a chain of comparisons is not supported: join them with `and`",
                "comparison chain",
            )
        return self._node({"op": op, "args": [left, right]})

    def arith(self) -> dict[str, Any]:
        node = self.term()
        while self.at_op(*ADD_OPS):
            op = self.advance().text
            node = self._node({"op": op, "args": [node, self.term()]})
        return node

    def term(self) -> dict[str, Any]:
        node = self.factor()
        while self.at_op(*MUL_OPS):
            op = self.advance().text
            node = self._node({"op": op, "args": [node, self.factor()]})
        return node

    def factor(self) -> dict[str, Any]:
        if self.at_op("-", "+"):
            op = "neg" if self.advance().text == "-" else "pos"
            self._enter()
            try:
                inner = self.factor()
            finally:
                self.depth -= 1
            if op == "neg" and "value" in inner and _is_number(inner["value"]):
                return literal(-inner["value"])
            return self._node({"op": op, "args": [inner]})
        if self.at_op(*UNSUPPORTED_OPS):
            raise self.unexpected()
        return self.postfix()

    def postfix(self) -> dict[str, Any]:
        node = self.atom()
        while True:
            if self.at_op("."):
                self.advance()
                if not self.at("name"):
                    raise self.unexpected("a field name")
                name = self.advance()
                if self.at_op("("):
                    node = self._method(node, name)
                else:
                    node = self._node({"get": [node, literal(name.text)]})
            elif self.at_op("["):
                self.advance()
                if self.at_op(":"):
                    raise ExpressionError(self.tok.start, "slices are not supported", "slice")
                key = self.test()
                if self.at_op(":"):
                    raise ExpressionError(self.tok.start, "slices are not supported", "slice")
                self.expect_op("]")
                node = self._node({"get": [node, key]})
            elif self.at_op("("):
                raise ExpressionError(self.tok.start, "this value cannot be called", "call")
            else:
                return node

    def atom(self) -> dict[str, Any]:
        tok = self.tok
        if tok.kind in ("number", "string"):
            self.advance()
            return self._node(literal(tok.value))
        if tok.kind == "var":
            self.advance()
            if self.dialect == "sheet":
                return self._node({"fact": tok.value})
            return self._node({"var": tok.value})
        if tok.kind == "op":
            if tok.text == "(":
                self.advance()
                inner = self.test()
                if self.at_op(","):
                    raise ExpressionError(self.tok.start, "tuples are not supported", "tuple")
                self.expect_op(")")
                return inner
            if tok.text == "[":
                return self._list()
            if tok.text == "{":
                return self._dict()
            if tok.text == "...":
                raise ExpressionError(
                    tok.start, "`...` (a value the model writes) is not supported here", "..."
                )
            raise self.unexpected("a value")
        if tok.kind == "name":
            if tok.text in CONSTANTS:
                self.advance()
                return self._node(literal(CONSTANTS[tok.text]))
            if tok.text in KEYWORDS:
                raise self.unexpected("a value")
            if self.peek().text == "(" and self.peek().kind == "op":
                return self._call()
            if self.dialect == "sheet":
                return self._sheet_name()
            raise ExpressionError(
                tok.start,
                f"`{tok.text}` is not a value: a variable is written `${tok.text}`",
                "name",
            )
        raise self.unexpected("a value")

    def _call(self) -> dict[str, Any]:
        name = self.advance()
        if name.text not in FUNCTIONS:
            raise ExpressionError(
                name.start, f"the function `{name.text}` is not supported", "function"
            )
        self.expect_op("(")
        args: list[dict[str, Any]] = []
        while not self.at_op(")"):
            if self.at("name") and self.peek().text == "=":
                raise ExpressionError(
                    self.tok.start, "named arguments to a function are not supported", "function"
                )
            args.append(self.test())
            if not self.at_op(","):
                break
            self.advance()
        self.expect_op(")")
        low, high = FUNCTIONS[name.text]
        if not low <= len(args) <= high:
            raise ExpressionError(
                name.start, f"`{name.text}` takes {low} to {high} arguments", "function"
            )
        return self._node({"call": name.text, "args": args})

    def _method(self, base: dict[str, Any], name: Token) -> dict[str, Any]:
        if name.text not in METHODS:
            raise ExpressionError(
                name.start, f"calling the method `{name.text}` is not supported", "method"
            )
        self.expect_op("(")
        args: list[dict[str, Any]] = []
        while not self.at_op(")"):
            args.append(self.test())
            if not self.at_op(","):
                break
            self.advance()
        self.expect_op(")")
        low, high = METHODS[name.text]
        if not low <= len(args) <= high:
            raise ExpressionError(
                name.start, f"`.{name.text}()` takes {low} to {high} arguments", "method"
            )
        return self._node({"method": name.text, "args": [base, *args]})

    def _list(self) -> dict[str, Any]:
        self.expect_op("[")
        items: list[dict[str, Any]] = []
        while not self.at_op("]"):
            items.append(self.test())
            if not self.at_op(","):
                break
            self.advance()
        self.expect_op("]")
        return self._node({"list": items})

    def _dict(self) -> dict[str, Any]:
        self.expect_op("{")
        pairs: list[list[dict[str, Any]]] = []
        while not self.at_op("}"):
            key = self.test()
            if self.at_op(",", "}") and not pairs:
                raise ExpressionError(self.tok.start, "sets `{...}` are not supported", "set")
            self.expect_op(":")
            pairs.append([key, self.test()])
            if not self.at_op(","):
                break
            self.advance()
        self.expect_op("}")
        return self._node({"dict": pairs})

    def _dotted(self) -> tuple[list[Token], int]:
        """A name followed by `.name` parts (a rule sheet's `results.get_order.status`)."""
        parts = [self.advance()]
        start = parts[0].start
        while (
            self.at_op(".")
            and self.peek().kind == "name"
            and not (self.peek(2).kind == "op" and self.peek(2).text == "(")
        ):
            self.advance()
            parts.append(self.advance())
        return parts, start

    def _sheet_name(self) -> dict[str, Any]:
        parts, start = self._dotted()
        head = parts[0].text
        if head == "results":
            if len(parts) < 2:
                raise ExpressionError(start, "`results` needs a tool: `results.<tool>.<field>`")
            node: dict[str, Any] = self._node({"result": parts[1].text, "same": {}, "match": {}})
            rest = parts[2:]
        elif head in ("arguments", "args"):
            if len(parts) < 2:
                raise ExpressionError(start, f"`{head}` needs a name: `{head}.<argument>`")
            node = self._node({"arg": parts[1].text})
            rest = parts[2:]
        else:
            node = self._node({"arg": head})
            rest = parts[1:]
        for part in rest:
            node = self._node({"get": [node, literal(part.text)]})
        return node


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_expression(text: str, *, dialect: str = "colang", start: int = 0) -> dict[str, Any]:
    """Parse a whole expression (raises `ExpressionError` with an offset into `text`)."""
    parser = Parser(tokenize(text, start), dialect)
    if parser.at("end"):
        raise ExpressionError(start, "an expression is missing")
    node = parser.test()
    parser.expect_end()
    return node


def depth(node: Any) -> int:
    """How deeply a tree nests (a literal is 1)."""
    deepest = 0
    stack = [(node, 1)]
    while stack:
        current, level = stack.pop()
        if isinstance(current, dict):
            deepest = max(deepest, level)
            for value in current.values():
                if isinstance(value, dict | list):
                    stack.append((value, level + 1))
        elif isinstance(current, list):
            for item in current:
                stack.append((item, level))
    return deepest


def facts_of(node: Any) -> list[str]:
    """The facts a resolved tree reads."""
    seen: dict[str, None] = {}

    def walk(n: Any) -> None:
        if isinstance(n, dict):
            if "fact" in n:
                seen.setdefault(n["fact"], None)
                return
            for value in n.values():
                walk(value)
        elif isinstance(n, list):
            for item in n:
                walk(item)

    walk(node)
    return list(seen)
