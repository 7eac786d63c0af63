"""Records and texts made from the engine, where mutation testing found them unguarded.

The docs table and reference are made from the registry of checks (one source for each fact), so
each row says what the registry says; a decision is a record whose `to_dict` is the DESIGN.md
shape; post-checks may only make an answer stricter; issues and errors name what is wrong.
"""

from __future__ import annotations

import pytest

from guard.engine import (
    REGISTRY,
    CatalogueInvalid,
    Decision,
    GuardError,
    Issue,
    UnknownCheck,
    render_reference,
    render_table,
    stricter_only,
    switched_on,
)
from guard.engine.checks import CheckInfo
from guard.engine.decision import stricter

# -- the docs, made from the registry ------------------------------------------------------------

ODD = CheckInfo(
    name="odd",
    title="Odd | title",
    stage="admission",
    does="Checks a | b\nand more.",
    bars="Nothing odd.",
    cannot_bar="Everything else.",
    when="refused",
    reads=("arguments", "session"),
    switchable=False,
    allowed={"tool": "note", "arguments": {"text": "olá | oi"}},
    barred=None,
    reasons=("odd_call", "odder_call"),
    adjustments=("strict: true or false",),
    modes=("off", "refuse"),
)


def table_rows(text: str) -> list[list[str]]:
    rows = []
    for line in text.strip().splitlines()[2:]:
        cells = [cell.strip() for cell in line.replace("\\|", "\0").strip("|").split("|")]
        rows.append([cell.replace("\0", "\\|") for cell in cells])
    return rows


def test_each_row_of_the_docs_table_says_whether_its_check_can_be_switched_off():
    text = render_table()
    assert text.splitlines()[:2] == [
        "| Check | Stage | What it does | When it bars a call | Reads | Can be switched off |"
        " Allowed | Barred |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = table_rows(text)
    assert len(rows) == len(REGISTRY)
    for info, row in zip(REGISTRY, rows, strict=True):
        assert len(row) == 8
        assert row[0].endswith(f"(`{info.name}`)")
        assert row[4] == ", ".join(f"`{item}`" for item in info.reads)
        assert row[5] == ("yes" if info.switchable else "no")


def test_a_table_cell_keeps_a_pipe_and_a_line_break_inside_its_cell():
    assert render_table([ODD]).splitlines()[2] == (
        "| Odd \\| title (`odd`) | Admission chain | Checks a \\| b and more. | refused "
        '| `arguments`, `session` | no | `{"tool": "note", "arguments": {"text": "olá \\| oi"}}` '
        "| — |"
    )


def test_the_reference_section_of_a_check_says_everything_the_registry_says():
    assert render_reference([ODD, ODD]) == "\n".join([SECTION, SECTION])


SECTION = "\n".join(
    [
        "### Odd | title",
        "",
        "Checks a | b\nand more.",
        "",
        "- What it bars: Nothing odd.",
        "- What it cannot bar: Everything else.",
        "- When it bars a call: refused",
        "- What it reads: `arguments`, `session`",
        "- Can be switched off: no",
        "- Setting: strict: true or false",
        "- Modes: `off`, `refuse`",
        "- Reasons it answers with: `odd_call`, `odder_call`",
        '- Allowed: `{"tool": "note", "arguments": {"text": "olá \\| oi"}}`',
        "",
        '`checks.Setting("odd")`',
        "",
    ]
)


def test_the_reference_shows_a_barred_example_where_there_is_one_and_switchable_checks():
    reference = render_reference(REGISTRY)
    for info in REGISTRY:
        section = reference.split(f"### {info.title}\n", 1)[1].split("\n### ", 1)[0]
        assert f"- Can be switched off: {'yes' if info.switchable else 'no'}" in section
        assert ("- Barred: `" in section) == (info.barred is not None)
        assert "- Allowed: `" in section


def test_an_unknown_check_name_is_named_in_the_error():
    with pytest.raises(UnknownCheck, match=r"^there is no check named `adress`$"):
        switched_on(["address", "adress"])


# -- decisions and post-checks -------------------------------------------------------------------


def test_a_decisions_dict_is_a_copy_that_leaves_the_decision_as_it_was():
    decision = Decision("refuse", ("argument_schema",), {"errors": [{"pointer": "/note"}]}, None)
    shape = decision.to_dict()
    assert shape == {
        "decision": "refuse",
        "reasons": ["argument_schema"],
        "detail": {"errors": [{"pointer": "/note"}]},
        "rule": None,
    }
    shape["detail"]["errors"][0]["pointer"] = "/x"
    assert decision.detail["errors"][0]["pointer"] == "/note"


def test_refuse_is_stricter_than_confirm_which_is_stricter_than_allow():
    allow, confirm, refuse = (Decision(name) for name in ("allow", "confirm", "refuse"))
    assert stricter(allow, confirm) and stricter(confirm, refuse) and stricter(allow, refuse)
    assert not stricter(confirm, confirm)
    assert not stricter(refuse, allow)


WRITE = Decision("confirm", ("write",), {"step": 11}, None)


def test_a_post_check_that_answers_nonsense_refuses_naming_itself():
    decision = stricter_only(Decision("allow", ("allow",), {"step": 13}), "yes", "s1_veto")
    assert decision == Decision("refuse", ("post_check_error",), {"check": "s1_veto"}, "s1_veto")


def test_a_stricter_post_check_answer_is_named_by_its_rule_or_else_by_the_check():
    proposed = Decision("refuse", ("send_verb",), {"verb": "post"}, None)
    decision = stricter_only(WRITE, proposed, "s1_veto")
    assert decision == Decision(
        "refuse", ("send_verb",), {"verb": "post", "check": "s1_veto"}, "s1_veto"
    )
    ruled = stricter_only(WRITE, Decision("refuse", ("x",), {}, "strict mode"), "s1_veto")
    assert ruled.rule == "strict mode"


def test_a_second_confirm_adds_its_new_reasons_and_keeps_the_first_record():
    current = Decision("confirm", ("write",), {"step": 11}, "refunds")
    proposed = Decision("confirm", ("write", "confirm_read: amount"), {"read": 1}, "other")
    assert stricter_only(current, proposed, "confirm_read") == Decision(
        "confirm", ("write", "confirm_read: amount"), {"step": 11}, "refunds"
    )


# -- issues and errors ----------------------------------------------------------------------------


def test_an_issue_is_written_with_its_path_and_as_a_dict():
    issue = Issue("tools[0].kind", "must be one of read, write, sends_out, not `x`")
    assert issue.to_dict() == {
        "path": "tools[0].kind",
        "message": "must be one of read, write, sends_out, not `x`",
    }
    assert str(Issue("", "a catalogue must be a mapping")) == "a catalogue must be a mapping"


def test_a_catalogue_error_says_every_issue_or_that_the_catalogue_is_invalid():
    error = CatalogueInvalid([Issue("a", "is wrong"), Issue("b", "is too")])
    assert str(error) == "a: is wrong; b: is too"
    assert str(CatalogueInvalid([])) == "invalid catalogue"
    assert isinstance(error, GuardError)


def test_a_decision_keeps_its_reasons_as_a_tuple_and_refuses_an_unknown_answer():
    assert Decision("allow", ["a", "b"]).reasons == ("a", "b")
    with pytest.raises(ValueError, match=r"^a decision is allow, confirm or refuse, not `maybe`$"):
        Decision("maybe")
