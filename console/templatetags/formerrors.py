"""Form errors as a page shows them: in the organisation's language, and which fields they name."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from django import template

from console.errors_i18n import say as _say

register = template.Library()


@register.filter
def say(message: Any) -> str:
    """One message in the page's language (see console/errors_i18n.py)."""
    return _say(message)


@register.filter
def say_all(messages: Iterable[Any]) -> str:
    """A field's messages in the page's language, joined by a space."""
    if isinstance(messages, str):
        return _say(messages)
    return " ".join(_say(m) for m in messages)


@register.filter
def invalid_names(errors: Mapping[str, Any] | Iterable[str] | None) -> str:
    """The fields a form's errors name, as the JSON list `data-invalid` carries: the script marks
    each named control `aria-invalid="true"` and moves focus to the first (static/console)."""
    keys = list(errors.keys() if isinstance(errors, Mapping) else errors or [])
    return json.dumps([str(k) for k in keys if k not in ("non_field_errors", "__all__")])
