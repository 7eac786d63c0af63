"""Reading a tools module's `TOOLS` without running it."""

from __future__ import annotations

import pytest

from proof.engine import SourceUnreadable
from proof.engine.pysource import read_tools

from .conftest import SHOP


def test_the_shops_tools_are_read_with_the_line_of_each_name() -> None:
    module = read_tools((SHOP / "tools.py").read_text(), path="tools.py")
    names = [t["name"] for t in module.tools]
    assert names == ["get_order", "charge_card", "send_receipt", "read_inbox", "refund_card"]
    source = (SHOP / "tools.py").read_text().splitlines()
    for tool, line in zip(module.tools, module.lines, strict=True):
        assert f'"{tool["name"]}"' in source[line - 1]
    assert module.tools[1]["parameters"]["properties"]["amount"]["maximum"] == 100000


def test_names_unpacking_and_concatenation_are_evaluated() -> None:
    text = (
        "BASE = {'type': 'object'}\n"
        "ID = {'id': {'type': 'string'}}\n"
        "READS = [{'name': 'a', **BASE, 'parameters': dict(type='object', properties=ID)}]\n"
        "TOOLS = READS + [{'name': 'b', 'limit': -3}]\n"
    )
    module = read_tools(text, path="t.py")
    assert [t["name"] for t in module.tools] == ["a", "b"]
    assert module.tools[0]["type"] == "object" and module.tools[1]["limit"] == -3


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("TOOLS = make_tools()\n", 1, "a call"),
        ("import os\nTOOLS = [{'name': os.environ['X']}]\n", 2, "a subscript"),
        ("TOOLS = [t for t in range(3)]\n", 1, "a list comprehension"),
        ("X = open('f')\nTOOLS = [X]\n", 2, "`X` is not bound to a literal"),
    ],
)
def test_anything_that_would_have_to_run_is_refused_with_its_line(text, line, what) -> None:
    with pytest.raises(SourceUnreadable) as caught:
        read_tools(text, path="t.py")
    assert caught.value.line == line
    assert what in caught.value.problem


def test_a_module_without_tools_or_with_a_syntax_error_is_refused() -> None:
    with pytest.raises(SourceUnreadable, match="defines no `TOOLS`"):
        read_tools("X = 1\n", path="t.py")
    with pytest.raises(SourceUnreadable, match="is not valid Python") as caught:
        read_tools("TOOLS = [\n", path="t.py")
    assert caught.value.line is not None
