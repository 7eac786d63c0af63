"""Rule sheets: CSV and XLSX spreadsheets of rules compiled into records."""

from __future__ import annotations

import io

import pytest
from openpyxl import Workbook

from rulebooks.compiler import (
    RECORD_VERSION,
    RulebookUnsupported,
    compile_rule_sheet,
    gate,
)

HEADER = ["tool", "condition", "decision", "reason", "at_most", "per", "spend"]
ROWS = [
    ["refund_card", "amount > 100", "confirm", "manager_approval", None, None, None],
    ["refund_card", 'results.get_order.status != "paid"', "refuse", "unpaid", None, None, None],
    ["refund_card", None, "refuse", None, 3, "day", None],
    ["charge_card", "$card_on_file and amount <= 50", "allow", "small_charge", None, None, None],
]


def csv_bytes(header=HEADER, rows=ROWS, delimiter=",") -> bytes:
    def cell(value) -> str:
        text = "" if value is None else str(value)
        if any(c in text for c in (delimiter, '"', "\n")):
            text = '"' + text.replace('"', '""') + '"'
        return text

    lines = [delimiter.join(cell(c) for c in row) for row in [header, *rows]]
    return ("\n".join(lines) + "\n").encode("utf-8")


def xlsx_bytes(header=HEADER, rows=ROWS, title="Sheet") -> bytes:
    book = Workbook()
    sheet = book.active
    sheet.title = title
    sheet.append(header)
    for row in rows:
        sheet.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def refused(data: bytes, filename: str = "rules.csv") -> list[str]:
    with pytest.raises(RulebookUnsupported) as caught:
        compile_rule_sheet(data, filename=filename)
    return [str(e) for e in caught.value.errors]


def test_a_csv_rule_sheet_compiles_into_a_record_of_rules_by_tool() -> None:
    record = compile_rule_sheet(csv_bytes(), filename="rules.csv")
    assert record["version"] == RECORD_VERSION
    assert record["format"] == "rule-sheet"
    assert sorted(record["tools"]) == ["charge_card", "refund_card"]
    rules = record["tools"]["refund_card"]["rules"]
    assert [r["row"] for r in rules] == [2, 3, 4]
    assert rules[0]["test"] == {"op": ">", "args": [{"arg": "amount"}, {"value": 100}]}
    assert rules[2]["at_most"] == 3 and rules[2]["per"] == "day"
    assert rules[2]["decision"] == "refuse"
    assert record["facts"] == ["card_on_file"]
    assert record["tools"]["refund_card"]["routes"] == []


def test_an_xlsx_rule_sheet_compiles_to_the_same_rules_as_its_csv() -> None:
    from_csv = compile_rule_sheet(csv_bytes(), filename="rules.csv")
    from_xlsx = compile_rule_sheet(xlsx_bytes(), filename="rules.xlsx")
    assert from_xlsx["tools"] == from_csv["tools"]
    assert from_xlsx["facts"] == from_csv["facts"]


def test_an_xlsx_sheet_named_rules_is_read_before_the_first_sheet() -> None:
    book = Workbook()
    book.active.append(["not", "a", "rule", "sheet"])
    rules = book.create_sheet("Rules")
    rules.append(HEADER)
    rules.append(ROWS[0])
    buffer = io.BytesIO()
    book.save(buffer)
    record = compile_rule_sheet(buffer.getvalue(), filename="rules.xlsx")
    assert list(record["tools"]) == ["refund_card"]


def test_a_formula_in_an_xlsx_cell_is_refused_with_its_row_and_column() -> None:
    rows = [["refund_card", None, "refuse", '=CONCAT("a","b")', None, None, None]]
    errors = refused(xlsx_bytes(rows=rows), "rules.xlsx")
    assert errors == ["rules.xlsx: row 2, column reason: a formula is not a rule: write its value"]


def test_a_file_that_is_not_a_workbook_is_refused() -> None:
    assert refused(b"PK\x03\x04 not really", "rules.xlsx") == [
        "rules.xlsx: the file is not an XLSX workbook"
    ]


def test_a_semicolon_separated_sheet_with_portuguese_headers_compiles() -> None:
    header = ["Ferramenta", "Condição", "Decisão", "Motivo", "No máximo", "Por", "Gasto"]
    record = compile_rule_sheet(csv_bytes(header, ROWS, ";"), filename="regras.csv")
    assert record["tools"] == compile_rule_sheet(csv_bytes(), filename="rules.csv")["tools"]


def test_errors_name_the_row_and_the_column() -> None:
    rows = [
        ["refund_card", "amount >", "confirm", "manager", None, None, None],
        ["refund_card", None, "maybe", "why", None, None, None],
        ["", None, "refuse", "no tool", None, None, None],
        ["refund_card", None, "refuse", None, "three", "day", None],
        ["refund_card", None, "refuse", None, 3, "fortnight", None],
        ["refund_card", None, "refuse", None, 3, None, None],
        ["refund_card", None, "confirm", None, None, None, None],
    ]
    assert refused(csv_bytes(rows=rows)) == [
        "rules.csv: row 2, column condition: expected a value but found the end of the line"
        " (at character 9)",
        "rules.csv: row 3, column decision: `maybe` is not refuse, confirm or allow",
        "rules.csv: row 4, column tool: a rule needs a tool",
        "rules.csv: row 5, column at_most: `three` is not a whole number of calls",
        "rules.csv: row 6, column per: `fortnight` is not a period (minute, hour, day, week,"
        " month)",
        "rules.csv: row 7, column per: a limit needs a period in `per`",
        "rules.csv: row 8, column reason: a rule needs a reason: the gate gives it when the rule"
        " fires",
    ]


def test_an_unknown_column_is_refused() -> None:
    errors = refused(b"tool,decision,reason,colour\nrefund_card,refuse,no,red\n")
    assert errors[0].startswith("rules.csv: row 1: `colour` is not a column of a rule sheet")


def test_a_sheet_without_a_decision_column_is_refused() -> None:
    assert refused(b"tool,reason\nrefund_card,no\n") == [
        "rules.csv: row 1: the first row must name the column `decision`"
    ]


def test_a_condition_never_runs_python() -> None:
    errors = refused(b"tool,condition,decision,reason\nx,__import__('os'),refuse,no\n")
    assert "the function `__import__` is not supported" in errors[0]


def test_a_limit_cannot_allow() -> None:
    rows = [["refund_card", None, "allow", "ok", 3, "day", None]]
    assert refused(csv_bytes(rows=rows)) == [
        "rules.csv: row 2, column decision: a limit refuses or confirms the call that passes it,"
        " not allow"
    ]


def test_an_ambiguous_decimal_comma_is_refused_and_a_plain_one_is_read() -> None:
    header = ["tool", "decision", "reason", "spend", "per"]
    errors = refused(csv_bytes(header, [["pay", "refuse", "budget", "1,000", "day"]], ";"))
    assert errors == ["rules.csv: row 2, column spend: `1,000` is not an amount"]
    record = compile_rule_sheet(
        csv_bytes(header, [["pay", "refuse", "budget", "100,50", "day"]], ";"), filename="r.csv"
    )
    assert record["tools"]["pay"]["rules"][0]["spend"] == 100.5


def test_same_binds_a_rows_result_reads_to_the_checked_call() -> None:
    data = (
        b"tool,condition,decision,reason,same\n"
        b'refund_card,results.get_order.status == "paid",allow,paid,order_id\n'
    )
    record = compile_rule_sheet(data, filename="r.csv")
    results = [
        {"tool": "get_order", "arguments": {"order_id": "9"}, "result": {"status": "paid"}},
        {"tool": "get_order", "arguments": {"order_id": "4411"}, "result": {"status": "open"}},
    ]
    this = gate(record, tool="refund_card", arguments={"order_id": "9"}, facts={}, results=results)
    assert this is not None and this.decision == "allow"
    other = gate(
        record, tool="refund_card", arguments={"order_id": "4411"}, facts={}, results=results
    )
    assert other is not None and other.decision == "pass"


def test_blank_rows_and_notes_are_ignored() -> None:
    data = b"tool,decision,reason,notes\n\n,,,a note for people\nrefund_card,refuse,no,why\n"
    record = compile_rule_sheet(data, filename="r.csv")
    assert [r["row"] for r in record["tools"]["refund_card"]["rules"]] == [4]


def test_a_file_that_is_neither_csv_nor_xlsx_is_refused() -> None:
    assert refused(b"tool,decision\n", "rules.ods") == [
        "rules.ods: a rule sheet is a `.csv` or an `.xlsx` file"
    ]


def test_a_badly_quoted_csv_is_refused_with_its_row() -> None:
    errors = refused(b'tool,decision,reason\nrefund_card,"refuse"x,no\n')
    assert errors[0].startswith("rules.csv: row 2: the CSV cannot be read")


def test_the_policy_sha256_is_the_hash_of_the_sheet_bytes() -> None:
    import hashlib

    data = csv_bytes()
    record = compile_rule_sheet(data, filename="rules.csv")
    assert record["policy_sha256"] == hashlib.sha256(data).hexdigest()
