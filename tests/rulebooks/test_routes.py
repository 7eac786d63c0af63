"""Routes: the conditions under which each flow reaches each tool call."""

from __future__ import annotations

import pytest

from rulebooks.compiler import RulebookUnsupported, compile_colang
from rulebooks.compiler.routes import MAX_TERMS, simplify


def routes(source: str, tool: str = "t") -> list[dict]:
    return compile_colang(source, filename="t.co")["tools"][tool]["routes"]


def conditions(route: dict) -> list[tuple[str, bool]]:
    return [(c.get("condition") or c.get("event"), c["holds"]) for c in route["conditions"]]


def test_branches_that_both_carry_on_add_no_condition() -> None:
    (route,) = routes("define flow f\n  if $a\n    bot x\n  else\n    bot y\n  execute t\n")
    assert conditions(route) == []


def test_an_if_without_else_that_carries_on_adds_no_condition() -> None:
    (route,) = routes("define flow f\n  if $a\n    bot x\n  execute t\n")
    assert conditions(route) == []


def test_a_stop_leaves_the_negated_condition_on_later_calls() -> None:
    (route,) = routes("define flow f\n  if $a\n    bot x\n    stop\n  execute t\n")
    assert conditions(route) == [("$a", False)]
    assert route["conditions"][0]["otherwise"] == {"bot": "x", "line": 3}


def test_an_else_if_branch_needs_every_earlier_condition_false() -> None:
    (route,) = routes("define flow f\n  if $a\n    bot x\n  else if $b\n    execute t\n")
    assert conditions(route) == [("$a", False), ("$b", True)]


def test_a_call_inside_a_loop_needs_the_loop_condition() -> None:
    (route,) = routes("define flow f\n  while $more\n    execute t\n")
    assert conditions(route) == [("$more", True)]


def test_a_call_after_a_loop_without_break_needs_the_loop_condition_false() -> None:
    (route,) = routes("define flow f\n  while $more\n    bot x\n  execute t\n")
    assert conditions(route) == [("$more", False)]


def test_a_loop_that_always_runs_is_left_only_by_break() -> None:
    (route,) = routes(
        "define flow f\n  while True\n    if $done\n      break\n    bot x\n  execute t\n"
    )
    assert conditions(route) == [("$done", True)]


def test_a_call_under_a_false_constant_is_never_reached() -> None:
    assert routes("define flow f\n  if False\n    execute t\n") == []


def test_routes_through_nested_calls_keep_every_call_site() -> None:
    (route,) = routes(
        "define subflow inner\n  execute t\n\ndefine subflow middle\n  do inner\n\n"
        "define flow outer\n  user x\n  do middle\n"
    )
    assert route["flow"] == "inner"
    assert route["via"] == [{"flow": "outer", "line": 9}, {"flow": "middle", "line": 5}]


def test_a_recursive_flow_compiles_and_keeps_its_route() -> None:
    (route,) = routes(
        "define subflow a\n  do b\n\ndefine subflow b\n  do a\n  execute t\n"
        "\ndefine flow main\n  user x\n  do a\n"
    )
    assert route["flow"] == "b"


def test_colang_2_variables_bind_arguments_only_in_their_own_flow() -> None:
    source = (
        "flow guard\n  if $amount > 100\n    abort\n\n"
        "flow pay\n  guard\n  await TAction(amount=$amount)\n"
    )
    (route,) = routes(source)
    assert route["conditions"][0]["test"]["args"][0] == {"fact": "amount"}


def test_colang_1_variables_bind_arguments_across_flows() -> None:
    source = (
        "define subflow guard\n  if $amount > 100\n    stop\n\n"
        "define flow pay\n  user x\n  do guard\n  execute t(amount=$amount)\n"
    )
    (route,) = routes(source)
    assert route["conditions"][0]["test"]["args"][0] == {"arg": "amount"}


def test_a_variable_assigned_once_at_the_top_stands_for_its_expression() -> None:
    (route,) = routes("define flow f\n  $limit = 100\n  if $amount < $limit\n    execute t\n")
    test = route["conditions"][0]["test"]
    assert test == {"op": "<", "args": [{"fact": "amount"}, {"value": 100}]}


def test_a_variable_assigned_twice_is_unknown() -> None:
    (route,) = routes("define flow f\n  $x = 1\n  $x = 2\n  if $x\n    execute t\n")
    assert route["conditions"][0]["test"]["unknown"] == "x"


def test_a_flow_parameter_is_unknown_unless_the_call_passes_it() -> None:
    (route,) = routes("flow f $limit\n  if $limit\n    await TAction()\n")
    assert route["conditions"][0]["test"] == {"unknown": "limit", "why": "a flow parameter"}
    (route,) = routes("flow f $limit\n  if $limit\n    await TAction(limit=$limit)\n")
    assert route["conditions"][0]["test"] == {"arg": "limit"}


def test_simplify_merges_complementary_terms() -> None:
    assert simplify([((0, True), (1, True)), ((0, True), (1, False))]) == [((0, True),)]
    assert simplify([((0, True),), ((0, True), (1, True))]) == [((0, True),)]
    assert simplify([((0, True),), ((0, False),)]) == [()]


def test_too_many_combined_conditions_are_refused_not_compiled_slowly() -> None:
    body = "".join(
        f"  if $a{i}\n    if $b{i}\n      stop\n  else\n    if $c{i}\n      stop\n"
        for i in range(8)
    )
    with pytest.raises(RulebookUnsupported) as caught:
        compile_colang(f"define flow f\n{body}  execute t\n", filename="t.co")
    error = caught.value.errors[0]
    assert error.construct == "complexity"
    assert str(MAX_TERMS) in error.message
