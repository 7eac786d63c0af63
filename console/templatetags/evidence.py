"""Evidence a person can read: recorded calls and details as formatted, highlighted JSON.

`{{ event.detail|json_block }}` renders a value as indented JSON with keys, strings, numbers and
literals in their own classes, and every redacted value marked as a secret (the `[redacted...]`
marker the redaction table writes), so nothing is shown as a Python repr.
"""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

#: Deeper than this, the rest of a value is shown as plain JSON text (still escaped).
MAX_DEPTH = 40
SECRET_MARK = "[redacted"


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        text = escape(json.dumps(value, ensure_ascii=False))
        if SECRET_MARK in value:
            return f'<span class="j-secret" title="a secret: never shown">{text}</span>'
        return f'<span class="j-str">{text}</span>'
    if isinstance(value, bool) or value is None:
        return f'<span class="j-lit">{json.dumps(value)}</span>'
    if isinstance(value, int | float):
        return f'<span class="j-num">{escape(json.dumps(value))}</span>'
    return f'<span class="j-str">{escape(json.dumps(str(value), ensure_ascii=False))}</span>'


def _render(value: Any, depth: int, out: list[str]) -> None:
    pad, inner = "  " * depth, "  " * (depth + 1)
    if depth >= MAX_DEPTH and isinstance(value, dict | list):
        out.append(escape(json.dumps(value, ensure_ascii=False, default=str)))
        return
    if isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        out.append("{\n")
        for i, (key, item) in enumerate(value.items()):
            out.append(
                f'{inner}<span class="j-key">{escape(json.dumps(str(key), ensure_ascii=False))}</span>: '
            )
            _render(item, depth + 1, out)
            out.append(",\n" if i < len(value) - 1 else "\n")
        out.append(pad + "}")
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[]")
            return
        out.append("[\n")
        for i, item in enumerate(value):
            out.append(inner)
            _render(item, depth + 1, out)
            out.append(",\n" if i < len(value) - 1 else "\n")
        out.append(pad + "]")
    else:
        out.append(_scalar(value))


@register.filter
def json_html(value: Any) -> SafeString:
    """The value as highlighted JSON (the inside of a `<pre>`)."""
    out: list[str] = []
    _render(value, 0, out)
    return mark_safe("".join(out))  # noqa: S308 - every piece above is escaped


@register.filter
def json_block(value: Any) -> SafeString:
    """The value as a `<pre class="json">` block of highlighted JSON."""
    return mark_safe(f'<pre class="json">{json_html(value)}</pre>')  # noqa: S308
