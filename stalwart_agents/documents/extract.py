"""Text out of documents, as passages that keep their line: Markdown, text, HTML and PDF.

Each reader returns `Chunk(text, line, page)` passages in the order they stand in the file:

- **Markdown and text** (`.md`, `.markdown`, `.txt`, `.text`): a passage is a paragraph (lines up
  to a blank line); a list item or a heading stands alone (in text and PDF, a heading is a short
  first line with no final stop). Markdown's heading marks, list bullets
  and emphasis are taken off the text, which is otherwise kept as written.
- **HTML** (`.html`, `.htm`), with the standard library's `html.parser`: a passage is the text of a
  block element (`p`, `li`, `h1`-`h6`, `td`, `div`, ...), at the line its text starts; `script`,
  `style`, `template` and `head` hold nothing read.
- **PDF** (`.pdf`), with pypdf (the `documents` extra): each page's text, split into paragraphs
  like text, each at its page and its line within the page's text.

A passage longer than `MAX_PASSAGE` characters is cut at line ends into several.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from html.parser import HTMLParser

MAX_PASSAGE = 1200
TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".text"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
PDF_SUFFIXES = frozenset({".pdf"})
SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES

_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_EMPHASIS = re.compile(r"(\*\*|__|`)")
_BLOCKS = frozenset(
    "p li h1 h2 h3 h4 h5 h6 td th dt dd div section article blockquote pre br tr caption "
    "figcaption summary title".split()
)
_SKIPPED = frozenset({"script", "style", "template", "head", "noscript"})


class DocumentUnreadable(Exception):
    """A document whose text cannot be read (the message says why)."""


@dataclass(frozen=True)
class Chunk:
    """A passage: its text, the line it starts at (1-based) and its page (PDF only)."""

    text: str
    line: int
    page: int | None = None


def _cut(lines: list[tuple[int, str]], page: int | None) -> list[Chunk]:
    """Lines of one paragraph as passages no longer than `MAX_PASSAGE`."""
    out: list[Chunk] = []
    start, buffer = 0, []
    for number, text in lines:
        if buffer and sum(len(t) + 1 for t in buffer) + len(text) > MAX_PASSAGE:
            out.append(Chunk("\n".join(buffer), start, page))
            buffer = []
        if not buffer:
            start = number
        buffer.append(text[: MAX_PASSAGE * 2])
    if buffer:
        out.append(Chunk("\n".join(buffer), start, page))
    return out


def paragraphs(text: str, *, markdown: bool = False, page: int | None = None) -> list[Chunk]:
    """A text's paragraphs, list items and headings as passages, each at its first line."""
    out: list[Chunk] = []
    block: list[tuple[int, str]] = []
    fenced = False

    def close() -> None:
        if block:
            out.extend(_cut(block, page))
            block.clear()

    lines = text.splitlines()
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip()
        if markdown and line.lstrip().startswith("```"):
            fenced = not fenced
            close()
            continue
        if not line.strip():
            close()
            continue
        heading = markdown and not fenced and bool(_HEADING.match(line))
        following = lines[number] if number < len(lines) else ""
        if not markdown and not block and _looks_like_title(line, following):
            heading = True  # "Warranty" above its paragraph, in a text or a PDF's page
        item = not fenced and bool(_ITEM.match(line))
        if heading or item:
            close()
        if markdown and not fenced:
            line = _EMPHASIS.sub("", _HEADING.sub("", line))
        if item:
            line = _ITEM.sub("", line)
        block.append((number, line.strip()))
        if heading:
            close()
    close()
    return out


def _looks_like_title(line: str, following: str) -> bool:
    """A short line with no final stop, standing first in a block with more lines after it."""
    stripped = line.strip()
    if len(stripped) > 60 or stripped.endswith((".", "!", "?", ":", ";", ",")):
        return False
    return bool(following.strip())


class _Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.chunks: list[Chunk] = []
        self._parts: list[str] = []
        self._line = 0
        self._skipping = 0

    def _close(self) -> None:
        text = " ".join(" ".join(self._parts).split())
        if text:
            self.chunks.extend(_cut([(self._line, text)], None))
        self._parts = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in _SKIPPED:
            self._skipping += 1
        elif tag in _BLOCKS:
            self._close()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skipping = max(0, self._skipping - 1)
        elif tag in _BLOCKS:
            self._close()

    def handle_data(self, data: str) -> None:
        if self._skipping or not data.strip():
            return
        if not self._parts:
            offset = len(data) - len(data.lstrip())
            self._line = self.getpos()[0] + data[:offset].count("\n")
        self._parts.append(data)


def read_html(text: str) -> list[Chunk]:
    parser = _Html()
    parser.feed(text)
    parser.close()
    parser._close()
    return parser.chunks


def read_pdf(data: bytes, name: str) -> list[Chunk]:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError:
        raise DocumentUnreadable(
            f"`{name}` is a PDF, and reading PDFs needs the `documents` extra (pypdf)"
        ) from None
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise DocumentUnreadable(f"`{name}` is an encrypted PDF")
        out: list[Chunk] = []
        for number, page in enumerate(reader.pages, start=1):
            out.extend(paragraphs(page.extract_text() or "", page=number))
        return out
    except DocumentUnreadable:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as error:
        raise DocumentUnreadable(f"`{name}` is not a PDF pypdf can read: {error}") from None


def read_document(data: bytes, suffix: str, name: str) -> list[Chunk]:
    """The passages of a file's bytes, by its suffix; `DocumentUnreadable` when they cannot be."""
    suffix = suffix.lower()
    if suffix in PDF_SUFFIXES:
        return read_pdf(data, name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DocumentUnreadable(f"`{name}` is not UTF-8 text") from None
    if suffix in HTML_SUFFIXES:
        return read_html(text)
    if suffix in TEXT_SUFFIXES:
        return paragraphs(text, markdown=suffix in (".md", ".markdown"))
    raise DocumentUnreadable(f"`{name}` is not a kind of document read here")
