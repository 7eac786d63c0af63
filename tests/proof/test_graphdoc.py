"""The `qls-graph/1` document: validated strictly, every problem named by its JSON path."""

from __future__ import annotations

import copy

import pytest

from proof.engine import GraphInvalid, graph_digest, load_graph, merge_overlay

from .conftest import SHOP, shop_files


@pytest.fixture(scope="module")
def shop_doc() -> dict:
    from proof.engine import build_agent_graph

    return build_agent_graph((SHOP / "agent.yaml").read_text(), files=shop_files())


def _problems(doc) -> list[tuple[str, str]]:
    with pytest.raises(GraphInvalid) as caught:
        load_graph(doc)
    return [(p.path, p.message) for p in caught.value.problems]


def _edge(doc, source, target):
    return next(i for i, e in enumerate(doc["edges"]) if e["from"] == source and e["to"] == target)


def test_built_shop_graph_validates(shop_doc) -> None:
    graph = load_graph(shop_doc)
    assert graph.digest == graph_digest(shop_doc)
    assert [graph.nodes[i].id for i in graph.entries] == ["desk_router", "billing_router"]


def test_digest_changes_when_anything_changes(shop_doc) -> None:
    changed = copy.deepcopy(shop_doc)
    changed["edges"][0]["on"] = "other"
    assert graph_digest(changed) != graph_digest(shop_doc)


def test_a_graph_that_is_not_an_object_is_refused() -> None:
    assert _problems([1, 2]) == [("$", "a graph document is a JSON object")]


def test_unknown_fields_kinds_and_duplicate_ids_are_refused_with_their_paths(shop_doc) -> None:
    doc = copy.deepcopy(shop_doc)
    doc["colour"] = "blue"
    doc["nodes"][1]["kind"] = "wizard"
    doc["nodes"][2]["id"] = doc["nodes"][0]["id"]
    doc["nodes"][3]["extra"] = True
    paths = {path for path, _ in _problems(doc)}
    assert {"$.colour", "$.nodes[1].kind", "$.nodes[2].id", "$.nodes[3].extra"} <= paths


def test_edges_must_join_nodes_the_graph_has(shop_doc) -> None:
    doc = copy.deepcopy(shop_doc)
    doc["edges"].append({"from": "desk_model", "to": "nowhere"})
    problems = _problems(doc)
    index = len(doc["edges"]) - 1
    assert (f"$.edges[{index}].to", "names a node the graph does not have: `nowhere`") in problems


def test_a_check_edge_may_not_claim_a_condition_the_tool_check_does_not_enforce(shop_doc) -> None:
    doc = copy.deepcopy(shop_doc)
    index = _edge(doc, "desk_check_get_order", "desk_tool_get_order")
    doc["edges"][index]["when"] = [{"ran": "charge_card"}]
    [(path, message)] = _problems(doc)
    assert path == f"$.edges[{index}].when"
    assert "does not enforce" in message


def test_a_check_edge_may_carry_what_the_catalogue_declares(shop_doc) -> None:
    doc = copy.deepcopy(shop_doc)
    index = _edge(doc, "desk_check_charge_card", "desk_confirm_charge_card")
    assert doc["edges"][index]["when"] == [{"ran": "get_order"}]
    load_graph(doc)


def test_conditions_of_two_routes_cannot_be_claimed_together() -> None:
    from proof.engine import build_agent_graph

    text = (
        "agents:\n  desk:\n    tools: [a, b, t]\n"
        "tools:\n"
        "  - {name: a, kind: read, parameters: {type: object, properties: {}}}\n"
        "  - {name: b, kind: read, parameters: {type: object, properties: {}}}\n"
        "  - {name: t, kind: read, parameters: {type: object, properties: {}}}\n"
        "facts:\n  fa: {from: a.ok}\n  fb: {from: b.ok}\nrulebook: p.co\n"
    )
    policy = (
        "define flow one\n  user x\n  if $fa\n    execute t\n"
        "define flow two\n  user y\n  if $fb\n    execute t\n"
    )
    doc = build_agent_graph(text, files={"p.co": policy})
    edges = [e for e in doc["edges"] if e["from"] == "desk_check_t" and e["on"] == "allow"]
    assert sorted(str(e["when"]) for e in edges) == ["[{'ran': 'a'}]", "[{'ran': 'b'}]"]
    edges[0]["when"] = [{"ran": "a"}, {"ran": "b"}]
    problems = _problems(doc)
    assert any("does not enforce together" in message for _, message in problems)


def test_only_a_check_edge_carries_conditions_on_the_call(shop_doc) -> None:
    doc = copy.deepcopy(shop_doc)
    index = _edge(doc, "desk_model", "desk_check_get_order")
    doc["edges"][index]["when"] = [{"ran": "get_order"}]
    [(path, message)] = _problems(doc)
    assert path == f"$.edges[{index}].when" and "only a tool check" in message


def test_malformed_conditions_are_refused(shop_doc) -> None:
    doc = copy.deepcopy(shop_doc)
    doc["edges"][0]["when"] = [
        {"ran": "x", "not_ran": "y"},
        {"chooser": ["robot"]},
        {"ran": "nope"},
    ]
    paths = [path for path, _ in _problems(doc)]
    assert paths == ["$.edges[0].when[0]", "$.edges[0].when[1]", "$.edges[0].when[2]"]


def test_turn_edges_go_from_an_end_to_a_router_and_carry_no_counter(shop_doc) -> None:
    doc = copy.deepcopy(shop_doc)
    turn = next(i for i, e in enumerate(doc["edges"]) if e.get("turn"))
    doc["edges"][0]["turn"] = True
    doc["edges"][turn]["exit_after"] = 3
    problems = dict(_problems(doc))
    assert problems["$.edges[0].turn"] == "a turn edge goes from an `end` to a `router`"
    assert "carries no counter" in problems[f"$.edges[{turn}].turn"]


def test_entries_must_be_routers(shop_doc) -> None:
    doc = copy.deepcopy(shop_doc)
    doc["entries"] = ["desk_model", "ghost"]
    problems = dict(_problems(doc))
    assert problems["$.entries[0]"] == "names `desk_model`, which is not a router"
    assert problems["$.entries[1]"] == "names a node the graph does not have: `ghost`"


def test_nodes_must_name_agents_and_tools_the_catalogue_has(shop_doc) -> None:
    doc = copy.deepcopy(shop_doc)
    check = next(i for i, n in enumerate(doc["nodes"]) if n["kind"] == "check")
    doc["nodes"][check]["tool"] = "delete_everything"
    doc["nodes"][0]["agent"] = "mallory"
    problems = dict(_problems(doc))
    assert "`delete_everything`" in problems[f"$.nodes[{check}].tool"]
    assert "`mallory`" in problems["$.nodes[0].agent"]


def test_embedded_catalogue_settings_and_record_are_loaded_by_their_own_loaders(shop_doc) -> None:
    doc = copy.deepcopy(shop_doc)
    doc["catalogue"]["agents"]["desk"]["privilege"] = "god"
    doc["settings"] = {"taint_policy": "ignore"}
    doc["rulebook"]["record"]["version"] = "other/9"
    paths = {path for path, _ in _problems(doc)}
    assert {
        "$.catalogue.agents.desk.privilege",
        "$.settings.taint_policy",
        "$.rulebook.record",
    } <= paths


def test_declarations_are_checked_against_the_catalogue(shop_doc) -> None:
    doc = copy.deepcopy(shop_doc)
    doc["declarations"] = {
        "arguments": {"get_order": {"order_id": "poetry"}, "ghost": {"x": "sql"}},
        "tools": {"get_order": {"reads_store": "nowhere"}},
        "agents": {"desk": {"channel": {"url": "https://x.example", "auth": "wink"}}},
        "colours": {},
    }
    paths = {path for path, _ in _problems(doc)}
    assert {
        "$.declarations.arguments.get_order.order_id",
        "$.declarations.arguments.ghost",
        "$.declarations.tools.get_order.reads_store",
        "$.declarations.agents.desk.channel.auth",
        "$.declarations.colours",
    } <= paths


def test_budgets_must_be_whole_numbers_for_agents_the_catalogue_has(shop_doc) -> None:
    doc = copy.deepcopy(shop_doc)
    doc["budget"] = {"run": 0, "agents": {"ghost": 3, "desk": "lots"}}
    paths = {path for path, _ in _problems(doc)}
    assert {"$.budget.run", "$.budget.agents.ghost", "$.budget.agents.desk"} <= paths


def test_overlay_adds_a_team_step_with_an_edge_per_route(shop_doc) -> None:
    merged = merge_overlay(
        shop_doc,
        {
            "nodes": [
                {"id": "desk_audit", "kind": "opaque", "agent": "desk", "routes": ["desk_end"]}
            ],
            "edges": [{"from": "desk_model", "to": "desk_audit"}],
        },
    )
    graph = load_graph(merged)
    audit = graph.node("desk_audit")
    assert audit.routes == ("desk_end",)
    assert [graph.nodes[graph.edges[e].target].id for e in graph.out_edges[audit.index]] == [
        "desk_end"
    ]


def test_overlay_edge_between_existing_steps_patches_its_counter(shop_doc) -> None:
    merged = merge_overlay(
        shop_doc, {"edges": [{"from": "desk_model", "to": "desk_check_get_order", "exit_after": 4}]}
    )
    graph = load_graph(merged)
    counters = [
        e.exit_after
        for e in graph.edges
        if graph.nodes[e.source].id == "desk_model"
        and graph.nodes[e.target].id == "desk_check_get_order"
    ]
    assert counters == [4]


def test_overlay_problems_name_the_overlays_own_paths(shop_doc) -> None:
    with pytest.raises(GraphInvalid) as caught:
        merge_overlay(
            shop_doc,
            {
                "nodes": [
                    {"id": "desk_router", "kind": "opaque"},
                    {"id": "x", "kind": "tool"},
                    {"id": "y", "kind": "opaque", "routes": ["nowhere"]},
                ],
                "edges": [{"from": "y", "to": "ghost"}],
                "extra": 1,
            },
        )
    paths = [p.path for p in caught.value.problems]
    assert paths == [
        "$.edges[0]",
        "$.extra",
        "$.nodes[0].id",
        "$.nodes[1].kind",
        "$.nodes[2].routes[0]",
    ]
