"""The Colang 1.0 parser: each supported form, and what it refuses."""

from __future__ import annotations

import pytest

from rulebooks.compiler import RulebookUnsupported, compile_colang


def steps(body: str) -> list[dict]:
    record = compile_colang(f"define flow f\n{body}", filename="t.co")
    return record["flows"][0]["steps"]


def refused(body: str) -> tuple[int, int | None, str | None, str]:
    with pytest.raises(RulebookUnsupported) as caught:
        compile_colang(f"define flow f\n{body}", filename="t.co")
    e = caught.value.errors[0]
    return e.line, e.column, e.construct, e.message


def test_user_and_bot_steps_keep_their_free_word_names() -> None:
    got = steps("  user ask for a refund\n  bot inform refund policy\n")
    assert got == [
        {"step": "user", "line": 2, "intent": "ask for a refund"},
        {"step": "bot", "line": 3, "message": "inform refund policy"},
    ]


def test_user_alternatives_with_or_are_a_group() -> None:
    (got,) = steps("  user express greeting or user ask help\n")
    assert got["step"] == "group" and got["mode"] == "or"
    assert [i["intent"] for i in got["items"]] == ["express greeting", "ask help"]


def test_inline_texts_and_any_user_message() -> None:
    got = steps('  user "hello there"\n  user ...\n  bot "Hi!"\n  bot greet "Hello"\n')
    assert got[0]["text"] == "hello there"
    assert got[1]["any"] is True
    assert got[2]["text"] == "Hi!"
    assert (got[3]["message"], got[3]["text"]) == ("greet", "Hello")


def test_parameters_with_with_and_for() -> None:
    got = steps("  bot inform total with amount=$amount\n  user ask refund for $order_id\n")
    assert got[0]["arguments"] == {"amount": "$amount"}
    assert got[1]["arguments"] == {"order_id": "$order_id"}


def test_execute_exec_and_run_are_the_same_tool_call() -> None:
    got = steps("  execute a\n  exec b(x=1)\n  run c.d(y=$y)\n")
    assert [(s["tool"], s["form"]) for s in got] == [
        ("a", "execute"),
        ("b", "execute"),
        ("c.d", "execute"),
    ]
    assert got[1]["arguments"] == {"x": "1"}


def test_bot_execute_is_a_tool_call_with_its_parameters() -> None:
    (got,) = steps("  bot execute_refund_card with order_id=$order_id, amount=40\n")
    assert got["step"] == "tool" and got["tool"] == "refund_card"
    assert got["form"] == "bot execute"
    assert got["arguments"] == {"amount": "40", "order_id": "$order_id"}


def test_assignments_of_every_kind() -> None:
    got = steps(
        "  $a = 1 + 2\n  set $b = $a * 2\n  $a += 1\n  $c = ...\n"
        "  $r = execute check(order_id=$o)\n"
    )
    assert [(s["step"], s.get("operator"), s.get("generated")) for s in got[:4]] == [
        ("set", "=", False),
        ("set", "=", False),
        ("set", "+=", False),
        ("set", "=", True),
    ]
    assert got[4]["step"] == "tool" and got[4]["result"] == "r"


def test_if_else_if_else_is_one_step_with_branches() -> None:
    (got,) = steps("  if $a\n    bot x\n  else if $b\n    bot y\n  else\n    bot z\n")
    assert [b["test"] for b in got["branches"]] == ["$a", "$b"]
    assert got["else"]["steps"][0]["message"] == "z"


def test_a_trailing_colon_is_tolerated() -> None:
    (got,) = steps("  if $a:\n    bot x\n  else:\n    bot z\n")
    assert got["branches"][0]["test"] == "$a"
    assert got["else"] is not None


def test_when_and_else_when_branch_on_events() -> None:
    (got,) = steps("  when user confirm\n    bot ok\n  else when bot asked twice\n    stop\n")
    assert got["step"] == "when"
    assert [b["text"] for b in got["branches"]] == ["user confirm", "bot asked twice"]


def test_while_do_stop_abort_return_break_continue() -> None:
    got = steps(
        "  while $more\n    execute read\n    if $done\n      break\n    continue\n"
        "  do cleanup\n  return\n"
    )
    assert [s["step"] for s in got] == ["while", "call", "return"]
    assert got[1] == {"step": "call", "line": 7, "flow": "cleanup", "op": "do"}


def test_flow_modifiers_and_subflows() -> None:
    record = compile_colang(
        "define extension flow a\n  user x\n\ndefine subflow b\n  bot y\n", filename="t.co"
    )
    assert [(f["name"], f["kind"], f["modifiers"]) for f in record["flows"]] == [
        ("a", "flow", ["extension"]),
        ("b", "subflow", []),
    ]


def test_comments_are_ignored_even_after_a_statement() -> None:
    got = steps('  # a comment\n  bot say "a # in a text" # and a comment\n')
    assert got[0]["message"] == "say" and got[0]["text"] == "a # in a text"


def test_a_line_ending_in_a_backslash_continues() -> None:
    (got,) = steps("  if $a and \\\n     $b\n    bot x\n")
    assert got["branches"][0]["test"] == "$a and $b"


def test_imports_are_recorded() -> None:
    record = compile_colang("import core\ndefine flow f\n  bot x\n", filename="t.co")
    assert record["imports"] == [{"path": "core", "line": 1}]


@pytest.mark.parametrize(
    ("body", "construct"),
    [
        ("  goto x\n", "goto"),
        ("  label x\n", "label"),
        ("  any\n    bot a\n", "any"),
        ("  infer x\n", "infer"),
        ("  meta\n    x: 1\n", "meta"),
        ("  check $x\n", "check"),
        ("  user $msg\n", "user $variable"),
        ("  do $flows[0]\n", "dynamic flow"),
        ('  user "hi" as $m\n', "as"),
        ("  $y = do other\n", "$v = do"),
        ("  break\n", "break"),
        ("  match x\n", "match"),
        ("  if $a\n    bot x\n  elif $b\n    bot y\n", "elif"),
        ("  execute refund_card($x)\n", "positional argument"),
    ],
)
def test_unsupported_forms_are_refused_naming_the_construct(body: str, construct: str) -> None:
    line, column, got, _message = refused(body)
    assert got == construct
    assert line >= 2 and column is not None


def test_events_are_matched_and_created_and_creating_a_start_action_is_a_tool_call() -> None:
    got = steps(
        "  event UserSilent\n  create event InputRailException(message=$m)\n"
        '  new event StartNotifyAction(text="x")\n  bot ...\n'
    )
    assert got[0] == {"step": "event", "line": 2, "op": "match", "event": "UserSilent"}
    assert got[1]["op"] == "create" and got[1]["arguments"] == {"message": "$m"}
    assert (got[2]["step"], got[2]["tool"], got[2]["form"]) == ("tool", "notify", "send")
    assert got[3] == {"step": "bot", "line": 5, "any": True}


def test_a_bot_step_may_say_a_variable() -> None:
    assert steps("  bot $answer\n") == [{"step": "bot", "line": 2, "expression": "$answer"}]


def test_a_flow_without_a_name_is_anonymous() -> None:
    record = compile_colang("define flow\n  user x\n  bot y\n", filename="t.co")
    assert record["flows"][0]["name"] == "anonymous-1"


def test_an_unknown_statement_is_refused() -> None:
    assert refused("  frobnicate the order\n")[3] == "`frobnicate` is not a Colang 1.0 statement"


def test_a_statement_that_takes_no_block_cannot_have_one() -> None:
    assert refused("  bot x\n    bot y\n")[2] == "bot with indented block"


def test_a_define_bot_with_an_if_is_refused() -> None:
    with pytest.raises(RulebookUnsupported) as caught:
        compile_colang('define bot x\n  if $a\n    "a"\n', filename="t.co")
    assert caught.value.errors[0].construct == "define bot body"
