"""The registry of checks: order, switches, the docs table, and each check's own examples.

The order and switches are the guardrail-checks page's; each allowed and barred example is run
through the engine.
"""

from __future__ import annotations

from typing import Any

import pytest

from guard.engine import (
    REGISTRY,
    Setting,
    UnknownCheck,
    render_reference,
    render_table,
    switched_on,
)
from guard.engine.checks import ADMISSION, BY_NAME, NAMES, SAID, TOOL_CHECK

from .conftest import NOW

PAGE_ORDER = [
    ("tool_kinds", True),
    ("withdrawn", False),
    ("address", True),
    ("plan_step", True),
    ("tier", True),
    ("labels", True),
    ("payment_limit", True),
    ("allowed_tools", False),
    ("session_record", False),
    ("arguments", True),
    ("destinations", True),
    ("order", True),
    ("undo", True),
    ("your_rules", True),
    ("outside_content", True),
    ("confirmation", False),
    ("any_other_write", False),
    ("grounded", True),
    ("s1_veto", True),
    ("s2_veto", True),
    ("confirm_read", True),
]


def test_the_registry_lists_every_check_in_the_order_a_call_meets_them():
    assert [(info.name, info.switchable) for info in REGISTRY] == PAGE_ORDER


def test_the_three_checks_not_yet_active_let_every_call_pass_and_say_so():
    inactive = [info for info in REGISTRY if not info.active]
    assert [info.name for info in inactive] == ["tier", "labels", "payment_limit"]
    for info in inactive:
        assert info.barred is None
        assert info.does.startswith("Not yet active: every call passes.")
        assert info.when == "never (not yet active)"


def test_the_stages_run_tool_kinds_then_admission_then_the_tool_check_then_what_was_said():
    stages = [info.stage for info in REGISTRY]
    assert stages.index(ADMISSION) < stages.index(TOOL_CHECK) < stages.index(SAID)
    assert [info.name for info in REGISTRY if not info.in_engine] == [
        "s1_veto",
        "s2_veto",
        "confirm_read",
    ]


def test_a_setting_names_a_registered_check():
    assert Setting("address") == "address"
    assert Setting("address").info.title == "Disallowed address"
    assert BY_NAME["address"].setting == 'checks.Setting("address")'
    with pytest.raises(UnknownCheck):
        Setting("adress")


def test_switching_on_some_checks_keeps_those_that_cannot_be_switched_off():
    on = switched_on(["address"])
    assert on == {
        "address",
        "withdrawn",
        "allowed_tools",
        "session_record",
        "confirmation",
        "any_other_write",
    }
    assert switched_on(None) == NAMES


@pytest.mark.parametrize("given", ["address", b"address", ["address", 3]])
def test_checks_given_as_one_text_or_with_a_non_name_are_refused_saying_so(given):
    # Text is not read letter by letter ("there is no check named `a`").
    with pytest.raises(UnknownCheck, match="a list of check names"):
        switched_on(given)


def test_the_docs_table_has_a_row_per_check_with_its_examples():
    table = render_table()
    rows = table.strip().splitlines()
    assert len(rows) == 2 + len(REGISTRY)
    assert rows[0].startswith("| Check | Stage | What it does | When it bars a call |")
    assert "| Disallowed address (`address`) | Admission chain |" in table
    assert (
        '`{"tool": "fetch_page", "arguments": {"url": "http://169.254.169.254/latest"}}`' in table
    )
    tier = next(row for row in rows if "(`tier`)" in row)
    assert "never (not yet active)" in tier and tier.endswith("| — |")


def test_the_reference_has_a_section_per_check_with_its_setting():
    reference = render_reference()
    for info in REGISTRY:
        assert f"### {info.title}" in reference
        assert f'`checks.Setting("{info.name}")`' in reference


# -- each check's examples, through the engine
# ------------------------------------------------------


def prepare(lab, name: str, call: dict[str, Any], *, barred: bool):
    """The session, token and call an example needs; the page's extra fields say how."""
    call = dict(call)
    history = lab.new_history("s")
    options: dict[str, Any] = {"now": NOW}
    if call["tool"] in ("refund_card",) and not (name == "order" and barred):
        lab.record(
            history, {"tool": "get_order", "arguments": {"order_id": "A1"}}, {"order_id": "A1"}
        )
    if call.pop("tampered", False):
        lab.record(
            history, {"tool": "get_order", "arguments": {"order_id": "A1"}}, {"order_id": "A1"}
        )
        data = history.to_json()
        data["entries"][-1]["content"]["result"] = {"order_id": "A2"}
        return call, data, options
    if call.pop("approved", False):
        options["token"] = lab.issue_token(call, session=history, now=NOW)
    if call.pop("approved_for_other", False):
        other = {**call, "arguments": {**call["arguments"], "amount": 20}}
        options["token"] = lab.issue_token(other, session=history, now=NOW)
    if "compensation_of" in call:
        lab.record(
            history,
            {"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 20}},
            {"refund_id": "R1"},
        )
    if name == "plan_step":
        plan = {
            "id": "p1",
            "steps": [{"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 20}}],
        }
        call.update(plan=plan, plan_token=lab.issue_plan_token(plan, session=history, now=NOW))
    if name == "grounded":
        # The page's example reads the person's turns; step 11 reads the origins those turns give.
        said = {"order_id", "amount"} if not barred else {"order_id"}
        call["origins"] = {argument: "typed" for argument in said}
    call.pop("turns", None)
    call.setdefault("origins", {argument: "typed" for argument in call.get("arguments", {})})
    return call, history, options


ENGINE_CHECKS = [info for info in REGISTRY if info.in_engine]


@pytest.mark.parametrize("info", ENGINE_CHECKS, ids=[info.name for info in ENGINE_CHECKS])
def test_each_checks_allowed_example_is_not_barred_by_it(lab, info):
    call, session, options = prepare(lab, info.name, info.allowed, barred=False)
    decision = lab.check(call, session=session, **options)
    assert decision.detail.get("check") != info.name or decision.decision == "allow", decision
    if info.name == "confirmation":
        assert (decision.decision, decision.reasons) == ("allow", ("confirmed",))
    if info.name == "grounded":
        assert not any(reason.startswith("argument_origin") for reason in decision.reasons)


BARRED = [info for info in ENGINE_CHECKS if info.barred is not None]


@pytest.mark.parametrize("info", BARRED, ids=[info.name for info in BARRED])
def test_each_checks_barred_example_is_barred_by_it_as_the_page_says(lab, info):
    call, session, options = prepare(lab, info.name, info.barred, barred=True)
    decision = lab.check(call, session=session, **options)
    expected = {
        "tool_kinds": ("confirm", ("write",)),
        "withdrawn": ("refuse", ("withdrawn",)),
        "address": ("refuse", ("disallowed_address",)),
        "plan_step": ("refuse", ("off_plan",)),
        "allowed_tools": ("refuse", ("unknown_tool",)),
        "session_record": ("refuse", ("history_invalid",)),
        "arguments": ("refuse", ("argument_schema",)),
        "destinations": ("refuse", ("undeclared_destination",)),
        "order": ("refuse", ("order_rule",)),
        "undo": ("refuse", ("compensation_mismatch",)),
        "your_rules": ("refuse", ("condition_failed",)),
        "outside_content": ("confirm", ("tainted_call",)),
        "confirmation": ("refuse", ("token_mismatch",)),
        "any_other_write": ("confirm", ("write",)),
        "grounded": ("confirm", ("argument_origin: amount",)),
    }[info.name]
    assert (decision.decision, decision.reasons) == expected
    assert all(reason.split(":")[0] in info.reasons for reason in decision.reasons)


@pytest.mark.parametrize(
    "info",
    [info for info in BARRED if info.switchable and info.name != "tool_kinds"],
    ids=lambda info: info.name,
)
def test_switching_a_check_off_lets_its_barred_example_past_it(lab, info):
    call, session, options = prepare(lab, info.name, info.barred, barred=True)
    barred = lab.check(call, session=session, **options)
    call, session, options = prepare(lab, info.name, info.barred, barred=True)
    passed = lab.check(call, session=session, checks=sorted(NAMES - {info.name}), **options)
    assert passed.reasons != barred.reasons
    assert passed.detail.get("check") != info.name


def test_with_infer_on_an_unmarked_tool_named_as_a_read_is_a_read(lab):
    from guard.engine import ToolCheck

    from .conftest import KEY, lab_catalogue

    data = lab_catalogue()
    data["tools"][0] = {**data["tools"][0], "kind": None}
    del data["tools"][0]["kind"]
    inferred = ToolCheck(data, key=KEY, settings={"infer": True})
    call = {"tool": "get_order", "arguments": {"order_id": "A1"}, "origins": {"order_id": "typed"}}
    assert inferred.check(call, session=inferred.new_history("s")).decision == "allow"
    plain = ToolCheck(data, key=KEY)
    assert plain.check(call, session=plain.new_history("s")).reasons == ("write",)
    off = inferred.check(
        call, session=inferred.new_history("s"), checks=sorted(NAMES - {"tool_kinds"})
    )
    assert off.reasons == ("write",)


def test_the_tool_kinds_file_always_wins_over_a_tools_own_mark():
    from guard.engine import ToolCheck

    from .conftest import KEY, lab_catalogue

    check = ToolCheck(lab_catalogue(), key=KEY, settings={"tool_kinds": "get_order: write\n"})
    call = {"tool": "get_order", "arguments": {"order_id": "A1"}, "origins": {"order_id": "typed"}}
    assert check.check(call, session=check.new_history("s")).reasons == ("write",)


def test_the_inactive_checks_let_a_call_pass_whether_on_or_off(lab):
    call = {"tool": "pay", "arguments": {"amount": 5}, "origins": {"amount": "typed"}}
    on = lab.check(call, session=lab.new_history("s"), checks=["tier", "labels", "payment_limit"])
    off = lab.check(call, session=lab.new_history("s"), checks=[])
    assert on == off
    assert on.reasons == ("write",)
