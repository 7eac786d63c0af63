"""Compiling Colang: the version, the record's shape, determinism."""

from __future__ import annotations

import hashlib
import json

import pytest

from rulebooks.compiler import RECORD_VERSION, RulebookUnsupported, compile_colang
from rulebooks.compiler.record import KEYS

from .conftest import SHOP

V2 = """\
flow refunds
  user ask refund
  if $order_paid
    await RefundCardAction(order_id=$order_id)
"""


def refusal(source: str, **kwargs) -> RulebookUnsupported:
    with pytest.raises(RulebookUnsupported) as caught:
        compile_colang(source, **kwargs)
    return caught.value


def test_a_file_with_define_is_colang_1() -> None:
    assert compile_colang(SHOP)["format"] == "colang-1.0"


def test_a_file_with_flow_is_colang_2() -> None:
    assert compile_colang(V2)["format"] == "colang-2.x"


def test_a_file_with_a_decorated_flow_is_colang_2() -> None:
    assert compile_colang("@active\n" + V2)["format"] == "colang-2.x"


def test_a_file_with_both_is_refused_without_an_explicit_version() -> None:
    error = refusal(SHOP + "\n" + V2).errors[0]
    assert error.construct == "mixed versions"
    assert "pass `colang_version`" in error.message


def test_a_file_with_neither_is_refused_without_an_explicit_version() -> None:
    error = refusal("# nothing yet\nimport core\n").errors[0]
    assert error.construct == "colang version"


def test_an_explicit_version_decides_for_a_file_with_neither() -> None:
    record = compile_colang("import core\n", colang_version="2.x")
    assert record["format"] == "colang-2.x"
    assert record["imports"] == [{"path": "core", "line": 1}]
    assert record["tools"] == {}


def test_an_explicit_version_that_contradicts_the_content_names_each_line() -> None:
    errors = refusal(SHOP, colang_version="2.x").errors
    assert [e.line for e in errors] == [1, 5]
    assert "Colang 1.0" in errors[0].message
    errors = refusal(V2, colang_version="1.0").errors
    assert errors[0].message == "`flow` is Colang 2.x, but this file is read as Colang 1.0"


def test_an_unknown_version_is_refused() -> None:
    error = refusal(SHOP, colang_version="3").errors[0]
    assert error.construct == "colang_version"


def test_a_define_inside_a_doc_block_does_not_decide_the_version() -> None:
    source = '"""\ndefine flow old\n"""\n' + V2
    assert compile_colang(source)["format"] == "colang-2.x"


def test_the_record_has_its_version_and_every_key() -> None:
    record = compile_colang(SHOP)
    assert record["version"] == RECORD_VERSION == "stalwart-rulebook/1"
    assert tuple(sorted(record)) == tuple(sorted(KEYS))


def test_policy_sha256_is_the_hash_of_the_source_bytes() -> None:
    record = compile_colang(SHOP.encode())
    assert record["policy_sha256"] == hashlib.sha256(SHOP.encode()).hexdigest()
    assert compile_colang(SHOP) == record


def test_compiling_twice_gives_the_same_json() -> None:
    first = json.dumps(compile_colang(SHOP), sort_keys=True)
    assert json.dumps(compile_colang(SHOP), sort_keys=True) == first


def test_the_record_is_json_without_private_notes() -> None:
    record = compile_colang(SHOP)
    text = json.dumps(record)
    assert '"_' not in text
    assert json.loads(text) == record


def test_facts_are_every_fact_a_condition_reads_sorted() -> None:
    source = SHOP + (
        "\ndefine flow greet\n  user hi\n  if $vip and not $blocked\n    bot hello vip\n"
    )
    assert compile_colang(source)["facts"] == ["blocked", "order_paid", "vip"]


def test_crlf_line_ends_and_a_bom_compile_like_plain_text() -> None:
    plain = compile_colang(SHOP)
    other = compile_colang(b"\xef\xbb\xbf" + SHOP.replace("\n", "\r\n").encode())
    assert other["tools"] == plain["tools"]
    assert other["flows"] == plain["flows"]


def test_a_nul_character_is_refused() -> None:
    assert refusal("define flow x\n  bot a\x00\n").errors[0].line == 2
