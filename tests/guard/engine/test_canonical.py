"""Canonical JSON: one byte form for signatures and tokens."""

from __future__ import annotations

import pytest

from guard.engine import NotJSON, canonical_json


def test_keys_are_sorted_without_spaces_and_text_stays_utf8():
    assert canonical_json({"b": 1, "a": [1, "é"]}) == '{"a":[1,"é"],"b":1}'


def test_an_integral_float_is_written_as_an_integer():
    assert canonical_json({"amount": 40.0}) == canonical_json({"amount": 40}) == '{"amount":40}'
    assert canonical_json(0.5) == "0.5"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {1: "x"}, {"a": {1, 2}}, b"x"])
def test_what_is_not_json_is_refused(value):
    with pytest.raises(NotJSON):
        canonical_json(value)
