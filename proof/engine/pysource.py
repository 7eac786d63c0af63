"""Reading a tools module's `TOOLS` from its source text, without running it.

`stalwart verify` must not execute the code it verifies, so the module is parsed (`ast`) and
`TOOLS` is evaluated by a small static evaluator: literals, lists, tuples, dicts (with `**`
unpacking), `dict(key=value)`, unary `-`/`+`, `+` on lists, texts and numbers, `|` on dicts, and
names bound earlier in the module to such values. Anything else (a call, a comprehension, an
attribute, a name bound at run time) is refused with its line, never guessed: the caller then
knows the tools cannot be proved from source alone.

Each tool entry's line is kept: the line of its `"name"` key when it has one, else of the entry.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import SourceUnreadable

#: The largest module the reader parses (characters).
MAX_SOURCE = 2_000_000
#: How deep a value may nest before the reader gives up.
MAX_DEPTH = 64


@dataclass(frozen=True)
class ModuleTools:
    """A module's `TOOLS`: the entries, and the line of each."""

    path: str
    tools: tuple[Mapping[str, Any], ...]
    lines: tuple[int, ...]


class _Unsupported(Exception):
    def __init__(self, node: ast.AST, message: str) -> None:
        super().__init__(message)
        self.line = getattr(node, "lineno", None)
        self.message = message


class _Evaluator:
    def __init__(self, names: Mapping[str, Any]) -> None:
        self.names = names

    def value(self, node: ast.AST, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise _Unsupported(node, "the value nests too deeply")
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (str, int, float, bool)) or node.value is None:
                return node.value
            raise _Unsupported(node, "a constant of this type is not a JSON value")
        if isinstance(node, (ast.List, ast.Tuple)):
            out: list[Any] = []
            for item in node.elts:
                if isinstance(item, ast.Starred):
                    out.extend(self._sequence(self.value(item.value, depth + 1), item))
                else:
                    out.append(self.value(item, depth + 1))
            return out
        if isinstance(node, ast.Dict):
            result: dict[str, Any] = {}
            for key, item in zip(node.keys, node.values, strict=True):
                if key is None:
                    result.update(self._mapping(self.value(item, depth + 1), item))
                    continue
                name = self.value(key, depth + 1)
                if not isinstance(name, str):
                    raise _Unsupported(key, "a key that is not a text")
                result[name] = self.value(item, depth + 1)
            return result
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            raise _Unsupported(node, f"`{node.id}` is not bound to a literal earlier in the module")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.value(node.operand, depth + 1)
            if isinstance(operand, (int, float)) and not isinstance(operand, bool):
                return -operand if isinstance(node.op, ast.USub) else operand
            raise _Unsupported(node, "a sign on something that is not a number")
        if isinstance(node, ast.BinOp):
            return self._binary(node, depth)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "dict"
            and not node.args
            and "dict" not in self.names
        ):
            result = {}
            for keyword in node.keywords:
                if keyword.arg is None:
                    result.update(self._mapping(self.value(keyword.value, depth + 1), keyword))
                else:
                    result[keyword.arg] = self.value(keyword.value, depth + 1)
            return result
        if isinstance(node, ast.Call):
            raise _Unsupported(node, "a call")
        return self._refuse(node)

    def _refuse(self, node: ast.AST) -> Any:
        what = {
            ast.ListComp: "a list comprehension",
            ast.DictComp: "a dict comprehension",
            ast.Attribute: "an attribute",
            ast.Subscript: "a subscript",
            ast.Lambda: "a lambda",
            ast.JoinedStr: "an f-string",
            ast.IfExp: "a conditional expression",
        }.get(type(node), "an expression that is not a literal")
        raise _Unsupported(node, what)

    def _binary(self, node: ast.BinOp, depth: int) -> Any:
        left = self.value(node.left, depth + 1)
        right = self.value(node.right, depth + 1)
        if isinstance(node.op, ast.Add):
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            if _number(left) and _number(right):
                return left + right
        if isinstance(node.op, ast.BitOr) and isinstance(left, dict) and isinstance(right, dict):
            return {**left, **right}
        raise _Unsupported(node, "an operation the reader does not evaluate")

    @staticmethod
    def _sequence(value: Any, node: ast.AST) -> list[Any]:
        if isinstance(value, list):
            return value
        raise _Unsupported(node, "`*` on something that is not a list")

    @staticmethod
    def _mapping(value: Any, node: ast.AST) -> dict[str, Any]:
        if isinstance(value, dict):
            return value
        raise _Unsupported(node, "`**` on something that is not a dict")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _targets(statement: ast.stmt) -> list[tuple[str, ast.AST]]:
    if isinstance(statement, ast.Assign):
        names = [t.id for t in statement.targets if isinstance(t, ast.Name)]
        return [(name, statement.value) for name in names]
    if (
        isinstance(statement, ast.AnnAssign)
        and isinstance(statement.target, ast.Name)
        and statement.value is not None
    ):
        return [(statement.target.id, statement.value)]
    return []


def _entry_line(node: ast.AST) -> int:
    if isinstance(node, ast.Dict):
        for key in node.keys:
            if isinstance(key, ast.Constant) and key.value == "name":
                return key.lineno
    return getattr(node, "lineno", 1)


def parse_module(text: str, *, path: str) -> ast.Module:
    """Parse a module's text; raise `SourceUnreadable` naming the line of a syntax error."""
    if len(text) > MAX_SOURCE:
        raise SourceUnreadable(path, None, f"is larger than {MAX_SOURCE} characters")
    try:
        return ast.parse(text, filename=path)
    except SyntaxError as error:
        message = (error.msg or "invalid syntax").lower()
        raise SourceUnreadable(path, error.lineno, f"is not valid Python: {message}") from None
    except (ValueError, RecursionError, MemoryError):
        raise SourceUnreadable(path, None, "is not Python the reader can parse") from None


def read_tools(text: str, *, path: str, name: str = "TOOLS") -> ModuleTools:
    """The module's `TOOLS` list, read statically; raise `SourceUnreadable` saying why not."""
    module = parse_module(text, path=path)
    names: dict[str, Any] = {}
    evaluator = _Evaluator(names)
    found: ast.AST | None = None
    for statement in module.body:
        for target, value_node in _targets(statement):
            if target == name:
                found = value_node
                break
            try:
                names[target] = evaluator.value(value_node)
            except _Unsupported:
                names.pop(target, None)
        if found is not None:
            break
    if found is None:
        raise SourceUnreadable(path, None, f"defines no `{name}` list at the top of the module")
    try:
        tools = evaluator.value(found)
    except _Unsupported as error:
        raise SourceUnreadable(
            path,
            error.line,
            f"cannot read `{name}` without running the module: {error.message}",
        ) from None
    if not isinstance(tools, list):
        raise SourceUnreadable(path, getattr(found, "lineno", None), f"`{name}` is not a list")
    elements = found.elts if isinstance(found, (ast.List, ast.Tuple)) else []
    lines = [_entry_line(e) for e in elements if not isinstance(e, ast.Starred)]
    if len(lines) != len(tools):
        lines = [getattr(found, "lineno", 1)] * len(tools)
    return ModuleTools(path=path, tools=tuple(tools), lines=tuple(lines))
