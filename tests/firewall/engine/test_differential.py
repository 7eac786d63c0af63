"""Two engines, one answer: the compiled index agrees with the reference scan on random input."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firewall.engine import CompiledPolicy, compile_policy, reference_evaluate

from .conftest import FakeResolver

SEGMENTS = ["a", "b", "shell", "x"]

_names = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4).map(".".join)
_long_names = st.lists(st.sampled_from(SEGMENTS), min_size=10, max_size=18).map(".".join)
_globs = st.one_of(
    st.sampled_from(["", "*", "*.*", "a.*.b", "**", "shell"]),
    _names,
    _names.map(lambda n: n + ".*"),
    _names.map(lambda n: "*." + n),
    _names.map(lambda n: "*." + n + ".*"),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-2, max_value=3),
    st.sampled_from([1.0, 2.5]),
    st.sampled_from(["", "a", "ab", "rm -rf /", "10.0.0.1", "0xA9FEA9FE", "http://10.1.2.3/x"]),
)
_json = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "l", "url"]), children, max_size=3)
    ),
    max_leaves=8,
)
_values = {
    "eq": _json,
    "neq": _json,
    "in": st.lists(_scalars, max_size=3),
    "not_in": st.lists(_scalars, max_size=3),
    "contains": _scalars,
    "starts_with": st.sampled_from(["", "a", "rm"]),
    "ends_with": st.sampled_from(["", "b", "/"]),
    "regex": st.sampled_from(["a", "^a", r"rm\s+-rf", "(b|a)b", "(broken", "a{2}"]),
    "cidr": st.sampled_from(["10.0.0.0/8", "169.254.169.254", "10.0.0.1/8", "::/0"]),
    "exists": st.booleans(),
    "gt": st.sampled_from([0, 1.5, "x"]),
    "gte": st.sampled_from([0, 2]),
    "lt": st.sampled_from([1, 3]),
    "lte": st.sampled_from([0, True]),
}


@st.composite
def _clause(draw: Any) -> dict[str, Any]:
    op = draw(st.sampled_from(sorted(_values)))
    clause = {"path": draw(st.sampled_from(["$", "$.a", "$.b", "$.a.b", "$.l[0]", "$.l[1].a"]))}
    clause["op"] = op
    if op != "exists" or draw(st.booleans()):
        clause["value"] = draw(_values[op])
    return clause


@st.composite
def _rule(draw: Any, index: int) -> dict[str, Any]:
    verdict = draw(
        st.sampled_from(["allow", "audit", "deny", "require_approval", "sanitize", "cap_cost"])
    )
    rule: dict[str, Any] = {
        "name": f"r{index}",
        "priority": draw(st.integers(min_value=0, max_value=3)),
        "verdict": verdict,
        "stage": draw(st.sampled_from(["", "", "inbound", "tool_call", "egress"])),
        "tool_name_glob": draw(_globs),
    }
    if draw(st.booleans()):
        rule["skill_glob"] = draw(_globs)
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        rule["id"] = draw(
            st.one_of(st.integers(min_value=0, max_value=5), st.sampled_from(["a", "b"]))
        )
    if draw(st.integers(min_value=0, max_value=4)) == 0:
        rule["mode"] = "shadow"
    if draw(st.integers(min_value=0, max_value=6)) == 0:
        rule["enabled"] = False
    if draw(st.integers(min_value=0, max_value=8)) == 0:
        rule["sequence"] = {"steps": [{"tool_glob": "*"}]}
    rule["args_match"] = draw(st.lists(_clause(), max_size=2))
    if verdict == "sanitize" and draw(st.integers(min_value=0, max_value=5)):
        rule["sanitize"] = draw(
            st.sampled_from(
                [{"presets": ["email"]}, {"patterns": ["a+"]}, {"presets": ["nope"]}, {}]
            )
        )
    if verdict == "cap_cost" and draw(st.integers(min_value=0, max_value=5)):
        rule["cap_cost_cents"] = draw(st.sampled_from([100, 0, "5"]))
    if draw(st.integers(min_value=0, max_value=2)) == 0:
        lists = st.lists(
            st.sampled_from(
                ["10.0.0.0/8", "169.254.169.254", "10.1.2.3", "*.example", "h.example", "bad!"]
            ),
            max_size=3,
        )
        rule["egress"] = {"allow": draw(lists), "deny": draw(lists)}
    return rule


@st.composite
def _policy(draw: Any) -> dict[str, Any]:
    count = draw(st.integers(min_value=0, max_value=12))
    return {
        "name": "random",
        "default_verdict": draw(st.sampled_from(["allow", "deny", "audit", "sanitize"])),
        "rules": [draw(_rule(index)) for index in range(count)],
    }


@st.composite
def _call(draw: Any, names: Any = _names) -> dict[str, Any]:
    call: dict[str, Any] = {"tool": draw(names)}
    if draw(st.booleans()):
        call["skill"] = draw(_names)
    if draw(st.booleans()):
        call["stage"] = draw(st.sampled_from(["inbound", "tool_call", "egress"]))
    if draw(st.booleans()):
        call["arguments"] = draw(_json)
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        call["destination"] = draw(
            st.sampled_from(["http://10.0.0.5/", "https://h.example/", "http://[x", "a.example"])
        )
    return call


# Broad rules: the tool glob `*` (or `""`) and clauses the clause index files, over values that
# calls also carry, so that keys collide, literals overlap and addresses are spelled many ways.
_BROAD_PATHS = ["$.url", "$.env", "$.ip", "$.a.b", "$.l[0]", "$", "$.l"]
_texts = st.sampled_from(
    [
        "",
        "prod",
        "PROD admin",
        "https://10.0.0.1/x",
        "10.1.2.3",
        "0x0A010203",
        "::ffff:10.1.2.3",
        "fe80::1%eth0",
        "192.168.1.1",
        "é",
        "aé/b",
        "a\udcffb",
        "a?b",
        "x\ny",
    ]
)
_broad_scalars = st.one_of(
    st.none(), st.booleans(), st.sampled_from([0, 1, 1.0, -0.0, 2.5, 10**20]), _texts
)
_broad_json = st.recursive(
    _broad_scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "url"]), children, max_size=2)
    ),
    max_leaves=5,
)
_literals = st.one_of(
    st.sampled_from(["", "a", "b", "prod", "10.", "é", "/x", "\udcff", "?"]), _texts
)
_broad_values = {
    "eq": _broad_json,
    "in": st.lists(_broad_json, max_size=4),
    "contains": st.one_of(_literals, _broad_json),
    "starts_with": _literals,
    "ends_with": _literals,
    "regex": st.sampled_from(
        [
            "prod",
            "(?i)admin",
            r"\bprod\b",
            r"^https?://10\.",
            "b$",
            "é+",
            "(broken",
            ".*",
            "",
            "[[:digit:]]{2,}",
            r"a\?b",
            "^$",
            "(?s)x.y",
        ]
    ),
    "cidr": st.sampled_from(
        ["10.0.0.0/8", "10.1.0.0/16", "10.1.2.3", "::/0", "fe80::/10", "::ffff:10.0.0.0/104", "bad"]
    ),
    "neq": _broad_json,
    "exists": st.booleans(),
    "gte": st.sampled_from([0, 2]),
}


@st.composite
def _broad_clause(draw: Any) -> dict[str, Any]:
    op = draw(st.sampled_from(sorted(_broad_values)))
    clause = {"path": draw(st.sampled_from(_BROAD_PATHS)), "op": op}
    if op != "exists" or draw(st.booleans()):
        clause["value"] = draw(_broad_values[op])
    return clause


@st.composite
def _broad_rule(draw: Any, index: int) -> dict[str, Any]:
    rule = draw(_rule(index))
    if draw(st.integers(min_value=0, max_value=3)):
        rule["tool_name_glob"] = draw(st.sampled_from(["*", "", "a.*", "*.b"]))
    rule.pop("sequence", None)
    rule["args_match"] = draw(st.lists(_broad_clause(), min_size=1, max_size=3))
    return rule


@st.composite
def _broad_policy(draw: Any) -> dict[str, Any]:
    count = draw(st.integers(min_value=1, max_value=16))
    rules = [
        draw(_broad_rule(index) if draw(st.integers(0, 4)) else _rule(index))
        for index in range(count)
    ]
    return {
        "name": "broad",
        "default_verdict": draw(st.sampled_from(["allow", "deny"])),
        "rules": rules,
    }


@st.composite
def _broad_call(draw: Any) -> dict[str, Any]:
    call = draw(_call())
    if draw(st.integers(min_value=0, max_value=5)):
        arguments = draw(
            st.dictionaries(
                st.sampled_from(["url", "env", "ip", "a", "l"]), _broad_json, max_size=4
            )
        )
        if draw(st.booleans()):
            arguments["a"] = {"b": draw(_broad_json)}
        if draw(st.booleans()):
            arguments["l"] = draw(st.lists(_broad_json, min_size=1, max_size=3))
        call["arguments"] = arguments
    return call


RESOLVER_TABLE = {"h.example": ["10.0.0.9"], "a.example": ["93.184.216.34"]}


def _agree(data: dict[str, Any], calls: list[dict[str, Any]]) -> None:
    compiled = compile_policy(data, strict=False, resolver=FakeResolver(RESOLVER_TABLE))
    # every bucket with a fileable rule split into a clause index, however small
    indexed = CompiledPolicy(data, resolver=FakeResolver(RESOLVER_TABLE), min_indexed=1)
    for call in calls:
        expected = reference_evaluate(data, call, resolver=FakeResolver(RESOLVER_TABLE)).to_dict()
        assert compiled.evaluate(call).to_dict() == expected, call
        assert indexed.evaluate(call).to_dict() == expected, call


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_policy(), calls=st.lists(_call(), min_size=1, max_size=6))
def test_compiled_and_reference_engines_agree(data: dict[str, Any], calls: list[Any]) -> None:
    _agree(data, calls)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_broad_policy(), calls=st.lists(_broad_call(), min_size=1, max_size=8))
def test_engines_agree_on_broad_rules_through_the_clause_index(
    data: dict[str, Any], calls: list[Any]
) -> None:
    _agree(data, calls)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_policy(), calls=st.lists(_call(_long_names), min_size=1, max_size=4))
def test_engines_agree_on_tool_names_with_many_dots(data: dict[str, Any], calls: list[Any]) -> None:
    _agree(data, calls)


@settings(max_examples=80, deadline=None)
@given(
    data=_policy(),
    call=st.one_of(
        _json,
        st.dictionaries(
            st.sampled_from(["tool", "skill", "stage", "arguments", "destination"]),
            _json,
            max_size=5,
        ),
    ),
)
def test_no_call_makes_either_engine_raise(data: dict[str, Any], call: Any) -> None:
    compiled = compile_policy(data, strict=False, resolver=FakeResolver())
    assert (
        compiled.evaluate(call).to_dict()
        == reference_evaluate(data, call, resolver=FakeResolver()).to_dict()
    )
