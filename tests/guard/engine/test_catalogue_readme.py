"""The README's "The catalogue" section: its tables are the engine's own, and its example loads
and decides as the section says."""

from __future__ import annotations

import datetime as dt
import re

from guard.engine import ToolCheck, load_agent_yaml
from guard.engine.catalogue import TOOL_KEYS
from guard.engine.reference import CHECK_FORMS, TOOL_FIELDS, render_catalogue_reference
from guard.engine.tool_checks import FORMS, REASONS

from .conftest import KEY, ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
START, END = "<!-- catalogue-reference:start -->\n", "<!-- catalogue-reference:end -->"
NOW = dt.datetime(2026, 6, 1, 12, tzinfo=dt.UTC)


def section() -> str:
    start = README.index("### The catalogue\n")
    return README[start : README.index("\n## ", start)]


def example() -> str:
    text = section()
    found = re.search(r"An example, loaded and checked by[^\n]*\n\n```yaml\n(.*?)```", text, re.S)
    assert found is not None
    return found.group(1)


def test_the_readme_shows_the_generated_tables_as_the_engine_makes_them():
    text = section()
    assert text[text.index(START) + len(START) : text.index(END)] == render_catalogue_reference()


def test_the_tables_cover_every_field_the_loader_reads_and_every_check_form_and_reason():
    assert [key for key, _, _ in TOOL_FIELDS] and {key for key, _, _ in TOOL_FIELDS} == TOOL_KEYS
    assert tuple(form for form, _, _, _ in CHECK_FORMS) == FORMS
    assert {reason for *_, reasons in CHECK_FORMS for reason in reasons} == set(REASONS)


def test_the_section_names_every_mark_it_documents():
    text = section()
    for word in ("free_text", "fetches", "cost", "cap_cost", "cap_cost_cents", "ToolCheck.over_cost_cap",
                 "licence", "reads_outside", "requires_trust", "after", "not_after", "at_most",
                 "compensation", "undo", "irreversible", "idempotent", "result_schema"):  # fmt: skip
        assert f"`{word}" in text, word


def checker():
    agent_file = load_agent_yaml(example())
    return ToolCheck(agent_file.catalogue, key=KEY, settings=agent_file.other["settings"])


def call(tool, origins=None, **arguments):
    return {"tool": tool, "arguments": arguments, "origins": origins or {}}


def test_the_example_fetches_a_public_page_and_refuses_the_metadata_service():
    check = checker()
    history = check.new_history("s")
    assert check.check(call("fetch_page", url="https://example.org/a"), session=history,
                       now=NOW).decision == "allow"  # fmt: skip
    refused = check.check(call("fetch_page", url="http://169.254.169.254/latest"), session=history,
                          now=NOW)  # fmt: skip
    assert refused.reasons == ("disallowed_address",)
    assert check.check(call("search_emails", sender="ana@example.com"), session=history,
                       now=NOW).decision == "allow"  # fmt: skip


def test_the_example_caps_the_runs_cost():
    check = checker()
    history = check.new_history("s")
    page = call("fetch_page", url="https://example.org/a")
    check.record(history, page, "<html>")
    check.record(history, page, "<html>")
    refused = check.check(page, session=history, now=NOW)  # 4 + 2 > 5
    assert (refused.reasons, refused.detail["spent"], refused.detail["cap"]) == (
        ("cost_exceeded",), 4, 5)  # fmt: skip


def test_the_example_refund_follows_its_order_rule_and_its_checks():
    check = checker()
    history = check.new_history("s")
    typed = {"order_id": "typed", "amount": "typed"}
    usage = {"count": {"day": 0}}
    refund = call("refund_card", typed, order_id="A1", amount=20)
    assert check.check(refund, session=history, now=NOW, usage=usage).reasons == ("order_rule",)
    check.record(history, call("get_order", order_id="A1"),
                 {"order_id": "A1", "total": 50, "paid": True})  # fmt: skip
    assert check.check(refund, session=history, now=NOW, usage=usage).reasons == ("write",)
    too_much = call("refund_card", typed, order_id="A1", amount=60)
    assert check.check(too_much, session=history, now=NOW, usage=usage).reasons == (
        "condition_failed",
    )
    lapsed = dt.datetime(2027, 1, 1, tzinfo=dt.UTC)
    assert check.check(refund, session=history, now=lapsed, usage=usage).reasons == (
        "licence_lapsed",
    )


def test_the_example_message_body_is_free_text_and_a_web_page_taints_the_send():
    check = checker()
    history = check.new_history("s")
    message = call(
        "send_message", {"to": "typed"}, to="ana@example.com", body="Your refund is on its way"
    )
    assert check.check(message, session=history, now=NOW).reasons == ("irreversible_pivot",)
    check.record(history, call("search_emails", sender="ana@example.com"), [])
    assert check.check(message, session=history, now=NOW).reasons == ("irreversible_pivot",)
    check.record(history, call("fetch_page", url="https://example.org/a"), "<html>")
    assert check.check(message, session=history, now=NOW).reasons == (
        "tainted_call", "irreversible_pivot")  # fmt: skip
