"""Confirmation tokens: they cover exactly one call, at one point of one session, for a while."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from guard.engine import canonical_json
from guard.engine.keys import Keys
from guard.engine.tokens import CallPoint, check_call_token, issue_call_token

from .conftest import KEY

TOKEN_KEY = Keys.from_secret(KEY).token
NOW = 1_800_000_000.0

values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**12), max_value=10**12),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
    ),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)
arguments = st.dictionaries(st.text(min_size=1, max_size=6), values, max_size=4)


def point(args, **changes) -> CallPoint:
    fields = {
        "agent": "billing",
        "tool": "refund_card",
        "arguments": args,
        "session": "s-1",
        "at": 3,
        "head": "ab" * 32,
    }
    return CallPoint(**{**fields, **changes})


@settings(max_examples=200, deadline=None)
@given(arguments, arguments)
def test_a_token_never_covers_a_call_that_differs_in_any_argument(approved, presented):
    token = issue_call_token(point(approved), key=TOKEN_KEY, now=NOW, ttl=60)
    answer = check_call_token(token, point(presented), key=TOKEN_KEY, now=NOW)
    if canonical_json(approved) == canonical_json(presented):
        assert answer is None
    else:
        assert answer == ("token_mismatch", ["arguments"])


@settings(max_examples=100, deadline=None)
@given(arguments, st.sampled_from(["agent", "tool", "session", "at", "head"]))
def test_a_token_never_covers_another_agent_tool_session_or_point(args, field):
    token = issue_call_token(point(args), key=TOKEN_KEY, now=NOW, ttl=60)
    other = {"agent": "desk", "tool": "charge_card", "session": "s-2", "at": 4, "head": "cd" * 32}
    answer = check_call_token(token, point(args, **{field: other[field]}), key=TOKEN_KEY, now=NOW)
    expected = "history" if field in ("at", "head") else field
    assert answer == ("token_mismatch", [expected])


def test_a_token_lives_for_its_ttl():
    token = issue_call_token(point({"a": 1}), key=TOKEN_KEY, now=NOW, ttl=60)
    assert check_call_token(token, point({"a": 1}), key=TOKEN_KEY, now=NOW + 59) is None
    assert check_call_token(token, point({"a": 1}), key=TOKEN_KEY, now=NOW + 60) == (
        "token_expired",
        [],
    )


def test_a_token_signed_with_the_history_key_is_not_a_token():
    keys = Keys.from_secret(KEY)
    token = issue_call_token(point({}), key=keys.history, now=NOW, ttl=60)
    assert check_call_token(token, point({}), key=keys.token, now=NOW) == ("token_invalid", [])


def test_an_integral_float_and_its_integer_are_the_same_argument():
    token = issue_call_token(point({"amount": 40.0}), key=TOKEN_KEY, now=NOW, ttl=60)
    assert check_call_token(token, point({"amount": 40}), key=TOKEN_KEY, now=NOW) is None
