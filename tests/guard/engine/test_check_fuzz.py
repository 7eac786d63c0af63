"""The check answers every call with a decision, never an exception nor an internal error."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guard.engine import Decision, ToolCheck

from .conftest import KEY, NOW, lab_catalogue

CHECK = ToolCheck(lab_catalogue(), key=KEY)
HISTORY = CHECK.new_history("fuzz")
CHECK.record(HISTORY, {"tool": "get_order", "arguments": {"order_id": "A1"}}, {"order_id": "A1"})
CHECK.record(
    HISTORY,
    {"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 5}},
    {"refund_id": "R1"},
)
TOOLS = sorted(CHECK.catalogue.tools) + ["delete_everything", ""]

anything = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(max_size=30),
        st.sampled_from(
            [
                "http://169.254.169.254/",
                "a@b.example",
                "::1",
                "2130706433",
                "https://x.example/a",
                "A1",
            ]
        ),
    ),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-1000, 1000),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(["A1", "R1", "R9", "", "http://10.0.0.1/", "ana@x.example", "fe80::1"]),
    ),
    lambda children: (
        st.lists(children, max_size=2)
        | st.dictionaries(st.sampled_from(["a", "b"]), children, max_size=2)
    ),
    max_leaves=4,
)
well_formed = st.fixed_dictionaries(
    {
        "tool": st.sampled_from(TOOLS[:-1]),
        "arguments": st.dictionaries(
            st.sampled_from(["order_id", "amount", "url", "refund_id", "text", "x"]),
            json_values,
            max_size=3,
        ),
    },
    optional={
        "agent": st.sampled_from(["assistant", "ghost"]),
        "origins": st.dictionaries(
            st.sampled_from(["order_id", "amount", "url"]),
            st.sampled_from(["typed", "tool", "model", "?"]),
        ),
        "labels": st.lists(st.sampled_from(["web", "email"]), max_size=2),
        "compensation_of": st.integers(min_value=0, max_value=3),
        "plan": st.fixed_dictionaries(
            {
                "id": st.sampled_from(["p1", "p2"]),
                "steps": st.lists(
                    st.fixed_dictionaries({"tool": st.sampled_from(TOOLS)}), max_size=2
                ),
            }
        ),
        "plan_token": st.text(max_size=10),
        "plan_step": st.integers(0, 2),
    },
)
calls = st.fixed_dictionaries(
    {"tool": st.one_of(st.sampled_from(TOOLS), anything)},
    optional={
        "agent": st.one_of(st.just("assistant"), anything),
        "arguments": st.one_of(
            st.dictionaries(
                st.sampled_from(["order_id", "amount", "url", "refund_id", "text", "x"]), anything
            ),
            anything,
        ),
        "origins": st.one_of(
            st.dictionaries(st.text(max_size=8), st.sampled_from(["typed", "tool", "model"])),
            anything,
        ),
        "labels": st.one_of(st.lists(st.sampled_from(["web", "email"])), anything),
        "compensation_of": st.one_of(st.integers(min_value=-1, max_value=3), anything),
        "plan": anything,
        "plan_token": anything,
        "plan_step": anything,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(well_formed, calls),
    st.one_of(st.none(), st.text(max_size=20)),
    st.one_of(st.none(), anything),
    st.sampled_from([None, "history", "json", "junk"]),
)
def test_any_call_gets_a_decision_and_never_an_internal_error(call, token, usage, session_form):
    session = {
        "history": HISTORY,
        "json": HISTORY.to_json(),
        "junk": {"entries": [1]},
        None: HISTORY,
    }[session_form]
    decision = CHECK.check(call, session=session, token=token, usage=usage, now=NOW)
    assert isinstance(decision, Decision)
    assert "check_error" not in decision.reasons, decision
