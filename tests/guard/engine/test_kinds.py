"""Tool kinds: the file wins, then the tool's mark, then (with infer) its words, else a write."""

from __future__ import annotations

import pytest

from guard.engine import infer_kind, parse_tool_kinds
from guard.engine.kinds import resolve_kind


@pytest.mark.parametrize(
    ("name", "description", "arguments", "kind"),
    [
        ("get_order", "", (), "read"),
        ("listUsers", "", (), "read"),
        ("search.docs", "", (), "read"),
        ("fetch_page", "Fetches a web page", ("url",), "read"),
        ("orders", "", (), "write"),
        ("get_and_delete", "", (), "write"),
        ("get_thing", "Deletes the thing it gets", (), "write"),
        ("send_receipt", "", (), "sends_out"),
        ("notify", "", (), "sends_out"),
        ("save_note", "Posts a note to the channel", (), "sends_out"),
        ("get_report", "", ("to",), "sends_out"),
        ("refund_card", "", (), "write"),
    ],
)
def test_inference_reads_the_name_description_and_arguments(name, description, arguments, kind):
    assert infer_kind(name, description, arguments) == kind


def test_the_file_wins_then_the_mark_then_inference_then_write():
    file_kinds = {"a": "sends_out"}
    assert resolve_kind("a", file_kinds=file_kinds, mark="read", infer=True) == "sends_out"
    assert resolve_kind("get_b", file_kinds=file_kinds, mark="write", infer=True) == "write"
    assert resolve_kind("get_b", file_kinds=file_kinds, mark=None, infer=True) == "read"
    assert resolve_kind("get_b", file_kinds=file_kinds, mark=None, infer=False) == "write"


def test_a_tool_kinds_file_is_read_from_yaml_text_with_its_issues():
    kinds, issues = parse_tool_kinds("get_order: read\nsend: sends_out\n")
    assert kinds == {"get_order": "read", "send": "sends_out"} and issues == []
    _, issues = parse_tool_kinds("get_order: [read\n")
    assert str(issues[0]).startswith("tool_kinds: the file is not valid YAML")
    _, issues = parse_tool_kinds("- get_order\n")
    assert str(issues[0]) == "tool_kinds: must be a mapping of tool name to kind"
