"""Rule sheets: a spreadsheet of rules (CSV or XLSX) compiled into the record.

The first row names the columns (English or Portuguese, any case, accents optional)::

    tool        the tool the row governs (required)
    condition   when the row applies, in the condition language (empty: always)
    decision    refuse, confirm or allow (a limit row may leave it empty: refuse)
    reason      the reason the gate gives (required, except on a limit row)
    at_most     a limit: at most this many calls per period ...
    spend       ... or at most this much spent per period, counting the call's `amount`
    per         the period of the limit: minute, hour, day, week, month
    amount      the argument a spend limit adds up (default `amount`)
    same        arguments that bind the row's `results.<tool>` reads to the checked call
    notes       ignored: for the people who read the sheet

A condition reads the call's arguments by bare name (`amount > 100`, or `arguments.amount`),
earlier tool results as `results.<tool>.<field>` (the most recent result of that tool; with
`same: order_id`, only one whose call had the checked call's `order_id`), and facts as `$name`.
It is parsed by `expressions.Parser` in its `sheet` dialect: comparisons, `and` / `or` / `not`,
arithmetic and a few pure functions; nothing is evaluated by Python.

Every error names its row and column (`row 4, column condition: ...`). CSV is read with the
standard library (`,`, `;` or tab, chosen by which one splits the header into known column
names); XLSX with openpyxl, from memory, refusing formulas (a rule is a value, not a
computation) and reading the sheet named `rules` (or `regras`), else the first one.

Sizes are bounded before and while reading (`rulebook_too_large`): the file's bytes
(`MAX_BYTES`), an XLSX's inflated parts (`limits.xlsx_problems`, before openpyxl opens the zip),
`MAX_ROWS` rows, `MAX_COLUMNS` columns (an XLSX is read no wider) and `limits.MAX_CELL_LENGTH`
characters per cell.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from .errors import TOO_LARGE, UNSUPPORTED, CompileError, RulebookUnsupported
from .expressions import ExpressionError, parse_expression
from .limits import MAX_CELL_LENGTH, xlsx_problems
from .record import new_record

FORMAT = "rule-sheet"
PERIODS = ("minute", "hour", "day", "week", "month")
DECISIONS = ("refuse", "confirm", "allow")
COLUMNS: dict[str, tuple[str, ...]] = {
    "tool": ("tool", "ferramenta"),
    "condition": ("condition", "when", "condicao", "quando"),
    "decision": ("decision", "decisao"),
    "reason": ("reason", "motivo"),
    "at_most": ("at_most", "no_maximo", "maximo"),
    "per": ("per", "period", "por", "periodo"),
    "spend": ("spend", "gasto"),
    "amount": ("amount", "valor"),
    "same": ("same", "mesmo"),
    "notes": ("notes", "note", "notas", "nota", "comment", "comentario"),
}
_ALIASES = {alias: name for name, aliases in COLUMNS.items() for alias in aliases}
MAX_BYTES = 5_000_000
MAX_ROWS = 10_000
MAX_COLUMNS = 64
_NAME = re.compile(r"[^\W\d][\w.\-]*")
_ARG = re.compile(r"[^\W\d]\w*")

Cell = Any
Row = tuple[int, list[Cell]]


class _Formula:
    """An XLSX cell that holds a formula: refused where the row is read, naming its column."""

    def __str__(self) -> str:
        return ""


def _normalise(header: str) -> str:
    text = unicodedata.normalize("NFKD", header.strip().lower())
    text = "".join(c for c in text if not unicodedata.combining(c))
    return re.sub(r"[\s\-]+", "_", text)


class _Sheet:
    """Collects the errors of one sheet, each located by row and column."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.errors: list[CompileError] = []
        self.columns: dict[int, str] = {}

    def error(
        self, row: int | None, column: int | None, message: str, code: str = UNSUPPORTED
    ) -> None:
        field = self.columns.get(column, f"{column + 1}") if column is not None else ""
        self.errors.append(
            CompileError(
                code,
                message,
                self.filename,
                row,
                None if column is None else column + 1,
                field=field,
            )
        )


def _read_csv(data: bytes, sheet: _Sheet) -> list[Row]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        sheet.error(None, None, "the file is not UTF-8 text")
        return []
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    best = ","
    best_score = -1
    for delimiter in (",", ";", "\t"):
        try:
            cells = next(csv.reader([first], delimiter=delimiter), [])
        except csv.Error:
            continue
        score = sum(1 for c in cells if _normalise(c) in _ALIASES)
        if score > best_score:
            best, best_score = delimiter, score
    rows: list[Row] = []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=best, strict=True)
    number = 0
    try:
        for cells in reader:
            number += 1
            if number > MAX_ROWS:
                sheet.error(number, None, f"a rule sheet has at most {MAX_ROWS} rows", TOO_LARGE)
                break
            if len(cells) > MAX_COLUMNS:
                message = f"a rule sheet has at most {MAX_COLUMNS} columns"
                sheet.error(number, None, message, TOO_LARGE)
                break
            rows.append((number, list(cells)))
    except csv.Error as exc:
        sheet.error(number + 1, None, f"the CSV cannot be read: {str(exc).lower()}")
    return rows


def _read_xlsx(data: bytes, sheet: _Sheet) -> list[Row]:
    too_large = xlsx_problems(data, sheet.filename)
    if too_large:
        sheet.errors.extend(too_large)
        return []
    try:
        from openpyxl import load_workbook

        book = load_workbook(io.BytesIO(data), read_only=True, data_only=False)
    except MemoryError:  # over the compile's memory budget: not a malformed file
        raise
    except Exception:  # a malformed upload: any failure to open it is a refusal
        sheet.error(None, None, "the file is not an XLSX workbook")
        return []
    try:
        names = {name.lower(): name for name in book.sheetnames}
        chosen = names.get("rules") or names.get("regras")
        worksheet = book[chosen] if chosen else book.worksheets[0]
        rows: list[Row] = []
        for number, cells in enumerate(worksheet.iter_rows(max_col=MAX_COLUMNS), start=1):
            if number > MAX_ROWS:
                sheet.error(number, None, f"a rule sheet has at most {MAX_ROWS} rows", TOO_LARGE)
                break
            values: list[Cell] = []
            for cell in cells:
                if getattr(cell, "data_type", None) == "f":
                    values.append(_Formula())
                else:
                    values.append(cell.value)
            rows.append((number, values))
        return rows
    except MemoryError:
        raise
    except Exception:  # a malformed upload: any failure to read it is a refusal
        sheet.error(None, None, "the XLSX workbook cannot be read")
        return []
    finally:
        book.close()


def _text(value: Cell) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _header(rows: list[Row], sheet: _Sheet) -> tuple[int, dict[int, str]] | None:
    for index, (number, cells) in enumerate(rows):
        if not any(_text(c) for c in cells):
            continue
        columns: dict[int, str] = {}
        seen: dict[str, int] = {}
        for col, cell in enumerate(cells):
            label = _text(cell)
            if not label:
                continue
            name = _ALIASES.get(_normalise(label))
            if name is None:
                known = ", ".join(COLUMNS)
                sheet.error(number, None, f"`{label}` is not a column of a rule sheet ({known})")
                continue
            if name in seen:
                sheet.error(number, None, f"the column `{name}` appears twice")
                continue
            seen[name] = col
            columns[col] = name
        for required in ("tool", "decision"):
            if required not in seen:
                sheet.error(number, None, f"the first row must name the column `{required}`")
        if any(isinstance(c, _Formula) for c in cells):
            sheet.error(number, None, "a formula is not a column name")
        sheet.columns = columns
        return index, columns
    sheet.error(None, None, "the sheet is empty: its first row must name the columns")
    return None


def _number(value: Cell) -> float | int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    text = _text(value) if isinstance(value, str) else None
    if not text:
        return None
    if "," in text:
        whole, _, frac = text.partition(",")
        if "." in text or "," in frac or len(frac) == 3:
            return None  # `1,000`: a thousands separator or a decimal comma -- never guessed
        text = f"{whole}.{frac}"
    try:
        return int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            return None
        return number if number == number and abs(number) != float("inf") else None


def _bind_results(node: Any, same: list[str]) -> Any:
    if isinstance(node, list):
        return [_bind_results(n, same) for n in node]
    if not isinstance(node, dict):
        return node
    if "result" in node:
        return {**node, "same": {arg: arg for arg in same}}
    return {k: _bind_results(v, same) for k, v in node.items()}


def _facts(node: Any, into: set[str]) -> None:
    if isinstance(node, dict):
        if "fact" in node:
            into.add(node["fact"])
            return
        for value in node.values():
            _facts(value, into)
    elif isinstance(node, list):
        for item in node:
            _facts(item, into)


def _rule(number: int, cells: dict[str, tuple[int, Cell]], sheet: _Sheet) -> dict[str, Any] | None:
    before = len(sheet.errors)

    def cell(name: str) -> tuple[int | None, Cell]:
        col, value = cells.get(name, (None, None))
        return col, value

    col, value = cell("tool")
    tool = _text(value)
    if not tool:
        sheet.error(number, col, "a rule needs a tool")
    elif not _NAME.fullmatch(tool):
        sheet.error(number, col, f"`{tool}` is not a tool name")

    col, value = cell("at_most")
    at_most: int | None = None
    if _text(value):
        n = _number(value)
        if n is None or n < 0 or n != int(n):
            sheet.error(number, col, f"`{_text(value)}` is not a whole number of calls")
        else:
            at_most = int(n)

    col, value = cell("spend")
    spend: float | int | None = None
    if _text(value):
        n = _number(value)
        if n is None or n < 0:
            sheet.error(number, col, f"`{_text(value)}` is not an amount")
        else:
            spend = n
    limit = bool(_text(cell("at_most")[1]) or _text(cell("spend")[1]))
    if at_most is not None and spend is not None:
        sheet.error(number, cells["spend"][0], "a row limits either calls (`at_most`) or spend")

    col, value = cell("per")
    per = _text(value).lower() or None
    if per is not None and per not in PERIODS:
        periods = ", ".join(PERIODS)
        sheet.error(number, col, f"`{_text(value)}` is not a period ({periods})")
    elif per is None and limit:
        sheet.error(number, cells.get("per", (None,))[0], "a limit needs a period in `per`")
    elif per is not None and not limit:
        sheet.error(number, col, "`per` needs `at_most` or `spend` on the same row")

    col, value = cell("decision")
    decision = _text(value).lower()
    if not decision and limit:
        decision = "refuse"
    if decision not in DECISIONS:
        shown = f"`{_text(value)}`" if _text(value) else "an empty decision"
        sheet.error(number, col, f"{shown} is not refuse, confirm or allow")
    elif decision == "allow" and limit:
        sheet.error(number, col, "a limit refuses or confirms the call that passes it, not allow")

    col, value = cell("reason")
    reason = _text(value)
    if not reason and not limit:
        sheet.error(number, col, "a rule needs a reason: the gate gives it when the rule fires")
    elif "\n" in reason or len(reason) > 200:
        sheet.error(number, col, "a reason is one line of at most 200 characters")

    col, value = cell("amount")
    amount = _text(value) or None
    if amount is not None and (spend is None or not _ARG.fullmatch(amount)):
        what = "an argument name" if spend is not None else "only used with `spend`"
        sheet.error(number, col, f"`{amount}` in `amount`: {what}")

    col, value = cell("same")
    same = [s.strip() for s in _text(value).split(",") if s.strip()]
    for arg in same:
        if not _ARG.fullmatch(arg):
            sheet.error(number, col, f"`{arg}` is not an argument name")

    col, value = cell("condition")
    condition = _text(value) or None
    test = None
    if condition is not None:
        try:
            test = parse_expression(condition, dialect="sheet")
        except ExpressionError as exc:
            sheet.error(number, col, f"{exc.message} (at character {exc.offset + 1})")
        else:
            test = _bind_results(test, same) if same else test
    if len(sheet.errors) > before:
        return None
    return {
        "row": number,
        "tool": tool,
        "condition": condition,
        "test": test,
        "decision": decision,
        "reason": reason,
        "at_most": at_most,
        "per": per,
        "spend": spend,
        "amount": (amount or "amount") if spend is not None else None,
        "same": same,
    }


def rules_from_rows(rows: Iterable[Row], sheet: _Sheet) -> list[dict[str, Any]]:
    rows = list(rows)
    found = _header(rows, sheet)
    if found is None:
        return []
    index, columns = found
    if sheet.errors:
        return []
    rules: list[dict[str, Any]] = []
    for number, cells in rows[index + 1 :]:
        if not any(_text(c) or isinstance(c, _Formula) for c in cells):
            continue
        named: dict[str, tuple[int, Cell]] = {}
        skip = False
        for col, value in enumerate(cells):
            name = columns.get(col)
            if isinstance(value, str) and len(value) > MAX_CELL_LENGTH:
                message = f"a cell holds at most {MAX_CELL_LENGTH:,} characters"
                sheet.error(number, col, message, TOO_LARGE)
                skip = True
            elif isinstance(value, _Formula):
                sheet.error(number, col, "a formula is not a rule: write its value")
                skip = True
            elif name is not None:
                named[name] = (col, value)
            elif _text(value):
                sheet.error(number, col, "this cell is in a column without a name")
        if skip:  # a formula or an oversized cell: the row is not read further
            continue
        if not any(_text(named[n][1]) for n in named if n != "notes"):
            continue
        rule = _rule(number, named, sheet)
        if rule is not None:
            rules.append(rule)
    return rules


def compile_rule_sheet(data: bytes, *, filename: str) -> dict[str, Any]:
    """Compile a rule sheet (`.csv` or `.xlsx`, by `filename`) into its record."""
    sheet = _Sheet(filename)
    if not isinstance(data, bytes | bytearray):
        raise TypeError("a rule sheet is given as bytes")
    data = bytes(data)
    if len(data) > MAX_BYTES:
        sheet.error(None, None, f"a rule sheet is at most {MAX_BYTES} bytes", TOO_LARGE)
        raise RulebookUnsupported(sheet.errors)
    lowered = filename.lower()
    if lowered.endswith(".xlsx"):
        rows = _read_xlsx(data, sheet)
    elif lowered.endswith(".csv"):
        rows = _read_csv(data, sheet)
    else:
        sheet.error(None, None, "a rule sheet is a `.csv` or an `.xlsx` file")
        raise RulebookUnsupported(sheet.errors)
    rules = rules_from_rows(rows, sheet) if not sheet.errors else []
    if sheet.errors:
        raise RulebookUnsupported(sheet.errors)
    tools: dict[str, dict[str, Any]] = {}
    facts: set[str] = set()
    for rule in rules:
        tool = rule.pop("tool")
        _facts(rule["test"], facts)
        tools.setdefault(tool, {"routes": [], "rules": []})["rules"].append(rule)
    return new_record(
        FORMAT,
        filename=filename,
        policy_sha256=hashlib.sha256(data).hexdigest(),
        tools=tools,
        facts=sorted(facts),
    )
