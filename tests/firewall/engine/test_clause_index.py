"""The clause index: broad rules found from the call's argument values, with the reference's answer."""

from __future__ import annotations

from typing import Any

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from firewall.engine import CompiledPolicy, compile_policy, reference_evaluate
from firewall.engine import clause_index as clause_index_module
from firewall.engine.clause_index import ClauseIndex, json_key, key_clause
from firewall.engine.compiled import MIN_INDEXED_RULES
from firewall.engine.values import MAX_VALUE_DEPTH, json_equal

from .conftest import policy

QUIET = {"url": "https://example.com/", "env": "staging", "ip": "192.0.2.1", "user": "alice"}


def broad_rules(
    name: str, path: str, op: str, value: str, count: int = 20, **extra: Any
) -> list[dict[str, Any]]:
    """`count` rules with glob `*`, rule n named `name.format(n)` with one clause, value
    `value.format(n)`."""
    return [
        {
            "name": name.format(n),
            "tool_name_glob": "*",
            "args_match": [{"path": path, "op": op, "value": value.format(n)}],
            "verdict": "deny",
            **extra,
        }
        for n in range(count)
    ]


def broad(count: int, **extra: Any) -> list[dict[str, Any]]:
    """`count` rules with glob `*`, each an `eq` on `$.env` with its own value."""
    return broad_rules("env {}", "$.env", "eq", "env-{}", count, **extra)


def the_index(compiled: CompiledPolicy, stage: str = "tool_call") -> ClauseIndex:
    (_plain, index), *_ = compiled._by_stage[stage].split.values()
    return index


def found_names(compiled: CompiledPolicy, arguments: dict[str, Any]) -> list[str]:
    return [rule.name for rule in the_index(compiled).lookup(arguments)]


def agree(data: dict[str, Any], *calls: dict[str, Any]) -> None:
    compiled = compile_policy(data, strict=False)
    for call in calls:
        expected = reference_evaluate(data, call).to_dict()
        assert compiled.evaluate(call).to_dict() == expected, call


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, 1.0, -0.0, 2.5, 2**53 + 1, float(2**53)]),
    st.sampled_from(["", "1", "a", "true"]),
)
_values = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b"]), children, max_size=2)
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(first=_values, second=_values)
def test_json_keys_are_equal_exactly_when_the_values_are_json_equal(
    first: Any, second: Any
) -> None:
    assert (json_key(first) == json_key(second)) == json_equal(first, second)


def test_true_is_not_one_and_one_is_one_point_zero() -> None:
    assert json_key(True) != json_key(1)
    assert json_key(1) == json_key(1.0)
    assert json_key(None) != json_key([]) and json_key([]) != json_key({})


def test_subclasses_of_strings_and_numbers_are_keyed_as_their_values() -> None:
    class Text(str):
        pass

    class Count(int):
        pass

    class Amount(float):
        pass

    assert json_key(Text("a")) == "a" and json_key(Count(3)) == 3
    assert json_key(Amount(2.5)) == 2.5 and json_key(Amount(2.0)) == 2


def test_a_value_that_is_not_json_has_no_key() -> None:
    assert json_key(object()) is None
    assert json_key([1, object()]) is None
    assert json_key({"a": (1, 2)}) is None


def test_a_value_nested_deeper_than_a_rule_may_have_no_key() -> None:
    value: Any = "x"
    for _ in range(MAX_VALUE_DEPTH):
        value = [value]
    assert json_key(value) is not None
    assert json_key([value]) is None
    nested: Any = "x"
    for _ in range(MAX_VALUE_DEPTH):
        nested = {"a": nested}
    assert json_key(nested) is not None
    assert json_key({"a": nested}) is None


def test_an_argument_nested_thousands_deep_is_decided_without_error() -> None:
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    data = policy(*broad(20), {"tool_name_glob": "*", "verdict": "audit", "name": "catch"})
    data["rules"][0]["args_match"] = [{"path": "$.env", "op": "eq", "value": [[1]]}]
    decision = compile_policy(data).evaluate({"tool": "t", "arguments": {"env": deep}})
    assert decision.rule == "catch"


def test_a_call_that_matches_no_broad_rule_gets_no_candidate_from_the_index() -> None:
    compiled = compile_policy(policy(*broad(1000)))
    assert found_names(compiled, QUIET) == []
    assert found_names(compiled, {**QUIET, "env": "env-417"}) == ["env 417"]
    assert compiled.evaluate({"tool": "any.tool", "arguments": QUIET}).rule is None


def test_the_index_files_each_operator_under_its_path() -> None:
    rules = [
        ("eq", {"path": "$.env", "op": "eq", "value": "prod"}),
        ("eq number", {"path": "$.n", "op": "eq", "value": 1}),
        ("eq nested", {"path": "$.target.host", "op": "eq", "value": "db.internal"}),
        ("eq list", {"path": "$.tags", "op": "eq", "value": ["a", {"b": True}]}),
        ("in", {"path": "$.user", "op": "in", "value": ["root", "admin", "root"]}),
        ("regex", {"path": "$.url", "op": "regex", "value": r"(?i)^https?://10\."}),
        ("contains", {"path": "$.url", "op": "contains", "value": "/admin/"}),
        ("contains number", {"path": "$.tags", "op": "contains", "value": 7}),
        ("starts_with", {"path": "$.url", "op": "starts_with", "value": "ftp:"}),
        ("ends_with", {"path": "$.url", "op": "ends_with", "value": ".exe"}),
        ("cidr", {"path": "$.ip", "op": "cidr", "value": "10.0.0.0/8"}),
        ("cidr host", {"path": "$.ip", "op": "cidr", "value": "169.254.169.254"}),
        ("cidr v6", {"path": "$.ip", "op": "cidr", "value": "fe80::/10"}),
        ("root", {"path": "$", "op": "eq", "value": {"only": 1}}),
        ("first", {"path": "$.list[0]", "op": "eq", "value": "x"}),
    ]
    compiled = compile_policy(
        policy(
            *(
                {"name": name, "tool_name_glob": "*", "args_match": [clause], "verdict": "deny"}
                for name, clause in rules
            )
        )
    )
    assert found_names(compiled, {"env": "prod", "n": 1.0, "target": {"host": "db.internal"}}) == [
        "eq",
        "eq number",
        "eq nested",
    ]
    assert found_names(compiled, {"n": True, "env": ["prod"], "target": "db.internal"}) == []
    assert found_names(compiled, {"tags": ["a", {"b": True}]}) == ["eq list"]
    assert found_names(compiled, {"tags": ["a", 7.0, 7]}) == ["contains number"]
    assert (
        found_names(compiled, {"tags": 7}) == [] and found_names(compiled, {"tags": {"a": 7}}) == []
    )
    assert found_names(compiled, {"tags": ["/admin/"], "user": "root"}) == ["in"]
    assert found_names(compiled, {"url": "HTTP://10.1.1.1/admin/x.exe"}) == [
        "regex",
        "contains",
        "ends_with",
    ]
    assert found_names(compiled, {"url": "ftp://h/admin"}) == ["starts_with"]
    assert found_names(compiled, {"url": "sftp://h/a.exe?x"}) == []
    assert found_names(compiled, {"ip": "0x0A010203"}) == ["cidr"]
    assert found_names(compiled, {"ip": "::ffff:169.254.169.254"}) == ["cidr host"]
    assert found_names(compiled, {"ip": "fe80::1%eth0"}) == ["cidr v6"]
    assert found_names(compiled, {"ip": "not an address"}) == []
    assert found_names(compiled, {"only": 1}) == ["root"]
    assert found_names(compiled, {"list": ["x", "y"]}) == ["first"]
    assert found_names(compiled, {"list": ["y", "x"]}) == []


def test_a_string_subclass_is_looked_up_as_its_text() -> None:
    class Text(str):
        pass

    compiled = compile_policy(policy(*broad(20)))
    assert found_names(compiled, {Text("env"): Text("env-3")}) == ["env 3"]
    assert found_names(compiled, {1: "env-3"}) == []


def test_arguments_with_more_keys_than_the_index_has_paths_are_looked_up_by_path() -> None:
    rules = broad(20)
    rules[0]["args_match"] = [{"path": "$.gone", "op": "eq", "value": None}]
    compiled = compile_policy(policy(*rules))
    many = {f"k{n}": n for n in range(10)}
    assert found_names(compiled, {**many, "env": "env-4"}) == ["env 4"]
    assert found_names(compiled, {**many, "gone": None}) == ["env 0"]
    assert found_names(compiled, many) == []  # a missing key is not null


def test_a_rule_found_twice_in_one_array_is_a_candidate_once() -> None:
    rules = broad_rules("tag {}", "$.tags", "contains", "t{}")
    compiled = compile_policy(policy(*rules))
    assert found_names(compiled, {"tags": ["t2", "t1", "t2"]}) == ["tag 1", "tag 2"]
    assert found_names(compiled, {"tags": ["t2", {"a": 1}, ["t3"], "t1"]}) == ["tag 1", "tag 2"]


def test_an_array_or_object_inside_an_array_is_found_by_contains() -> None:
    rules = broad(20)
    rules[0]["args_match"] = [{"path": "$.tags", "op": "contains", "value": {"k": [1]}}]
    compiled = compile_policy(policy(*rules))
    assert found_names(compiled, {"tags": ["x", {"k": [1.0]}]}) == ["env 0"]
    assert found_names(compiled, {"tags": [{"k": [True]}]}) == []


def test_candidates_come_in_first_match_order() -> None:
    rules = broad(20)
    for number, rule in enumerate(rules):
        rule["priority"] = 100 - number
        rule["args_match"] = [{"path": "$.env", "op": "in", "value": ["x", f"env-{number}"]}]
    compiled = compile_policy({"name": "p", "default_verdict": "allow", "rules": rules})
    assert found_names(compiled, {"env": "x"}) == [f"env {n}" for n in reversed(range(20))]


def test_the_key_clause_is_the_most_selective_one() -> None:
    regex = {"path": "$.a", "op": "regex", "value": "x"}
    eq = {"path": "$.b", "op": "eq", "value": "y"}
    member = {"path": "$.c", "op": "in", "value": ["z"]}
    cidr = {"path": "$.d", "op": "cidr", "value": "10.0.0.0/8"}
    prefix = {"path": "$.e", "op": "starts_with", "value": "p"}
    empty = {"path": "$.e", "op": "contains", "value": ""}
    assert key_clause([regex, member, eq]) is eq
    assert key_clause([regex, cidr, member]) is member
    assert key_clause([regex, prefix, cidr]) is cidr
    assert key_clause([regex, prefix]) is prefix
    assert key_clause([empty, regex]) is empty
    for op in ("contains", "starts_with", "ends_with"):
        assert key_clause([regex, {"path": "$.e", "op": op, "value": ""}]) is regex
    assert (
        key_clause([{"path": "$.a", "op": "neq", "value": 1}, {"path": "$.a", "op": "exists"}])
        is None
    )


def test_a_bucket_is_split_only_from_the_minimum_number_of_fileable_rules() -> None:
    below = compile_policy(policy(*broad(MIN_INDEXED_RULES - 1)))
    assert below._by_stage["tool_call"].split == {}
    few = broad(MIN_INDEXED_RULES - 1)
    few += [{"tool_name_glob": "*", "verdict": "deny", "name": f"u{n}"} for n in range(5)]
    assert compile_policy(policy(*few))._by_stage["tool_call"].split == {}
    at = compile_policy(policy(*broad(MIN_INDEXED_RULES)))
    assert the_index(at).size == MIN_INDEXED_RULES
    unfileable = [{"tool_name_glob": "*", "verdict": "deny", "name": f"u{n}"} for n in range(40)]
    assert compile_policy(policy(*unfileable))._by_stage["tool_call"].split == {}


def test_rules_the_index_cannot_answer_stay_on_the_plain_list() -> None:
    rules = broad(20)
    rules.append(
        {
            "name": "not staging",
            "tool_name_glob": "*",
            "args_match": [{"path": "$.env", "op": "neq", "value": "staging"}],
            "verdict": "audit",
        }
    )
    compiled = compile_policy(policy(*rules))
    (plain, index), *_ = compiled._by_stage["tool_call"].split.values()
    assert [rule.name for rule in plain] == ["not staging"] and index.size == 20
    assert compiled.evaluate({"tool": "t", "arguments": {"env": "dev"}}).rule == "not staging"


def test_a_bucket_that_every_stage_shares_is_split_once() -> None:
    compiled = compile_policy(policy(*broad(20)))
    indexes = [the_index(compiled, stage) for stage in ("inbound", "tool_call", "egress")]
    assert indexes[0] is indexes[1] is indexes[2]


def test_the_first_rule_by_priority_wins_between_the_plain_list_and_the_index() -> None:
    rules = broad(20)
    rules[5]["priority"] = 30
    rules[5]["id"] = 2
    rules.append(
        {"tool_name_glob": "*", "verdict": "audit", "name": "plain", "priority": 30, "id": 1}
    )
    data = {
        "name": "p",
        "default_verdict": "allow",
        "rules": [{**r, "priority": r.get("priority", 50)} for r in rules],
    }
    agree(
        data,
        {"tool": "t", "arguments": {"env": "env-5"}},
        {"tool": "t", "arguments": {"env": "env-6"}},
    )
    assert (
        compile_policy(data).evaluate({"tool": "t", "arguments": {"env": "env-5"}}).rule == "plain"
    )


def test_shadow_rules_found_by_the_index_are_reported_before_the_deciding_rule() -> None:
    rules = broad(20)
    rules[0]["mode"] = "shadow"
    rules[1]["args_match"] = [{"path": "$.env", "op": "eq", "value": "env-0"}]
    data = policy(*rules)
    decision = compile_policy(data).evaluate({"tool": "t", "arguments": {"env": "env-0"}})
    assert decision.rule == "env 1"
    assert [entry["rule"] for entry in decision.shadow] == ["env 0"]
    agree(data, {"tool": "t", "arguments": {"env": "env-0"}})


def test_disabled_rules_and_other_stages_are_not_found() -> None:
    rules = broad(20)
    rules[3]["enabled"] = False
    rules[4]["stage"] = "egress"
    data = policy(*rules)
    agree(
        data,
        {"tool": "t", "arguments": {"env": "env-3"}},
        {"tool": "t", "arguments": {"env": "env-4"}},
        {"tool": "t", "stage": "egress", "arguments": {"env": "env-4"}},
    )
    compiled = compile_policy(data)
    assert compiled.evaluate({"tool": "t", "arguments": {"env": "env-3"}}).rule is None
    assert compiled.evaluate({"tool": "t", "arguments": {"env": "env-4"}}).rule is None


def test_skill_globs_still_restrict_the_rules_the_index_finds() -> None:
    data = policy(*broad(20, skill_glob="community.*"))
    compiled = compile_policy(data)
    call = {"tool": "t", "arguments": {"env": "env-2"}}
    assert compiled.evaluate(call).rule is None
    assert compiled.evaluate({**call, "skill": "community.x"}).rule == "env 2"
    agree(data, call, {**call, "skill": "community.x"})


def test_every_clause_of_a_found_rule_is_still_tested() -> None:
    rules = broad(20)
    rules[7]["args_match"].append({"path": "$.user", "op": "eq", "value": "root"})
    data = policy(*rules)
    compiled = compile_policy(data)
    assert compiled.evaluate({"tool": "t", "arguments": {"env": "env-7"}}).rule is None
    assert (
        compiled.evaluate({"tool": "t", "arguments": {"env": "env-7", "user": "root"}}).rule
        == "env 7"
    )


def test_arguments_that_are_not_an_object_match_no_filed_rule() -> None:
    compiled = compile_policy(policy(*broad(20)))
    for arguments in (["env-1"], "env-1", None):
        assert compiled.evaluate({"tool": "t", "arguments": arguments}).rule is None


def test_a_broken_clause_among_broad_rules_makes_only_its_own_rule_not_fire() -> None:
    rules = broad(20)
    rules[0]["args_match"] = [
        {"path": "$.env", "op": "eq", "value": "env-1"},
        {"path": "$.url", "op": "regex", "value": "(broken"},
    ]
    data = policy(*rules)
    compiled = compile_policy(data, strict=False)
    decision = compiled.evaluate({"tool": "t", "arguments": {"env": "env-1"}})
    assert decision.rule == "env 1"
    assert len(decision.errors) == 1 and "rule 0" not in decision.errors[0]
    assert "env 0" in decision.errors[0]
    agree(data, {"tool": "t", "arguments": {"env": "env-1"}})


def test_a_failed_set_scan_makes_every_text_rule_a_candidate() -> None:
    rules = broad_rules("url {}", "$.url", "regex", "h{}\\.example")
    compiled = compile_policy(policy(*rules))
    url = the_index(compiled).by_key["url"]
    assert found_names(compiled, {"url": "https://h3.example/"}) == ["url 3"]
    url.text_match = lambda data: []  # what RE2's set answers when its matcher runs out of memory
    # (a text seen before is answered from memory: a new one goes to the failing matcher)
    assert len(found_names(compiled, {"url": "https://h3.example/a"})) == 20
    decision = compiled.evaluate({"tool": "t", "arguments": {"url": "https://h3.example/b"}})
    assert decision.rule == "url 3"
    url.text_match = lambda data: [5]  # an answer without the pattern that matches every text
    assert len(found_names(compiled, {"url": "x"})) == 20
    assert "x" not in url.text_seen and "https://h3.example/a" not in url.text_seen


def test_the_set_answers_a_text_seen_before_from_memory_as_it_did() -> None:
    rules = broad_rules("url {}", "$.url", "regex", "h{}\\.example")
    compiled = compile_policy(policy(*rules))
    url = the_index(compiled).by_key["url"]
    scans: list[bytes] = []
    scan = url.text_match

    def counted(data: bytes) -> object:
        scans.append(data)
        return scan(data)

    url.text_match = counted
    for _ in range(3):
        assert found_names(compiled, {"url": "https://h3.example/h4.example"}) == ["url 3", "url 4"]
        assert found_names(compiled, {"url": "https://nowhere/"}) == []
    assert len(scans) == 2
    long_text = "https://h5.example/" + "x" * 300  # too long to remember: scanned every time
    for _ in range(2):
        assert found_names(compiled, {"url": long_text}) == ["url 5"]
    assert len(scans) == 4


def test_the_texts_the_set_remembers_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clause_index_module, "_MAX_REMEMBERED_TEXTS", 3)
    rules = broad_rules("url {}", "$.url", "regex", "h{}\\.example")
    compiled = compile_policy(policy(*rules))
    url = the_index(compiled).by_key["url"]
    for number in range(3):
        found_names(compiled, {"url": f"https://h{number}.example/"})
    assert len(url.text_seen) == 3
    assert found_names(compiled, {"url": "https://h7.example/"}) == ["url 7"]
    assert list(url.text_seen) == ["https://h7.example/"]


def test_a_set_that_does_not_compile_leaves_its_rules_to_their_own_tests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Refusing:
        def Add(self, pattern: str) -> int:  # noqa: N802 - RE2's name
            return 0

        def Compile(self) -> None:  # noqa: N802 - RE2's name
            raise re2.error("failed to compile Set")

    monkeypatch.setattr(clause_index_module.re2.Set, "SearchSet", lambda options: Refusing())
    rules = broad_rules("path {}", "$.path", "ends_with", "/{}.key")
    compiled = compile_policy(policy(*rules))
    assert the_index(compiled).by_key["path"].text_match is None
    assert compiled.evaluate({"tool": "t", "arguments": {"path": "/etc/4.key"}}).rule == "path 4"
    assert compiled.evaluate({"tool": "t", "arguments": {"path": "/etc/x"}}).rule is None


def test_a_literal_re2_cannot_read_is_a_candidate_of_every_string() -> None:
    rules = broad(20)
    rules[0]["args_match"] = [{"path": "$.env", "op": "contains", "value": "\udcff"}]
    rules[1]["args_match"] = [{"path": "$.env", "op": "contains", "value": "?"}]
    data = policy(*rules)
    compiled = compile_policy(data, strict=False)
    assert found_names(compiled, {"env": "plain"}) == ["env 0"]
    calls = [{"tool": "t", "arguments": {"env": text}} for text in ("a\udcffb", "a?b", "plain")]
    agree(data, *calls)
    assert compiled.evaluate(calls[0]).rule == "env 0"
    assert compiled.evaluate(calls[2]).rule is None


def test_sanitize_and_egress_rules_found_by_the_index_decide_as_the_reference() -> None:
    rules = broad(20)
    rules[2] |= {"verdict": "sanitize", "sanitize": {"presets": ["email"]}}
    rules[3] |= {"stage": "egress", "egress": {"deny": ["10.0.0.0/8"]}}
    data = policy(*rules)
    calls = [
        {"tool": "t", "arguments": {"env": "env-2", "to": "a@b.example"}},
        {
            "tool": "t",
            "stage": "egress",
            "destination": "http://10.1.2.3/",
            "arguments": {"env": "env-3"},
        },
        {
            "tool": "t",
            "stage": "egress",
            "destination": "http://93.184.216.34/",
            "arguments": {"env": "env-3"},
        },
    ]
    agree(data, *calls)
    compiled = compile_policy(data)
    decision = compiled.evaluate(calls[0])
    assert decision.verdict == "sanitize" and "a@b.example" not in str(decision.arguments)
    assert compiled.evaluate(calls[1]).rule == "env 3"
    assert compiled.evaluate(calls[2]).rule is None


def test_an_address_of_a_version_no_rule_names_finds_nothing() -> None:
    rules = broad_rules("net {}", "$.ip", "cidr", "10.{}.0.0/16")
    compiled = compile_policy(policy(*rules))
    assert found_names(compiled, {"ip": "2001:db8::1"}) == []
    assert found_names(compiled, {"ip": "::ffff:10.3.0.1"}) == ["net 3"]


def test_a_key_with_only_eq_rules_answers_values_that_are_not_strings_too() -> None:
    values: list[Any] = [f"env-{n}" for n in range(14)] + [7, 1.5, True, None, ["a", 1], {"k": 2}]
    rules = [
        {
            "name": f"eq {number}",
            "tool_name_glob": "*",
            "args_match": [{"path": "$.env", "op": "eq", "value": value}],
            "verdict": "deny",
        }
        for number, value in enumerate(values)
    ]
    data = policy(*rules)
    compiled = compile_policy(data)
    (_name, _index, equal), *_ = the_index(compiled).keys
    assert equal is not None  # the inline table, which answers only strings itself
    for number, value in enumerate(values):
        assert found_names(compiled, {"env": value}) == [f"eq {number}"]
    assert found_names(compiled, {"env": 7.0}) == ["eq 14"]
    assert found_names(compiled, {"env": 1}) == []
    assert found_names(compiled, {"env": "7"}) == []
    many = {"env": "env-3", "a": 1, "b": 2}  # more arguments than indexed keys
    assert found_names(compiled, many) == ["eq 3"]
    agree(data, *({"tool": "t", "arguments": {"env": value}} for value in [*values, 7.0, 1, "7"]))


def test_a_key_with_other_key_clauses_has_no_inline_table() -> None:
    rules = broad(10) + broad_rules("url {}", "$.env", "regex", "^h{}$", 10)
    compiled = compile_policy(policy(*rules))
    assert [equal for _name, _index, equal in the_index(compiled).keys] == [None]
    assert found_names(compiled, {"env": "h3"}) == ["url 3"]
    assert found_names(compiled, {"env": "env-3"}) == ["env 3"]


def test_a_key_with_eq_rules_and_a_literal_re2_cannot_read_asks_the_whole_path() -> None:
    rules = broad(14) + [
        {
            "name": "surrogate",
            "tool_name_glob": "*",
            "args_match": [{"path": "$.env", "op": "contains", "value": "\ud800"}],
            "verdict": "deny",
        }
    ]
    data = policy(*rules)
    compiled = compile_policy(data, strict=False)
    assert [equal for _name, _index, equal in the_index(compiled).keys] == [None]
    assert "surrogate" in found_names(compiled, {"env": "x\ud800"})
    agree(data, {"tool": "t", "arguments": {"env": "x\ud800"}})


def test_a_text_of_the_longest_remembered_length_is_remembered_and_one_longer_is_not() -> None:
    compiled = compile_policy(policy(*broad_rules("url {}", "$.url", "regex", "h{}\\.example")))
    url = the_index(compiled).by_key["url"]
    longest = "https://h3.example/" + "x" * (clause_index_module._MAX_REMEMBERED_TEXT - 19)
    assert len(longest) == clause_index_module._MAX_REMEMBERED_TEXT
    assert found_names(compiled, {"url": longest}) == ["url 3"]
    assert found_names(compiled, {"url": longest + "x"}) == ["url 3"]
    assert list(url.text_seen) == [longest]


def test_a_path_whose_set_could_not_be_built_makes_every_text_rule_a_candidate() -> None:
    compiled = compile_policy(policy(*broad_rules("url {}", "$.url", "regex", "h{}\\.example")))
    url = the_index(compiled).by_key["url"]
    url.text_match = None  # what build_set leaves when RE2 refused the set
    assert len(found_names(compiled, {"url": "https://h3.example/"})) == 20
    assert url.text_seen == {}


def test_a_text_with_a_lone_surrogate_is_scanned_as_the_regex_clauses_read_it() -> None:
    data = policy(*broad_rules("url {}", "$.url", "regex", "h{}\\.example/\\?"))
    compiled = compile_policy(data)
    assert found_names(compiled, {"url": "https://h3.example/\ud800"}) == ["url 3"]
    agree(data, {"tool": "t", "arguments": {"url": "https://h3.example/\ud800"}})


def test_an_answer_without_the_pattern_that_matches_every_text_is_a_failed_scan() -> None:
    compiled = compile_policy(policy(*broad_rules("url {}", "$.url", "regex", "h{}\\.example")))
    url = the_index(compiled).by_key["url"]
    url.text_match = lambda data: [5]
    assert len(found_names(compiled, {"url": "https://h4.example/"})) == 20
    url.text_match = lambda data: [0, 5]
    assert found_names(compiled, {"url": "https://h9.example/"}) == ["url 4"]
