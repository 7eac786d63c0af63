"""How large a rulebook may be, checked before any parser reads it.

The compiler's passes are linear or close to it, but linear in what an uploader chooses: a 1.9 MB
`.co` file on one line cost 470 MB, 40,000 flows 12.5 s of CPU, and a 412 KB XLSX inflated to
419 MB inside openpyxl. So every source is measured first, cheaply, and one over a limit is
refused with `rulebook_too_large` at the place where it went over:

- Colang: `MAX_COLANG_BYTES`, `MAX_LINES`, `MAX_LINE_LENGTH`, and `MAX_FLOWS` top-level
  `define` / `flow` blocks (counted on the lines, before parsing);
- rule sheets: the file's bytes (`rule_sheet.MAX_BYTES`), rows and columns (`rule_sheet`), each
  cell's length (`MAX_CELL_LENGTH`), and for an XLSX (a zip) its members: at most
  `MAX_XLSX_MEMBERS`, none over `MAX_XLSX_MEMBER_BYTES` and all together at most
  `MAX_XLSX_UNCOMPRESSED` once inflated, read from the zip's directory before openpyxl opens it.
  Python's zip reader never inflates a member past the size its directory declares (a member
  that lies fails its CRC), so the declared sizes are a bound.
"""

from __future__ import annotations

import io
import zipfile

from .errors import TOO_LARGE, CompileError

MAX_COLANG_BYTES = 1_000_000
MAX_LINES = 20_000
MAX_LINE_LENGTH = 4_000
MAX_FLOWS = 2_000
MAX_CELL_LENGTH = 4_000
MAX_XLSX_MEMBERS = 1_000
MAX_XLSX_MEMBER_BYTES = 20_000_000
MAX_XLSX_UNCOMPRESSED = 40_000_000


def _error(
    message: str,
    filename: str,
    line: int | None = None,
    column: int | None = None,
    field: str | None = None,
) -> CompileError:
    return CompileError(TOO_LARGE, message, filename, line, column, construct="size", field=field)


def colang_problems(data: bytes, text: str, filename: str) -> list[CompileError]:
    """Why a Colang source is too large to parse (empty when it is not); `text` is `data` decoded."""
    if len(data) > MAX_COLANG_BYTES:
        return [_error(f"a Colang file is at most {MAX_COLANG_BYTES:,} bytes", filename)]
    blocks = 0
    in_doc: str | None = None
    for number, raw in enumerate(text.split("\n"), start=1):
        if number > MAX_LINES:
            return [_error(f"a Colang file has at most {MAX_LINES:,} lines", filename, number)]
        if len(raw) > MAX_LINE_LENGTH:
            return [
                _error(
                    f"the line is {len(raw):,} characters long, more than {MAX_LINE_LENGTH:,}",
                    filename,
                    number,
                    column=MAX_LINE_LENGTH + 1,
                )
            ]
        stripped = raw.strip()
        if in_doc is not None:
            in_doc = None if in_doc in stripped else in_doc
            continue
        if stripped.startswith(('"""', "'''")):
            in_doc = stripped[:3] if stripped.find(stripped[:3], 3) == -1 else None
            continue
        if not stripped or raw[0] in " \t":
            continue
        if stripped.split(None, 1)[0] in ("define", "flow"):
            blocks += 1
            if blocks > MAX_FLOWS:
                return [
                    _error(
                        f"a Colang file has at most {MAX_FLOWS:,} `define` and `flow` blocks",
                        filename,
                        number,
                        column=1,
                    )
                ]
    return []


def xlsx_problems(data: bytes, filename: str) -> list[CompileError]:
    """Why an XLSX workbook is too large to open (empty when it is not, or is no zip at all:
    openpyxl then says it is not a workbook)."""
    try:
        members = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return []
    sheet = {"field": ""}  # located like a rule sheet's other whole-file errors
    if len(members) > MAX_XLSX_MEMBERS:
        return [
            _error(f"the workbook holds more than {MAX_XLSX_MEMBERS:,} parts", filename, **sheet)
        ]
    total = 0
    for member in members:
        if member.file_size > MAX_XLSX_MEMBER_BYTES:
            return [
                _error(
                    f"the workbook's part `{member.filename}` inflates to {member.file_size:,} "
                    f"bytes, more than {MAX_XLSX_MEMBER_BYTES:,}",
                    filename,
                    **sheet,
                )
            ]
        total += member.file_size
    if total > MAX_XLSX_UNCOMPRESSED:
        return [
            _error(
                f"the workbook inflates to {total:,} bytes, more than {MAX_XLSX_UNCOMPRESSED:,}",
                filename,
                **sheet,
            )
        ]
    return []
