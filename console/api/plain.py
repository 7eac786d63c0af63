"""A serializer's answer for a plainly valid body, without building the serializer.

DRF builds a serializer's fields per instance (a deep copy of every declared field, about half a
millisecond for the call of `POST /v1/firewall/evaluate`, a fifth of what that decision costs
beyond an authenticated no-op in one process). A decision endpoint meets the same well-formed body
thousands of times a second, so `plain_validated` reads the serializer's declared fields once and
answers a body in which every value is already what its field would make of it: a string with
nothing to trim, within its length, ASCII with no NUL; a choice among the choices; an integer that
is an integer; any JSON for a JSON field. Anything else, an error included, is left to the
serializer itself (`None`), so the errors and every coercion stay DRF's own. A field of a kind not
listed here turns the shortcut off for its serializer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.core.validators import (
    MaxLengthValidator,
    MinLengthValidator,
    ProhibitNullCharactersValidator,
)
from rest_framework import fields, serializers
from rest_framework.fields import ProhibitSurrogateCharactersValidator

#: The validators a CharField adds itself, each of which the plain check of a string covers.
_STRING_VALIDATORS = (
    MaxLengthValidator,
    MinLengthValidator,
    ProhibitNullCharactersValidator,
    ProhibitSurrogateCharactersValidator,
)

#: One field's plain check: the value as validated, or `_NOT_PLAIN`.
_NOT_PLAIN = object()
#: Integers whose `str` every Python reads back (DRF's IntegerField goes through `str`).
_INT_BOUND = 10**18


def _string(field: fields.CharField) -> Callable[[Any], Any]:
    longest = field.max_length
    shortest = field.min_length or 0
    blank = field.allow_blank

    def plain(value: Any) -> Any:
        if type(value) is not str or not value.isascii() or "\x00" in value:
            return _NOT_PLAIN
        if value == "":
            return value if blank else _NOT_PLAIN  # DRF answers a blank before any length
        if value != value.strip() or len(value) < shortest:
            return _NOT_PLAIN
        if longest is not None and len(value) > longest:
            return _NOT_PLAIN
        return value

    return plain


def _choice(field: fields.ChoiceField) -> Callable[[Any], Any]:
    # A choice's stored value, from its text; only text the choices hold exactly.
    allowed = {key: value for key, value in field.choice_strings_to_values.items() if key != ""}

    def plain(value: Any) -> Any:
        if type(value) is not str or value not in allowed:
            return _NOT_PLAIN
        return allowed[value]

    return plain


def _integer(field: fields.IntegerField) -> Callable[[Any], Any]:
    def plain(value: Any) -> Any:
        if type(value) is not int or not -_INT_BOUND < value < _INT_BOUND:
            return _NOT_PLAIN
        return value

    return plain


def _json(field: fields.JSONField) -> Callable[[Any], Any]:
    # The body came from the JSON parser: any value but null is what the field returns.
    def plain(value: Any) -> Any:
        return _NOT_PLAIN if value is None else value

    return plain


def _check_of(field: fields.Field) -> Callable[[Any], Any] | None:
    if field.read_only or field.allow_null or field.source is not None:
        return None
    kind, validators = type(field), list(field.validators)
    if kind is fields.CharField and field.trim_whitespace:
        if all(isinstance(v, _STRING_VALIDATORS) for v in validators):
            return _string(field)
        return None
    if validators:  # given to the field: only the serializer runs them
        return None
    if kind is fields.ChoiceField and not field.allow_blank:
        return _choice(field)
    if kind is fields.IntegerField and field.max_value is None and field.min_value is None:
        return _integer(field)
    if kind is fields.JSONField and not field.binary:
        return _json(field)
    return None


@functools.cache
def _plan(serializer_class: type[serializers.Serializer]) -> tuple | None:
    """(name, check, required, default) per declared field, in order; None where any field is of
    a kind the shortcut does not know, or the serializer validates beyond its fields."""
    if serializer_class.validate is not serializers.Serializer.validate or hasattr(
        serializer_class, "Meta"
    ):
        return None
    plan = []
    for name, field in serializer_class._declared_fields.items():
        check = _check_of(field)
        if check is None or hasattr(serializer_class, f"validate_{name}"):
            return None
        default = field.default
        if default is not fields.empty and (
            not callable(default) or getattr(default, "requires_context", False)
        ):
            return None
        plan.append((name, check, field.required, default))
    return tuple(plan)


def plain_validated(
    serializer_class: type[serializers.Serializer], data: dict[str, Any]
) -> dict[str, Any] | None:
    """`dict(serializer_class(data=data).validated_data)` when `data` is plainly valid (above),
    else None: run the serializer for its errors and coercions.

    For a serializer whose own `to_internal_value`, if any, does no more than refuse names that
    are not fields (a body with such a name is never plain here)."""
    plan = _plan(serializer_class)
    if plan is None or type(data) is not dict:
        return None
    out: dict[str, Any] = {}
    seen = 0
    for name, check, required, default in plan:
        if name not in data:
            if required:
                return None
            if default is not fields.empty:
                out[name] = default()
            continue
        seen += 1
        value = check(data[name])
        if value is _NOT_PLAIN:
            return None
        out[name] = value
    if seen != len(data):
        return None  # a name that is not a field: the serializer's own answer says which
    return out
