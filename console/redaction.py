"""Redaction of secrets before anything is written to an event, an audit row, a page or a log.

The shapes of credentials come from the one table (`firewall/engine/credentials.py`) that the
sanitize presets and the proof's code checks read too; this module only walks structures.
"""

from __future__ import annotations

from typing import Any

from firewall.engine.credentials import redact_text, secret_name

REDACTED = "[redacted]"


def redact(value: Any, *, secret_keys: frozenset[str] = frozenset()) -> Any:
    """A copy of `value` with the values of secret keys replaced by a marker, and every
    credential inside a string replaced by `[redacted:<shape>]`."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = str(key)
            if name in secret_keys or secret_name(name):
                out[name] = REDACTED
            else:
                out[name] = redact(item, secret_keys=secret_keys)
        return out
    if isinstance(value, list | tuple):
        return [redact(item, secret_keys=secret_keys) for item in value]
    if isinstance(value, str):
        return redact_text(value)[0]
    return value


def redact_string(text: str) -> str:
    """`text` with every credential in it replaced (for log lines and other free text)."""
    return redact_text(text)[0]
