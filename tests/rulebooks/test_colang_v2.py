"""The Colang 2.x parser: each supported form, and what it refuses."""

from __future__ import annotations

import pytest

from rulebooks.compiler import RulebookUnsupported, compile_colang
from rulebooks.compiler.colang_common import action_tool_name, is_action_name


def flows(source: str) -> list[dict]:
    return compile_colang(source, filename="t.co")["flows"]


def steps(body: str) -> list[dict]:
    return flows(f"flow f\n{body}")[0]["steps"]


def refused(source: str) -> tuple[int, int | None, str | None, str]:
    with pytest.raises(RulebookUnsupported) as caught:
        compile_colang(source, filename="t.co")
    e = caught.value.errors[0]
    return e.line, e.column, e.construct, e.message


@pytest.mark.parametrize(
    ("action", "tool"),
    [
        ("RefundCardAction", "refund_card"),
        ("GetOrderAction", "get_order"),
        ("CheckURLAction", "check_url"),
        ("SelfCheckInputAction", "self_check_input"),
        ("Send2FACodeAction", "send2_fa_code"),
    ],
)
def test_an_action_governs_its_name_without_action_in_snake_case(action: str, tool: str) -> None:
    assert is_action_name(action)
    assert action_tool_name(action) == tool


@pytest.mark.parametrize("name", ["StartUtteranceBotAction", "StopX", "UserSilent", "Action"])
def test_events_are_not_actions(name: str) -> None:
    assert not is_action_name(name)


def test_await_start_and_a_bare_action_are_tool_calls() -> None:
    got = steps(
        "  await RefundCardAction(order_id=$order_id)\n  start NotifyAction() as $n\n"
        "  GetOrderAction(order_id=$o)\n  $r = await CheckAction\n"
    )
    assert [(s["step"], s["tool"], s["op"]) for s in got] == [
        ("tool", "refund_card", "await"),
        ("tool", "notify", "start"),
        ("tool", "get_order", "await"),
        ("tool", "check", "await"),
    ]
    assert got[0]["action"] == "RefundCardAction"
    assert got[1]["capture"] == "n"
    assert got[3]["result"] == "r"


def test_execute_and_bot_execute_are_accepted_in_colang_2() -> None:
    got = steps(
        "  execute refund_card(order_id=$order_id)\n  bot execute_charge_card $order_id=$order_id\n"
    )
    assert [(s["tool"], s["form"]) for s in got] == [
        ("refund_card", "execute"),
        ("charge_card", "bot execute"),
    ]
    assert got[1]["arguments"] == {"order_id": "$order_id"}


def test_send_of_a_start_action_event_is_a_tool_call_and_other_sends_are_events() -> None:
    got = steps('  send StartLogAction(kind="x")\n  send UserSilent\n  match $ref.Finished()\n')
    assert (got[0]["step"], got[0]["tool"], got[0]["form"]) == ("tool", "log", "send")
    assert got[1] == {"step": "event", "line": 3, "op": "send", "event": "UserSilent"}
    assert got[2]["event"] == "$ref.Finished()"


def test_matching_an_action_or_its_event_is_not_a_call() -> None:
    got = steps("  match RefundCardAction.Finished()\n")
    assert got[0]["step"] == "event"


def test_user_said_and_bot_say_are_dialogue_steps() -> None:
    got = steps('  user said "hi"\n  user said something\n  bot say "hello"\n  bot refuse\n')
    assert got[0]["text"] == "hi" and got[0]["step"] == "user"
    assert got[1]["any"] is True
    assert got[2]["text"] == "hello" and got[2]["step"] == "bot"
    assert got[3]["message"] == "refuse"


def test_a_user_intent_flow_gives_its_examples_and_a_bot_flow_its_texts() -> None:
    record = compile_colang(
        "@meta(user_intent=True)\nflow user ask refund\n"
        '  user said "refund it" or user said "money back"\n\n'
        'flow bot refuse\n  bot say "No."\n',
        filename="t.co",
    )
    assert record["user_intents"] == [
        {"name": "ask refund", "examples": ["refund it", "money back"], "line": 2}
    ]
    assert record["bot_messages"] == [{"name": "refuse", "texts": ["No."], "line": 5}]
    assert record["flows"][0]["decorators"] == [
        {"name": "meta", "arguments": {"user_intent": "True"}}
    ]


def test_if_elif_else_if_and_else() -> None:
    (got,) = steps(
        "  if $a\n    bot x\n  elif $b\n    bot y\n  else if $c\n    bot z\n  else\n    bot w\n"
    )
    assert [b["test"] for b in got["branches"]] == ["$a", "$b", "$c"]
    assert got["else"]["steps"][0]["message"] == "w"


def test_when_or_when_else() -> None:
    (got,) = steps(
        '  when user said "yes"\n    bot ok\n  or when user said "no"\n    bot cancel\n'
        "  else\n    bot what\n"
    )
    assert [b["text"] for b in got["branches"]] == ['user said "yes"', 'user said "no"']
    assert got["else"]["steps"][0]["message"] == "what"


def test_a_line_starting_with_or_continues_the_one_before() -> None:
    (got,) = steps('  user said "a"\n    or user said "b"\n')
    assert got["step"] == "group"
    assert [i["text"] for i in got["items"]] == ["a", "b"]


def test_flow_parameters_returns_and_calls_with_arguments() -> None:
    (flow, caller) = flows(
        'flow greet $name $times=2 -> $said\n  bot say "hi"\n\nflow main\n  greet "Ana" $times=3\n'
    )
    assert flow["parameters"] == [
        {"name": "name", "default": None},
        {"name": "times", "default": "2"},
    ]
    assert flow["returns"] == [{"name": "said", "default": None}]
    assert caller["steps"][0] == {
        "step": "call",
        "line": 5,
        "op": "await",
        "flow": "greet",
        "arguments": {"$0": '"Ana"', "times": "3"},
    }


def test_classic_flow_parameters() -> None:
    (flow,) = flows('flow greet($name, $times=2)\n  bot say "hi"\n')
    assert [p["name"] for p in flow["parameters"]] == ["name", "times"]


def test_simple_statements() -> None:
    got = steps(
        "  global $count\n  $count = $count + 1\n  $count -= 1\n  log $count\n"
        "  print $count\n  priority 0.5\n  pass\n  return $count\n"
    )
    assert [s["step"] for s in got] == [
        "global",
        "set",
        "set",
        "log",
        "print",
        "priority",
        "pass",
        "return",
    ]


def test_abort_ends_the_flow() -> None:
    assert steps("  abort\n") == [{"step": "abort", "line": 2}]


def test_imports_of_both_spellings() -> None:
    record = compile_colang('import core\nimport "my/rails"\nflow f\n  bot x\n', filename="t.co")
    assert [i["path"] for i in record["imports"]] == ["core", "my/rails"]


def test_a_doc_string_in_a_flow_is_ignored() -> None:
    assert steps('  """What it does."""\n  bot x\n')[0]["message"] == "x"


@pytest.mark.parametrize(
    ("source", "construct"),
    [
        ("flow f\n  ...\n", "..."),
        ("flow f\n  $x = ...\n", "..."),
        ("flow f\n  here:\n", "label"),
        ("flow f\n  bot say Hello\n", "spec name"),
        ("flow f\n  if $x.keys()\n    bot y\n", "method"),
        ("flow f\n  if $x[1:]\n    bot y\n", "slice"),
        ("flow f\n  if 2 ** $x\n    bot y\n", "operator"),
        ("@cached\nflow f\n  bot x\n", "@"),
        ("flow f\n  continue\n", "continue"),
        ("flow f\n  await RefundCardAction($x)\n", "positional argument"),
        ("bot say 'hi'\n\nflow f\n  bot x\n", "top-level statement"),
        ("flow f\n  bot x\nflow f\n  bot y\n", "duplicate flow"),
        ("flow f\n  when user said 'a'\n    bot x\n  else when bot y\n    bot z\n", "else when"),
    ],
)
def test_unsupported_forms_are_refused_naming_the_construct(source: str, construct: str) -> None:
    assert refused(source)[2] == construct


def test_a_decorator_not_followed_by_a_flow_is_refused() -> None:
    assert refused("@active\nimport core\nflow f\n  bot x\n")[3] == (
        "a decorator must come right before a `flow`"
    )


def test_an_empty_flow_is_refused() -> None:
    assert refused("flow f\n")[3] == "the flow `f` needs an indented block"
