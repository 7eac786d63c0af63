"""Redaction of secrets before anything is written to an event, an audit row or a log."""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[redacted]"

# Keys whose values are secrets wherever they appear in a structure.
SECRET_KEY_PATTERN = re.compile(
    r"(pass(word|wd)?|secret|token|api[_-]?key|authori[sz]ation|credential|cookie|private[_-]?key)",
    re.IGNORECASE,
)
# Values that are secrets whatever key holds them.
SECRET_VALUE_PATTERNS = (
    re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE),
    re.compile(r"\bstw_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bsk-(ant-)?[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
)


def redact(value: Any, *, secret_keys: frozenset[str] = frozenset()) -> Any:
    """A copy of `value` with secret keys' values and secret-looking strings replaced by a marker."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = str(key)
            if name in secret_keys or SECRET_KEY_PATTERN.search(name):
                out[name] = REDACTED
            else:
                out[name] = redact(item, secret_keys=secret_keys)
        return out
    if isinstance(value, list | tuple):
        return [redact(item, secret_keys=secret_keys) for item in value]
    if isinstance(value, str):
        for pattern in SECRET_VALUE_PATTERNS:
            value = pattern.sub(REDACTED, value)
        return value
    return value
