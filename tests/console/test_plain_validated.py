"""`console.api.plain.plain_validated`: the call of `POST /v1/firewall/evaluate` validated without
building DRF's serializer, for a body whose every value is already what its field makes of it;
anything else goes to the serializer, so the answer is always the serializer's own."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from console.api.plain import _plan, plain_validated
from firewall.api.views import CallSerializer

NAMES = sorted(CallSerializer._declared_fields)

TEXT = st.one_of(
    st.sampled_from(
        [
            "",
            " ",
            "files.read",
            " files.read",
            "files.read\n",
            "ops",
            "tool_call",
            "egress",
            "read",
            "write",
            "a\x00b",
            "\x1ftool",
            "x" * 200,
            "x" * 201,
            "x" * 2000,
            "x" * 2001,
            "ação",
            "\ud800",
            "7",
            "-3",
        ]
    ),
    st.text(max_size=12),
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
VALUE = st.one_of(
    TEXT,
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    JSON,
)
BODY = st.dictionaries(st.sampled_from([*NAMES, "nope", "kinds"]), VALUE, max_size=len(NAMES) + 2)


def _serializer(data):
    serializer = CallSerializer(data=data)
    return (dict(serializer.validated_data) if serializer.is_valid() else None), serializer


@given(BODY)
@settings(max_examples=1500, deadline=None)
def test_a_plain_answer_is_the_serializers_own(body):
    plain = plain_validated(CallSerializer, body)
    expected, serializer = _serializer(body)
    if plain is not None:
        assert expected is not None, serializer.errors
        assert plain == expected
        assert list(plain) == list(expected)  # the same order of fields


@pytest.mark.parametrize(
    "body",
    [
        {"tool": "files.read", "arguments": {"path": "/srv/1"}, "agent": "ops"},
        {"tool": "http.get", "destination": "https://example.com/", "stage": "egress"},
        {
            "tool": "x",
            "skill": "",
            "session": "",
            "policy": 4,
            "token": "t",
            "user": "ana",
            "kind": "read",
        },
        {"tool": "x" * 200},
    ],
)
def test_a_well_formed_call_takes_the_shortcut(body):
    expected, _ = _serializer(body)
    assert plain_validated(CallSerializer, body) == expected


@pytest.mark.parametrize(
    "body",
    [
        {},  # tool is required
        {"tool": " x"},  # trimmed by the serializer
        {"tool": "x" * 201},
        {"tool": ""},
        {"tool": "ação"},  # not ASCII: the serializer reads it
        {"tool": "a\x00b"},
        {"tool": 7},  # coerced to text by the serializer
        {"tool": "x", "policy": True},
        {"tool": "x", "policy": "4"},
        {"tool": "x", "policy": 10**18},
        {"tool": "x", "stage": "nope"},
        {"tool": "x", "stage": ""},
        {"tool": "x", "arguments": None},
        {"tool": "x", "nope": 1},
        {"tool": None},
    ],
)
def test_anything_else_goes_to_the_serializer(body):
    assert plain_validated(CallSerializer, body) is None


def test_a_body_that_is_not_a_dict_goes_to_the_serializer():
    assert plain_validated(CallSerializer, [("tool", "x")]) is None


def test_a_serializer_with_a_field_the_shortcut_does_not_know_never_takes_it():
    class WithEmail(serializers.Serializer):
        tool = serializers.CharField()
        mail = serializers.EmailField(required=False)

    class WithValidator(serializers.Serializer):
        tool = serializers.CharField(validators=[lambda value: None])

    class WithValidate(serializers.Serializer):
        tool = serializers.CharField()

        def validate(self, attrs):  # noqa: ANN001, ANN201
            return attrs

    class WithFieldValidate(serializers.Serializer):
        tool = serializers.CharField()

        def validate_tool(self, value):  # noqa: ANN001, ANN201
            return value

    class WithUntrimmed(serializers.Serializer):
        tool = serializers.CharField(trim_whitespace=False)

    class WithNull(serializers.Serializer):
        tool = serializers.CharField(allow_null=True)

    class WithConstantDefault(serializers.Serializer):
        tool = serializers.CharField(required=False, default="x")

    class WithBounds(serializers.Serializer):
        n = serializers.IntegerField(max_value=3)

    class Contextual:
        requires_context = True

        def __call__(self, field):  # noqa: ANN001, ANN204
            return {}

    class WithContextDefault(serializers.Serializer):
        tool = serializers.CharField()
        arguments = serializers.JSONField(required=False, default=Contextual())

    for kind in (
        WithEmail,
        WithValidator,
        WithValidate,
        WithFieldValidate,
        WithUntrimmed,
        WithNull,
        WithConstantDefault,
        WithBounds,
        WithContextDefault,
    ):
        assert _plan(kind) is None, kind.__name__
        assert plain_validated(kind, {"tool": "x", "n": 1}) is None


def test_a_min_length_is_kept_and_a_blank_allowed_string_is_blank():
    class Bounded(serializers.Serializer):
        name = serializers.CharField(min_length=3, allow_blank=True)

    assert plain_validated(Bounded, {"name": "ab"}) is None
    assert plain_validated(Bounded, {"name": "abc"}) == {"name": "abc"}
    assert plain_validated(Bounded, {"name": ""}) == {"name": ""}
    assert dict(Bounded(data={"name": ""}).run_validation({"name": ""})) == {"name": ""}
