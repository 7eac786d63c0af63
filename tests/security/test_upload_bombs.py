"""Decompression bombs and oversized rulebooks: measured before parsing, compiled under a budget.

The attacker's 412 KB XLSX inflated to 419 MB inside openpyxl (988 MB of RSS in a worker that only
needed read rights to compile), a 1.9 MB `.co` on one line cost 470 MB, and 40,000 flows 12.5 s
of CPU. Every bomb here is built in a temporary folder.
"""

from __future__ import annotations

import base64
import io
import json
import time
import zipfile

import pytest
from openpyxl import Workbook

from rulebooks import budget, compiler
from rulebooks.compiler import (
    RulebookUnsupported,
    compile_colang,
    compile_rule_sheet,
    limits,
    rule_sheet,
)

SHOP_RULES = 'define flow refunds\n  user ask refund\n  execute refund_card\n\ndefine user ask refund\n  "refund my order"\n'  # noqa: E501


def workbook(tmp_path, *, pad: dict[str, int] | None = None) -> bytes:
    """A real rule sheet, its zip rewritten with members padded by `pad` bytes of spaces each."""
    book = Workbook()
    book.active.append(["tool", "decision", "reason"])
    book.active.append(["refund_card", "refuse", "never"])
    plain = io.BytesIO()
    book.save(plain)
    path = tmp_path / "rules.xlsx"
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for member in source.infolist():
            content = source.read(member.filename)
            extra = (pad or {}).get(member.filename, 0)
            if extra:
                content = content.replace(b"</worksheet>", b" " * extra + b"</worksheet>")
            out.writestr(member.filename, content)
        for name, size in (pad or {}).items():
            if name not in source.namelist():
                out.writestr(name, b" " * size)
    return path.read_bytes()


def refused(call, *args, **kwargs) -> RulebookUnsupported:
    with pytest.raises(RulebookUnsupported) as caught:
        call(*args, **kwargs)
    return caught.value


def test_an_xlsx_part_that_inflates_past_the_limit_is_refused_before_openpyxl_opens_it(
    tmp_path, monkeypatch
):
    sheet = "xl/worksheets/sheet1.xml"
    data = workbook(tmp_path, pad={sheet: limits.MAX_XLSX_MEMBER_BYTES + 1})
    assert len(data) < 200_000

    def never(*args, **kwargs):
        raise AssertionError("openpyxl opened the bomb")

    monkeypatch.setattr("openpyxl.load_workbook", never)
    error = refused(compile_rule_sheet, data, filename="rules.xlsx").errors[0]
    assert error.code == compiler.TOO_LARGE
    assert f"`{sheet}` inflates to" in error.message


def test_an_xlsx_whose_parts_together_inflate_past_the_limit_is_refused(tmp_path):
    share = limits.MAX_XLSX_MEMBER_BYTES - 1
    count = limits.MAX_XLSX_UNCOMPRESSED // share + 1
    data = workbook(tmp_path, pad={f"xl/media/pad{i}.bin": share for i in range(count)})
    error = refused(compile_rule_sheet, data, filename="rules.xlsx").errors[0]
    assert error.code == compiler.TOO_LARGE
    assert "the workbook inflates to" in error.message


def test_a_rule_sheet_of_more_rows_than_the_limit_is_refused_at_the_first_too_many():
    rows = ["tool,decision,reason"] + ["refund_card,refuse,no"] * rule_sheet.MAX_ROWS
    error = refused(compile_rule_sheet, "\n".join(rows).encode(), filename="rules.csv").errors[0]
    assert (error.code, error.line) == (compiler.TOO_LARGE, rule_sheet.MAX_ROWS + 1)


def test_a_rule_sheet_row_wider_than_the_limit_is_refused_at_its_row():
    wide = ",".join(["x"] * (rule_sheet.MAX_COLUMNS + 1))
    data = f"tool,decision,reason\n{wide}\n".encode()
    error = refused(compile_rule_sheet, data, filename="rules.csv").errors[0]
    assert (error.code, error.line) == (compiler.TOO_LARGE, 2)


def test_a_rule_sheet_cell_longer_than_the_limit_is_refused_at_its_row_and_column():
    long = "x" * (limits.MAX_CELL_LENGTH + 1)
    data = f"tool,decision,reason\nrefund_card,refuse,{long}\n".encode()
    error = refused(compile_rule_sheet, data, filename="rules.csv").errors[0]
    assert (error.code, error.line, error.field) == (compiler.TOO_LARGE, 2, "reason")


def test_a_colang_file_over_the_byte_limit_is_refused_before_it_is_parsed():
    data = 'define user greet\n  "' + "a" * limits.MAX_COLANG_BYTES + '"\n'
    started = time.perf_counter()
    error = refused(compile_colang, data, filename="policy.co").errors[0]
    assert time.perf_counter() - started < 0.5
    assert error.code == compiler.TOO_LARGE


def test_a_colang_line_longer_than_the_limit_is_refused_at_its_line():
    data = SHOP_RULES + '  "' + "a" * limits.MAX_LINE_LENGTH + '"\n'
    error = refused(compile_colang, data, filename="policy.co").errors[0]
    assert (error.code, error.line, error.column) == (
        compiler.TOO_LARGE,
        7,
        limits.MAX_LINE_LENGTH + 1,
    )


def test_a_colang_file_of_more_lines_than_the_limit_is_refused_at_the_first_too_many():
    data = SHOP_RULES + "#\n" * limits.MAX_LINES
    error = refused(compile_colang, data, filename="policy.co").errors[0]
    assert (error.code, error.line) == (compiler.TOO_LARGE, limits.MAX_LINES + 1)


def test_a_colang_file_of_more_flows_than_the_limit_is_refused_at_the_first_too_many():
    flows = "".join(f"define flow f{i}\n  execute t\n" for i in range(limits.MAX_FLOWS + 1))
    started = time.perf_counter()
    error = refused(compile_colang, flows, filename="policy.co").errors[0]
    assert time.perf_counter() - started < 0.5
    assert (error.code, error.line) == (compiler.TOO_LARGE, 2 * limits.MAX_FLOWS + 1)


def compile_api(client, data: bytes, filename: str):
    body = {"filename": filename, "content_base64": base64.b64encode(data).decode()}
    url = (
        "/v1/rule-sheets/compile"
        if filename.endswith((".csv", ".xlsx"))
        else "/v1/rulebooks/compile"
    )
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.mark.django_db
def test_an_xlsx_bomb_sent_to_the_compile_api_answers_413_with_its_code(
    tmp_path, editor, client_for
):
    data = workbook(tmp_path, pad={"xl/worksheets/sheet1.xml": limits.MAX_XLSX_MEMBER_BYTES + 1})
    response = compile_api(client_for(editor), data, "rules.xlsx")
    assert response.status_code == 413
    assert response.json()["code"] == compiler.TOO_LARGE


def hog_memory(data, *, filename, colang_version=None):
    """A compile that keeps allocating: 8 MB at a time, up to 256 MB."""
    held = [bytearray(8 * 1024 * 1024) for _ in range(32)]
    return {"held": len(held)}


def spin(data, *, filename, colang_version=None):
    """A compile that burns CPU for five seconds."""
    deadline = time.process_time() + 5
    while time.process_time() < deadline:
        pass
    return {"spun": True}


@pytest.mark.django_db
def test_a_compile_over_its_memory_budget_answers_413_and_the_worker_carries_on(
    editor, client_for, monkeypatch
):
    monkeypatch.setattr(budget, "COMPILE_MEMORY_BYTES", 64 * 1024 * 1024)
    monkeypatch.setattr(compiler, "compile_source", hog_memory)
    client = client_for(editor)
    response = compile_api(client, SHOP_RULES.encode(), "policy.co")
    assert response.status_code == 413
    assert "more than 64 MB of memory" in response.json()["errors"][0]["message"]
    monkeypatch.undo()
    assert compile_api(client, SHOP_RULES.encode(), "policy.co").status_code == 200


@pytest.mark.django_db
def test_a_compile_over_its_time_budget_answers_413(editor, client_for, monkeypatch):
    monkeypatch.setattr(budget, "COMPILE_CPU_SECONDS", 1)
    monkeypatch.setattr(budget, "COMPILE_WALL_SECONDS", 3)
    monkeypatch.setattr(compiler, "compile_source", spin)
    started = time.monotonic()
    response = compile_api(client_for(editor), SHOP_RULES.encode(), "policy.co")
    assert response.status_code == 413
    assert response.json()["code"] == compiler.TOO_LARGE
    assert time.monotonic() - started < 4.5


@pytest.mark.django_db
def test_colang_text_sent_with_a_session_is_compiled_under_the_budget(
    editor, client_for, monkeypatch
):
    from stalwart_agents import Agent

    catalogue = Agent.from_file("examples/shop/agent.yaml").catalogue()
    monkeypatch.setattr(budget, "COMPILE_MEMORY_BYTES", 64 * 1024 * 1024)
    monkeypatch.setattr(compiler, "compile_source", hog_memory)
    body = {"agent": "billing", "catalogue": catalogue, "rulebook": SHOP_RULES}
    response = client_for(editor).post(
        "/v1/sessions", json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 400
    assert compiler.TOO_LARGE in json.dumps(response.json()["rulebook"])


@pytest.mark.django_db
def test_colang_text_sent_with_a_proof_job_is_compiled_under_the_budget(
    editor, client_for, monkeypatch
):
    from tests.proof_console.conftest import shop_job

    monkeypatch.setattr(budget, "COMPILE_MEMORY_BYTES", 64 * 1024 * 1024)
    monkeypatch.setattr(compiler, "compile_source", hog_memory)
    body = {**shop_job(), "rulebook": SHOP_RULES}
    response = client_for(editor).post(
        "/v1/proofs", json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 400
    assert compiler.TOO_LARGE in json.dumps(response.json()["rulebook"])
