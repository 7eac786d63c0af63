"""`redact_jsonable`, the one walk a decision-log record's detail goes through: the same as a JSON
round trip (`json.dumps(value, default=str)` then `json.loads`) followed by `redact_value`, for
every value a call or a decision can hold: JSON's types, tuples, keys that are not strings, enums,
`str` subclasses, and objects that only `str()` can write, a credential inside any of them."""

from __future__ import annotations

import enum
import json
import math
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from firewall.engine.credentials import redact_jsonable, redact_value
from tests.credential_samples import SAMPLES


class _Level(enum.IntEnum):
    LOW = 1
    HIGH = 7


class _Text(str):
    def __str__(self) -> str:  # json writes the characters, not what __str__ says
        return "not what json writes"


class _Thing:
    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return f"thing {self.text}"


def _round_trip(value):
    return redact_value(json.loads(json.dumps(value, default=str)))


def _same(left, right) -> bool:
    # NaN is not equal to itself: compare what each writes.
    return json.dumps(left) == json.dumps(right)


def _exactly_json(value) -> bool:
    if value is None or type(value) in (bool, int, float, str):
        return True
    if type(value) is list:
        return all(_exactly_json(item) for item in value)
    if type(value) is dict:
        return all(type(k) is str and _exactly_json(v) for k, v in value.items())
    return False


_texts = st.one_of(
    st.text(max_size=30),
    st.sampled_from(sorted(SAMPLES.values())),
    st.sampled_from(["typed", "turn 0", "refund_card", "password", "api_key", "token"]),
    st.builds(
        lambda a, b: f"{a} {b}", st.text(max_size=8), st.sampled_from(sorted(SAMPLES.values()))
    ),
)
_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    _texts,
    st.sampled_from(list(_Level)),
    _texts.map(_Text),
    _texts.map(_Thing),
    st.decimals(allow_nan=False, places=2),
    st.frozensets(st.integers(0, 3), max_size=2),
)
_keys = st.one_of(
    _texts,
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    _texts.map(_Text),
)
_values = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
    ),
    max_leaves=25,
)


@settings(max_examples=1500, deadline=None)
@given(_values)
def test_one_walk_is_the_round_trip_then_the_redaction(value):
    walked = redact_jsonable(value)
    assert _same(walked, _round_trip(value))
    assert _exactly_json(walked)


def test_what_only_str_can_write_is_redacted_too():
    secret = SAMPLES["github_token"]
    assert redact_jsonable({"note": _Thing(secret)}) == {"note": "thing [redacted:github_token]"}
    assert redact_jsonable([Decimal("40.50"), frozenset({2})]) == ["40.50", "frozenset({2})"]


def test_keys_are_written_as_json_writes_them_and_secret_names_still_redact():
    value = {1: "a", 2.5: "b", False: "c", None: "d", "password": "hunter22", _Text("k"): "e"}
    assert redact_jsonable(value) == {
        "1": "a",
        "2.5": "b",
        "false": "c",
        "null": "d",
        "password": "[redacted]",
        "k": "e",
    }
    assert redact_jsonable({math.inf: 1}) == {"Infinity": 1}


def test_containers_become_lists_and_dicts_of_json_types():
    walked = redact_jsonable((1, _Level.HIGH, (2.0, "x"), _Text("Bearer Vq9Lm2Xc8Rt4Zp7Kd3")))
    assert walked == [1, 7, [2.0, "x"], "Bearer [redacted:bearer_token]"]
    assert type(walked[1]) is int and type(walked[3]) is str
