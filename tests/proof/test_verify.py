"""`verify_agent_file`: the files an agent names, the graph it builds, and what stops it."""

from __future__ import annotations

import pytest

from proof.engine import ConfigInvalid, build_agent_graph, load_graph, verify_agent_file

from .conftest import SHOP, shop_files

SHOP_TEXT = (SHOP / "agent.yaml").read_text()


def test_shop_graph_has_the_documented_nodes_and_locations() -> None:
    graph = load_graph(build_agent_graph(SHOP_TEXT, files=shop_files()))
    ids = {n.id for n in graph.nodes}
    assert {
        "desk_router",
        "desk_model",
        "desk_check_charge_card",
        "desk_confirm_charge_card",
        "desk_tool_charge_card",
        "desk_handoff_billing",
        "billing_router",
        "billing_tool_refund_card",
        "billing_end",
    } <= ids
    assert "billing_model" not in ids and "desk_confirm_get_order" not in ids
    tool = graph.node("billing_tool_refund_card")
    assert [str(at) for at in tool.at] == ["agent.yaml:10", "tools.py:84"]
    assert [str(at) for at in graph.node("desk_model").at] == ["agent.yaml:4", "agent.yaml:3"]


def test_the_rulebooks_route_is_where_the_refund_passes_its_check() -> None:
    doc = build_agent_graph(SHOP_TEXT, files=shop_files())
    [edge] = [
        e for e in doc["edges"] if e["from"] == "billing_check_refund_card" and e["on"] == "confirm"
    ]
    assert edge["when"] == [{"ran": "get_order"}]
    assert {"file": "policy.co", "line": 9} in edge["at"]


def test_a_module_may_be_named_by_its_path_or_found_beside_agent_yaml() -> None:
    files = shop_files()
    moved = {"policy.co": files["policy.co"], "lib/shop_tools.py": files["tools.py"]}
    report = verify_agent_file(SHOP_TEXT, files=moved, modules={"shop.tools": "lib/shop_tools.py"})
    assert [f.rule for f in report.findings] == ["QG023", "QG105"]


def test_a_rulebook_given_as_a_compiled_record_is_used_as_it_is() -> None:
    from rulebooks.compiler import compile_source

    files = shop_files()
    record = compile_source(files["policy.co"], filename="policy.co")
    report = verify_agent_file(
        SHOP_TEXT, files={"policy.co": record, "tools.py": files["tools.py"]}
    )
    assert report.rulebook.compiled and [f.rule for f in report.findings] == ["QG023", "QG105"]


def _problems(text, files):
    with pytest.raises(ConfigInvalid) as caught:
        verify_agent_file(text, files=files)
    return [str(p) for p in caught.value.problems]


def test_a_file_agent_yaml_names_but_nobody_gave_is_a_configuration_error() -> None:
    problems = _problems(SHOP_TEXT, {"tools.py": shop_files()["tools.py"]})
    assert problems == ["agent.yaml:16: rulebook: the rulebook `./policy.co` was not given"]
    problems = _problems(SHOP_TEXT, {"policy.co": shop_files()["policy.co"]})
    assert problems[0].startswith("agent.yaml:12: tools[0].python: the source of the module")


def test_a_catalogue_that_does_not_load_names_every_problem_with_its_line() -> None:
    text = SHOP_TEXT.replace("tools: [refund_card]", "tools: [refund_card, delete_all]")
    problems = _problems(text, shop_files())
    assert problems == [
        "agent.yaml:10: agents.billing.tools[1]: names a tool the catalogue does not have: "
        "`delete_all`"
    ]


def test_malformed_yaml_is_a_configuration_error_with_its_line() -> None:
    problems = _problems("agents:\n  desk: [\n", {})
    assert problems[0].startswith("agent.yaml:")
    assert "not valid YAML" in problems[0]


def test_a_tools_module_that_must_run_to_give_its_tools_is_refused() -> None:
    files = {**shop_files(), "tools.py": "TOOLS = build()\n"}
    problems = _problems(SHOP_TEXT, files)
    assert "cannot read `TOOLS` without running the module: a call" in problems[0]


def test_a_malformed_budget_is_refused() -> None:
    problems = _problems(SHOP_TEXT + "budget: {run: 0}\n", shop_files())
    assert problems == ["agent.yaml:18: budget.run: must be a whole number of steps, 1 or more"]


def test_a_budget_for_the_run_bounds_the_desks_loop() -> None:
    report = verify_agent_file(SHOP_TEXT + "budget: 30\n", files=shop_files())
    assert [f.rule for f in report.findings] == ["QG105"]
    assert report.depth == 30


def test_a_budget_for_the_agent_bounds_its_loop_in_the_state() -> None:
    report = verify_agent_file(SHOP_TEXT + "budget: {agents: {desk: 12}}\n", files=shop_files())
    assert [f.rule for f in report.findings] == ["QG105"]
    assert report.depth == 60


def test_an_agent_file_with_no_agent_is_a_configuration_error() -> None:
    text = "agents: {}\ntools:\n  - {name: t, kind: read, parameters: {type: object}}\n"
    assert _problems(text, {}) == ["agent.yaml:1: agents: an agent file names at least one agent"]
