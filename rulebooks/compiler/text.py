"""Source text for the Colang parsers: decoding, logical lines and the indentation tree.

How it works. Colang, in both versions, is line-oriented and indentation-structured, so the two
parsers share this first pass:

1. `decode` turns bytes into text (UTF-8, an optional BOM) and normalises line ends.
2. `logical_lines` walks the physical lines once, character by character, tracking quotes so
   that a `#` inside a text is not a comment. It drops comments, blank lines and `\"\"\"` doc
   blocks, and joins a line to the next one when it ends with `\\`, with an open bracket, or with
   a trailing `or` / `and` word. Each logical line keeps a map from its text offsets back to
   (line, column) in the file, so every later error points at the right character.
3. `blocks` nests the lines by indentation into a tree (`Node`). Indentation is counted in
   spaces; a tab in indentation is refused, because its width is a guess.

Trade-offs: one pass, no backtracking, linear in the input. Errors found here (an unterminated
text, a tab, a bad dedent) are collected, and the offending line is dropped so that the
parsers can still report the errors of the lines after it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import UNSUPPORTED, CompileError

BRACKETS_OPEN = "([{"
BRACKETS_CLOSE = ")]}"
#: A logical line that ends with one of these words continues on the next line.
TRAILING_JOINERS = ("or", "and")
#: The deepest blocks may nest (a flow, then its `if`, then ...).
MAX_NESTING = 40
#: The most physical lines one logical line may span (keeps a stray bracket from eating a file).
MAX_JOINED = 200


def decode(source: bytes | str, filename: str) -> tuple[str, list[CompileError]]:
    """The source as text with `\\n` line ends, and any decoding error."""
    if isinstance(source, str):
        text = source
    else:
        try:
            text = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = source[: exc.start].count(b"\n") + 1
            column = exc.start - (source.rfind(b"\n", 0, exc.start) + 1) + 1
            error = CompileError(
                UNSUPPORTED,
                "the file is not UTF-8 text",
                filename,
                line,
                column,
                construct="encoding",
            )
            return "", [error]
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        return "", [CompileError(UNSUPPORTED, "the file contains a NUL character", filename, line)]
    return text, []


@dataclass(frozen=True, slots=True)
class Line:
    """One logical line: its text without indentation or comment, and where it came from."""

    number: int
    indent: int
    text: str
    #: (offset in `text`, physical line, column of that offset), ascending by offset.
    spans: tuple[tuple[int, int, int], ...]
    #: An error was reported on this line: the parsers skip it (and what is indented under it).
    broken: bool = False

    def pos(self, offset: int) -> tuple[int, int]:
        """The (line, column) in the file of an offset in `text`."""
        line, column, base = self.number, self.indent + 1, 0
        for start, span_line, span_column in self.spans:
            if start > offset:
                break
            base, line, column = start, span_line, span_column
        return line, column + (offset - base)


@dataclass(slots=True)
class Node:
    """A logical line and the lines indented under it."""

    line: Line
    children: list[Node] = field(default_factory=list)


ErrorSink = Callable[[int, int, str, str], None]


def _scan(text: str) -> tuple[str, int, str | None, int]:
    """Strip a trailing comment from one physical line's content.

    Returns the content, the bracket depth change, an error message (unterminated text) and the
    offset of that error.
    """
    quote: str | None = None
    depth = 0
    i = 0
    n = len(text)
    quote_start = 0
    while i < n:
        ch = text[i]
        if quote is not None:
            if ch == "\\":
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
            i += 1
            continue
        if ch == "#":
            return text[:i].rstrip(), depth, None, 0
        if ch in "\"'":
            triple = ch * 3
            quote = triple if text.startswith(triple, i) else ch
            quote_start = i
            i += len(quote)
            continue
        if ch in BRACKETS_OPEN:
            depth += 1
        elif ch in BRACKETS_CLOSE:
            depth -= 1
        i += 1
    if quote is not None:
        return text.rstrip(), depth, "the text is not closed on this line", quote_start
    return text.rstrip(), depth, None, 0


def logical_lines(text: str, error: ErrorSink, *, leading_joiners: bool = False) -> list[Line]:
    """The logical lines of `text`; `error(line, column, message, construct)` gets each problem.

    With `leading_joiners` (Colang 2.x), a line that starts with `and ` or `or ` (but not
    `or when`) continues the line before it.
    """
    physical = text.split("\n")
    out: list[Line] = []
    i = 0
    total = len(physical)
    while i < total:
        raw = physical[i]
        number = i + 1
        i += 1
        stripped = raw.lstrip(" \t")
        if not stripped.strip() or stripped.lstrip().startswith("#"):
            continue
        lead = raw[: len(raw) - len(stripped)]
        if stripped.startswith(('"""', "'''")):
            # A doc block: skip to the line that closes it.
            mark = stripped[:3]
            if stripped.find(mark, 3) == -1:
                while i < total and mark not in physical[i]:
                    i += 1
                if i >= total:
                    error(number, len(lead) + 1, "the doc block is not closed", "doc block")
                i += 1
            continue
        indent = len(lead)
        if "\t" in lead:
            error(number, lead.index("\t") + 1, "indentation with a tab is not supported", "tab")
            out.append(Line(number, indent, stripped.rstrip(), ((0, number, indent + 1),), True))
            continue
        content, depth, problem, at = _scan(stripped)
        if problem is not None:
            error(number, indent + at + 1, problem, "text")
            out.append(Line(number, indent, content, ((0, number, indent + 1),), True))
            continue
        if not content.strip():
            continue
        spans = [(0, number, indent + 1)]
        parts = [content]
        joined = 0
        failed = False
        while i < total and joined < MAX_JOINED:
            current = parts[-1]
            words = current.rsplit(None, 1)
            ends_joiner = len(words) == 2 and words[1] in TRAILING_JOINERS
            if not (current.endswith("\\") or depth > 0 or ends_joiner):
                break
            if current.endswith("\\"):
                parts[-1] = current[:-1].rstrip()
            nxt_raw = physical[i]
            nxt = nxt_raw.lstrip(" \t")
            nxt_number = i + 1
            i += 1
            joined += 1
            if not nxt or nxt.startswith("#"):
                if depth > 0 or current.endswith("\\"):
                    continue
                break
            more, more_depth, problem, at = _scan(nxt)
            col = len(nxt_raw) - len(nxt) + 1
            if problem is not None:
                error(nxt_number, col + at, problem, "text")
                failed = True
                break
            offset = sum(len(p) for p in parts) + len(parts)
            spans.append((offset, nxt_number, col))
            parts.append(more)
            depth += more_depth
        joined_text = " ".join(parts)
        if not failed and not joined_text.strip():
            continue  # nothing but a continuation mark (`\\` and blank lines): a blank line
        out.append(Line(number, indent, joined_text, tuple(spans), failed))
    if leading_joiners:
        out = _join_leading(out)
    return out


def _join_leading(lines: list[Line]) -> list[Line]:
    out: list[Line] = []
    for line in lines:
        head = line.text.split(None, 2)
        continues = (
            out
            and len(head) >= 2
            and head[0] in ("and", "or")
            and not (head[0] == "or" and head[1] == "when")
        )
        if continues:
            prev = out[-1]
            offset = len(prev.text) + 1
            shifted = tuple((offset + s, ln, col) for s, ln, col in line.spans)
            out[-1] = Line(
                prev.number,
                prev.indent,
                prev.text + " " + line.text,
                prev.spans + shifted,
                prev.broken or line.broken,
            )
        else:
            out.append(line)
    return out


def blocks(lines: list[Line], error: ErrorSink) -> list[Node]:
    """Nest logical lines by indentation; top-level lines must start in column 1."""
    root = Node(Line(0, -1, "", ()))
    # Each frame: (indentation of the block's lines, the node that owns the block).
    stack: list[tuple[int, Node]] = [(0, root)]
    for line in lines:
        if line.indent > stack[-1][0]:
            owner = stack[-1][1]
            if len(stack) > MAX_NESTING:
                error(
                    line.number,
                    line.indent + 1,
                    f"blocks nest more than {MAX_NESTING} deep",
                    "nesting",
                )
                continue
            if not owner.children:
                error(
                    line.number,
                    line.indent + 1,
                    "this line is indented but nothing opens a block",
                    "indentation",
                )
                continue
            parent = owner.children[-1]
            stack.append((line.indent, parent))
        elif line.indent < stack[-1][0]:
            while len(stack) > 1 and line.indent < stack[-1][0]:
                stack.pop()
            if line.indent != stack[-1][0]:
                error(
                    line.number,
                    line.indent + 1,
                    "this line's indentation does not match any block around it",
                    "indentation",
                )
                continue
        stack[-1][1].children.append(Node(line))
    return root.children
